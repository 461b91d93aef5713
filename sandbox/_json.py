"""The plain-JSON view of values that left the sandbox (for CLIs, MCP and tool results)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any, Final

from quickjail.sandbox._value_types import UNDEFINED, TypedArray

__all__ = ["describe", "fits_int_limit", "to_json_safe", "truncate"]

JSON_INT_MAX_DIGITS: Final = 4300  # CPython's default sys.get_int_max_str_digits()


def fits_int_limit(value: int) -> bool:
    """True when ``str(value)`` cannot hit the int-digit limit (nor take long: ≤ 4300 digits).

    Judged from the bit length alone, so it is O(1) whatever the size.
    """
    limit = sys.get_int_max_str_digits()
    digits = JSON_INT_MAX_DIGITS if limit == 0 else min(limit, JSON_INT_MAX_DIGITS)
    return value.bit_length() * 30103 // 100000 + 1 <= digits


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated {len(text) - limit} characters]"


def describe(value: Any, limit: int) -> str:
    """A one-line description of a value that left the sandbox, at most about ``limit``
    characters; never raises (a str is itself, ``undefined``, ``NaN`` and ``±Infinity`` are
    written as in JavaScript, anything else is its :func:`to_json_safe` JSON text)."""
    if isinstance(value, str):
        return truncate(value, limit)
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    try:
        text = json.dumps(to_json_safe(value), ensure_ascii=False, allow_nan=False)
    except Exception:  # not a value from the sandbox (or nested beyond the stack)
        text = f"<{type(value).__name__}>"
    return truncate(text, limit)


def to_json_safe(value: Any) -> Any:
    """Turn a value that left the sandbox into plain JSON data (``json.dumps``-able, no NaN).

    Args:
        value: A value of a :class:`~quickjail.sandbox.CodeResult` (result, report, log argument).

    Returns:
        The same data with ``bytes`` as ``{"$bytes": base64}``, a
        :class:`~quickjail.sandbox.TypedArray` as ``{"$typedarray": kind, "$bytes": base64}``
        (its little-endian bytes), ``datetime`` as an ISO-8601
        string, :data:`UNDEFINED` as ``None``, ``frozenset`` as a list (sorted when
        its items can be ordered, else by their JSON text), non-finite floats as
        ``{"$float": "NaN" | "Infinity" | "-Infinity"}`` and every mapping key as a string.
        Integers stay integers up to 4300 decimal digits (CPython's default int-digit limit,
        or the lower limit set with ``sys.set_int_max_str_digits``); a larger one (a BigInt
        such as ``2n ** 20000n``) becomes ``{"$bigint": "0x…"}``, its exact value in
        hexadecimal (``"-0x…"`` when negative), so ``json.dumps`` can always write the
        result, in linear time. Any nesting depth works (a loop, not recursion).

    Raises:
        ValueError: ``value`` contains a reference cycle (no value from the sandbox does).
    """
    out: list[Any] = [None]
    todo: list[tuple[Any, Any, Any]] = [(value, out, 0)]  # (value, container, slot)
    sets: list[list[Any]] = []  # in the order met: a set's items come after it
    path: set[int] = set()  # the containers being converted, to refuse a cycle
    while todo:
        item, into, slot = todo.pop()
        if item is _LEAVE:
            path.discard(into)
            continue
        if isinstance(item, Mapping | frozenset | set | list | tuple):
            if id(item) in path:
                raise ValueError("to_json_safe: the value contains a reference cycle")
            path.add(id(item))
            todo.append((_LEAVE, id(item), None))  # popped once its items are done
        into[slot] = _convert(item, todo, sets)
    for items in reversed(sets):  # inner sets are sorted before the sets holding them
        try:
            items.sort()
        except TypeError:
            items.sort(key=_canonical)
    return out[0]


_LEAVE: Final = object()


def _convert(value: Any, todo: list[tuple[Any, Any, Any]], sets: list[list[Any]]) -> Any:
    """One step of :func:`to_json_safe`: a leaf converted, or an empty container whose
    items go on ``todo`` (a loop, not recursion, so no nesting depth can exhaust the stack)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if fits_int_limit(value):
            return int(value)
        return {"$bigint": format(value, "#x")}
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return {"$float": name}
    if value is UNDEFINED:
        return None
    if isinstance(value, bytes | bytearray | memoryview | TypedArray):
        import base64  # on first use, like datetime: a first run rarely converts bytes

        if isinstance(value, TypedArray):
            data = base64.b64encode(value.data).decode("ascii")
            return {"$typedarray": value.kind, "$bytes": data}
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    datetime = sys.modules.get("datetime")  # not imported: no value is a date (see _values)
    if datetime is not None and isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if isinstance(value, Mapping):
        items = {_json_key(k): v for k, v in value.items()}  # equal keys: the last one wins
        mapping: dict[str, Any] = dict.fromkeys(items)
        todo.extend((v, mapping, k) for k, v in items.items())
        return mapping
    if isinstance(value, frozenset | set | list | tuple):
        seq: list[Any] = [None] * len(value)
        todo.extend((v, seq, i) for i, v in enumerate(value))
        if isinstance(value, frozenset | set):
            sets.append(seq)
        return seq
    return repr(value)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    safe = to_json_safe(key)
    return safe if isinstance(safe, str) else _canonical(safe)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
