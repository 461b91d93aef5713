"""JSON.parse reads numbers correctly rounded: guest patch 0007 reads short ones with one exact
multiply or divide and leaves the rest to strtod; on either path every case agrees bit for bit
with Python's ``float`` (correctly rounded), zeros keep their sign."""

from __future__ import annotations

import json
import math
import struct

from quickjail.bridge import run_code_sync

CASES = [
    "0",
    "-0",
    "0.1",
    "12.34",
    "-5e-7",
    "1E+2",
    "-12.5e-3",
    "1.5E+10",
    "0.000001",
    "123456789012345",
    "1234567890123456",
    "999999999999999e-22",
    "1e22",
    "1e-22",
    "9.999999999999999e22",
    "0.1e-21",
    "100000000000000e8",
    "1e23",
    "0.30000000000000004",
    "9007199254740993",
    "123456789012345678901234567890",
    "2.2250738585072011e-308",
    "2.2250738585072014e-308",
    "4.9e-324",
    "2e-324",
    "3e-324",
    "1.7976931348623157e308",
    "1.7976931348623158e308",
    "1.7976931348623159e308",
    "1e400",
    "-1e-400",
    "1.00000000000000011102230246251565404236316680908203125",
    "1.00000000000000011102230246251565404236316680908203126",
    "0." + "0" * 300 + "1",
    "1" + "0" * 400,
]


def _bits(x: float) -> str:
    return struct.pack("<d", x).hex()


def test_json_parse_numbers_are_correctly_rounded_like_python_float() -> None:
    code = f"""
    const texts = {json.dumps(CASES)};
    const bits = (x) => Array.from(new Uint8Array(new Float64Array([x]).buffer),
                                   (b) => b.toString(16).padStart(2, "0")).join("");
    export default texts.map((t) => bits(JSON.parse(t)));
    """
    result = run_code_sync(code)
    assert result.status == "success", result.error
    for text, parsed in zip(CASES, result.result, strict=True):
        expected = float(text)
        assert parsed == _bits(expected), text
        if expected == 0:
            assert math.copysign(1, expected) == (-1 if text.startswith("-") else 1)
