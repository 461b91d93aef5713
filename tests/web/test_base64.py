"""atob and btoa follow HTML's forgiving-base64 rules, with InvalidCharacterError DOMExceptions."""

from __future__ import annotations

import json

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


def call(fn: str, arg: str) -> object:
    return js(
        f"try {{ [...{fn}({arg})].map((c) => c.charCodeAt(0)) }}"
        " catch (e) { [e.name, e instanceof DOMException, e.code] }"
    )


BAD = ["InvalidCharacterError", True, 5]


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("", b""),
        ("QQ==", b"A"),
        ("QQ", b"A"),  # padding is optional
        ("QUI=", b"AB"),
        ("QUI", b"AB"),
        ("QUJD", b"ABC"),
        (" Q Q = = ", b"A"),  # ASCII whitespace anywhere is removed
        ("\tQ\nU\fJ\rD ", b"ABC"),
        ("QR==", b"A"),  # the bits past the last byte are dropped
        ("/+//", b"\xff\xef\xff"),
        ("AAAA", b"\x00\x00\x00"),
        ("Q", BAD),  # length % 4 == 1
        ("QUJDR", BAD),
        ("QQ=", BAD),  # padding that does not make a multiple of four
        ("QQ===", BAD),
        ("Q===", BAD),
        ("QUJD=", BAD),
        ("QQ=A", BAD),  # data after the padding
        ("=QQ", BAD),
        ("QQ\u000b==", BAD),  # vertical tab is not ASCII whitespace
        ("QQ-_", BAD),  # the URL alphabet is not base64's
        ("QQ\u00e9=", BAD),
        ("QQ\u0100=", BAD),
    ],
)
def test_atob_forgiving_base64_decode(text: str, decoded: bytes | list[object]) -> None:
    expected = list(decoded) if isinstance(decoded, bytes) else decoded
    assert call("atob", json.dumps(text)) == expected


@pytest.mark.parametrize(
    ("arg", "encoded"),
    [
        ("''", ""),
        ("'A'", "QQ=="),
        ("'AB'", "QUI="),
        ("'ABC'", "QUJD"),
        ("'\\u00ff\\u00fe'", "//4="),
        ("'\\0'", "AA=="),
        ("null", "bnVsbA=="),  # DOMString conversion
        ("undefined", "dW5kZWZpbmVk"),
        ("12", "MTI="),
    ],
)
def test_btoa_encodes_latin1_code_units(arg: str, encoded: str) -> None:
    assert js(f"btoa({arg})") == encoded


@pytest.mark.parametrize("arg", ["'\\u0100'", "'\\u20ac'", "'\\ud83d\\ude00'", "'a\\u0100b'"])
def test_btoa_of_a_code_unit_above_ff_is_invalidcharactererror(arg: str) -> None:
    assert call("btoa", arg) == BAD


def test_round_trip_of_every_byte() -> None:
    got = js(
        "const s = Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join('');"
        "[atob(btoa(s)) === s, btoa(s).length]"
    )
    assert got == [True, 344]


@pytest.mark.parametrize("fn", ["atob", "btoa"])
def test_a_missing_argument_is_a_typeerror(fn: str) -> None:
    assert js(f"try {{ {fn}() }} catch (e) {{ [e.name, {fn}.length] }}") == ["TypeError", 1]


def test_domexception_is_a_global_with_names_and_codes() -> None:
    got = js(
        "const e = new DOMException('m', 'DataCloneError');"
        "[e.name, e.message, e.code, e instanceof Error, DOMException.INVALID_CHARACTER_ERR,"
        " Object.getOwnPropertyDescriptor(globalThis, 'DOMException').enumerable]"
    )
    assert got == ["DataCloneError", "m", 25, True, 5, False]
