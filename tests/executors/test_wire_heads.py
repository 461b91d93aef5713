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
