"""Strings built by filling one code unit (patch 0009: ``String.prototype.repeat`` of a
one-unit string, ``padStart``/``padEnd`` with a one-unit pad) hold exactly the units asked for,
8-bit or wide, whatever the buffer had to become."""

from __future__ import annotations

import pytest

import quickjail

CASES = [
    ('"x".repeat(0)', ""),
    ('"x".repeat(1)', "x"),
    ('"x".repeat(7)', "x" * 7),
    ('"\\u00e9".repeat(5)', "\u00e9" * 5),  # 8-bit, not ASCII
    ('"\\u20ac".repeat(1000)', "\u20ac" * 1000),  # a wide string
    ('"ab".repeat(3)', "ab" * 3),  # not a fill: concatenations
    ('"\\u{1F600}".repeat(3)', "\U0001f600" * 3),  # a surrogate pair is two units
    ('"abc".padStart(8, "-")', "-----abc"),
    ('"abc".padEnd(8)', "abc     "),
    ('"abc".padStart(6, "\\u20ac")', "\u20ac" * 3 + "abc"),  # the 8-bit buffer is widened
    ('"\\u20ac".padEnd(4, "x")', "\u20acxxx"),  # an 8-bit unit into a wide buffer
    ('"a" + "b".repeat(3) + "\\u20ac".repeat(2) + "c".repeat(2)', "abbb\u20ac\u20acc" + "c"),
]


@pytest.mark.parametrize(("expr", "want"), CASES, ids=[c[0] for c in CASES])
def test_a_filled_string_holds_the_units_asked_for(expr: str, want: str) -> None:
    r = quickjail.run_code_sync(f"export default {expr}", language="javascript")
    assert r.status == "success" and r.result == want, r.error


def test_a_mebibyte_filled_in_one_pass_is_whole() -> None:
    r = quickjail.run_code_sync(
        'const s = "x".repeat(2 ** 20) + "\\u20ac".repeat(2 ** 10);\n'
        "let bad = 0;\n"
        "for (let i = 0; i < 2 ** 20; i += 4099) if (s.charCodeAt(i) !== 0x78) bad++;\n"
        "export default [s.length, bad, s.endsWith('\\u20ac'.repeat(2 ** 10))]",
        language="javascript",
    )
    assert r.status == "success" and r.result == [2**20 + 2**10, 0, True], r.error
