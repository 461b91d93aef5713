"""The host refuses a message nesting containers deeper than ``MAX_DEPTH`` (only a
compromised guest sends one) with a check at C speed on the JSON text, which must agree with
a walk of the decoded value, stay linear on hostile shapes, and never let a deep value
through. Messages are played as a (possibly compromised) guest writes them.
"""

from __future__ import annotations

import json
import random
import struct
from typing import Any

import pytest

from quickjail.sandbox import TransferError
from quickjail.sandbox._values import (
    MAX_DEPTH,
    _deeper_than,
    _text_deeper_than,
    decode,
)


def message(text: bytes) -> bytes:
    return struct.pack("<BI", 0, len(text)) + text + struct.pack("<I", 0)


LEAVES: list[Any] = [1, 2.5, None, True, "plain", "a[b", "}{", '"[', "\\]", "\\", 'x\\"[y']


def random_value(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(LEAVES)
    if rng.random() < 0.5:
        return [random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["k", "[k", 'q"']) + str(i): random_value(rng, depth - 1) for i in range(3)}


def test_the_text_check_agrees_with_walking_the_value() -> None:
    rng = random.Random(20261124)
    for _ in range(3000):
        value = random_value(rng, rng.randint(0, 14))
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=rng.random() < 0.5).encode()
        for limit in (1, 2, 3, 5, 9):
            assert _text_deeper_than(text, limit) == _deeper_than(value, limit), (limit, text)


def chain(depth: int, inner: bytes = b"1") -> bytes:
    opens = b"".join(b'{"[k":' if i % 2 else b"[" for i in range(depth))
    closes = b"".join(b"}" if i % 2 else b"]" for i in reversed(range(depth)))
    return opens + inner + closes


@pytest.mark.parametrize("padding", [b"", b'"[[[[{{{{",', b'"\\"[[",' * 50])
def test_a_message_one_level_too_deep_is_refused_and_one_at_the_cap_is_taken(
    padding: bytes,
) -> None:
    many = b"[" + b"[1]," * 300 + padding  # enough containers that the check runs
    deep = message(many + chain(MAX_DEPTH) + b"]")  # the outer list adds the level
    with pytest.raises(TransferError, match="nested deeper"):
        decode(deep)
    fine = message(many + chain(MAX_DEPTH - 1) + b"]")
    assert len(decode(fine)) == 300 + (padding.count(b",")) + 1


def test_a_comb_of_deep_chains_gives_up_within_its_budget_and_the_walk_decides() -> None:
    # many chains just under the cap: each pass strips one level of every chain, so the
    # text check would scan the text ~MAX_DEPTH times; it must hand over instead
    comb = b"[" + b",".join([chain(MAX_DEPTH - 1)] * 200) + b"]"
    assert _text_deeper_than(comb, MAX_DEPTH) is None
    assert len(decode(message(comb))) == 200
    deeper = b"[" + b",".join([chain(MAX_DEPTH - 1)] * 199 + [chain(MAX_DEPTH)]) + b"]"
    assert _text_deeper_than(deeper, MAX_DEPTH) is None
    with pytest.raises(TransferError, match="nested deeper"):
        decode(message(deeper))


def test_a_tagged_message_too_deep_is_refused_by_walking_its_value() -> None:
    # a tagged message's text carries tag wrappers (one container each), so its value is walked
    many = b"[" + b'{"\\u0000":["u"]},' * 300
    deep = many + chain(MAX_DEPTH) + b"]"
    tagged = struct.pack("<BI", 1, len(deep)) + deep + struct.pack("<I", 0)
    with pytest.raises(TransferError, match="nested deeper"):
        decode(tagged)
    fine = many + chain(MAX_DEPTH - 1) + b"]"
    value = decode(struct.pack("<BI", 1, len(fine)) + fine + struct.pack("<I", 0))
    assert len(value) == 301


def test_many_strings_holding_brackets_hand_over_to_the_walk() -> None:
    # pairing quotes by regex over millions of strings would hold the GIL for seconds
    text = b"[" + b'"[",' * 400_000 + b"1]"
    assert _text_deeper_than(text, MAX_DEPTH) is None
    assert len(decode(message(text))) == 400_001
    small = b"[" + b'"[",' * 1000 + chain(MAX_DEPTH) + b"]"
    assert _text_deeper_than(small, MAX_DEPTH) is True
