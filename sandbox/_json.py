"""The plain-JSON view of values that left the sandbox (for CLIs, MCP and tool results)."""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
from collections.abc import Mapping
from typing import Any

from quickjail.sandbox._values import UNDEFINED

__all__ = ["to_json_safe"]


def to_json_safe(value: Any) -> Any:
    """Turn a value that left the sandbox into plain JSON data (``json.dumps``-able, no NaN).

    Args:
        value: A value of a :class:`~quickjail.sandbox.CodeResult` (result, report, log argument).

    Returns:
        The same data with ``bytes`` as ``{"$bytes": base64}``, ``datetime`` as an ISO-8601
        string, :data:`UNDEFINED` as ``None``, ``frozenset`` as a list (sorted when
        its items can be ordered, else by their JSON text), non-finite floats as
        ``{"$float": "NaN" | "Infinity" | "-Infinity"}`` and every mapping key as a string.
        Integers of any size stay integers.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return {"$float": name}
    if value is UNDEFINED:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {_json_key(k): to_json_safe(v) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        items = [to_json_safe(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=_canonical)
    if isinstance(value, list | tuple):
        return [to_json_safe(v) for v in value]
    return repr(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    safe = to_json_safe(key)
    return safe if isinstance(safe, str) else _canonical(safe)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
