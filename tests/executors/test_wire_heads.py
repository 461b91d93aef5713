"""A frame head goes as plain JSON straight from the C encoder when the codec would send it
untagged, else through the codec: either way it decodes to exactly what the codec's own
message of it decodes to (or both refuse it). The values are what heads may carry: our own
fields, and texts and module names a program or a compromised guest chose.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from quickjail.executors import _wire
from quickjail.sandbox import TransferError, _values
from quickjail.sandbox._abi import FN_KEY

SAFE = 2**53 - 1
VALUES: list[Any] = [
    {"status": "success", "metrics": {"a": 1, "b": 2.5}, "errors": ["x"]},
    [SAFE, -SAFE, 0, True, False, None, 0.0, 1e300],
    [SAFE + 1],
    [-SAFE - 1],
    {"m": [1, 2**60]},
    [-0.0],
    {"d": {"x": -0.0}},
    [math.nan],
    [math.inf],
    {"\0hidden": 1},
    {FN_KEY: [1, 2, "f"]},
    {"modules": {"\0x": "source"}},
    {"modules": {"ok": "\0 in a value is fine"}},
    ["lone \ud800 surrogate"],
    {"lone \udfff key": 1},
    ("a", "tuple", 1),
    {1: "int key"},
    [[[[[[[[[1]]]]]]]]],
    [[[[[[[[[[[[1]]]]]]]]]]]],
    [{"a": [{"b": [{"c": [{"d": [1]}]}]}]}],
    [object()],
]


def _outcome(make: Any) -> tuple[str, Any]:
    try:
        value = _values.decode(make())
    except (TransferError, TypeError, ValueError) as exc:
        return "refused", type(exc).__name__
    return "value", repr(value)  # repr tells -0.0 from 0.0 and a tuple's list


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_head_decodes_as_the_codecs_own_message_of_it(value: Any) -> None:
    head = ["kind", value]
    expected = _outcome(lambda: _values.encode(head, path="kind"))
    actual = _outcome(lambda: _wire._encode_head(head, "kind"))
    assert actual == expected


def _our_shape(value: Any) -> bool:
    """No dict key but a plain str and no -0.0 anywhere: what a result's head holds."""
    if isinstance(value, float):
        return not (value == 0 and math.copysign(1, value) < 0)
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and not k.startswith(("\0", FN_KEY)) and _our_shape(v)
            for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return all(_our_shape(v) for v in value)
    return True


@pytest.mark.parametrize("value", [v for v in VALUES if _our_shape(v)], ids=repr)
def test_a_head_of_our_shape_decodes_the_same_without_the_walk(value: Any) -> None:
    head = ["kind", value]
    expected = _outcome(lambda: _values.encode(head, path="kind"))
    actual = _outcome(lambda: _wire._encode_head(head, "kind", plain_shape=True))
    assert actual == expected
