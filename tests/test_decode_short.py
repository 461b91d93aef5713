"""A short value message (a host call's arguments) decodes on a quick path that must give
exactly what the full path gives: the same value, the same refusal, the same budget charge.

The full path is forced by handing ``decode`` a memoryview of the same bytes; the messages are
what an honest or a compromised guest may write.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest

from quickjail.bridge import run_code_sync, synchronous
from quickjail.sandbox import TransferError
from quickjail.sandbox._values import MAX_DEPTH, DecodeBudget, decode


def raw(json_bytes: bytes, *, flags: int = 0, nblobs: int = 0, jlen: int | None = None) -> bytes:
    """A message with any head a guest may write (no blob bodies)."""
    n = len(json_bytes) if jlen is None else jlen
    return struct.pack("<BI", flags, n) + json_bytes + struct.pack("<I", nblobs)


SHORT = [
    b"[1,2]",
    b'[1,"two",null,true,false,{"a":[]}]',
    b"[1.5e300,-0,0.1]",
    b"[NaN,Infinity,-Infinity]",  # json.loads's constants: the full path takes them too
    b"[9007199254740993]",
    b'["\\u00e9\\ud83d\\ude00"]',
    '["é😀"]'.encode(),
    b'["\\ud800"]',  # an escaped lone surrogate
    b'["\xed\xa0\x80"]',  # a raw one: not UTF-8
    '["\ufffd"]'.encode(),  # the replacement character sends the full path its own way
    b"\xef\xbb\xbf[1]",  # a byte order mark
    b"\x00[\x001\x00]",  # what json.loads would take for UTF-16
    b" [1]",
    b"[1] ",
    b"[1]x",
    b"[1,]",
    b"",
    b"[",
    b'["\x01"]',  # a raw control character
    b"\xff\xfe",
    b"[" * 40 + b"]" * 40,
    b"[" * 129 + b"]" * 129,
    b'[{"a":' * 70 + b"1" + b"}]" * 70,
    b"[" + b'"' + b"x" * 3000 + b'"]',
    b"{}",
    b'{"a":1,"a":2}',
    b"1",
    b'"s"',
]


def outcome(buf: bytes | memoryview, budget: DecodeBudget) -> tuple[str, Any]:
    try:
        return "value", decode(buf, budget=budget)
    except TransferError as exc:
        return "refused", str(exc)


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and str(a) == str(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("text", SHORT)
@pytest.mark.parametrize("head", ["plain", "tagged", "blobs", "long_jlen", "short_jlen"])
def test_short_message_decodes_as_the_full_path_does(text: bytes, head: str) -> None:
    msg = {
        "plain": lambda: raw(text),
        "tagged": lambda: raw(text, flags=1),
        "blobs": lambda: raw(text, nblobs=1),
        "long_jlen": lambda: raw(text, jlen=len(text) + 1),
        "short_jlen": lambda: raw(text, jlen=max(len(text) - 1, 0)),
    }[head]()
    quick_budget, full_budget = DecodeBudget(10**9), DecodeBudget(10**9)
    quick = outcome(msg, quick_budget)
    full = outcome(memoryview(msg), full_budget)
    assert quick[0] == full[0]
    assert same(quick[1], full[1])
    assert quick_budget.used == full_budget.used


def test_short_message_over_the_budget_is_refused_before_decoding() -> None:
    msg = raw(b"[1,2,3]")
    for buf in (msg, memoryview(msg)):
        with pytest.raises(TransferError, match="decode budget"):
            decode(buf, budget=DecodeBudget(10))


@pytest.mark.parametrize("opener", [b"[", b'{"k":'])
def test_a_short_message_nested_past_max_depth_is_refused(opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    deep = raw(opener * (MAX_DEPTH + 1) + b"1" + closer * (MAX_DEPTH + 1))
    assert len(deep) < 4096
    with pytest.raises(TransferError, match="nested deeper"):
        decode(deep)
    fine = raw(opener * MAX_DEPTH + b"1" + closer * MAX_DEPTH)
    assert decode(fine) == decode(memoryview(fine))


def test_host_call_arguments_arrive_exactly() -> None:
    seen: list[Any] = []

    def take(*args: Any) -> int:
        seen.append(list(args))
        return len(args)

    src = """
    export default [take(1, 'é😀', null, [true, {a: 2.5}]), take(-0), take(2 ** 53 + 2)];
    """
    result = run_code_sync(src, globals={"take": synchronous(take)})
    assert result.status == "success", result.error
    assert result.result == [4, 1, 1]
    assert same(seen[0], [1, "é😀", None, [True, {"a": 2.5}]])
    assert str(seen[1][0]) == "-0.0"
    assert seen[2] == [2**53 + 2]
