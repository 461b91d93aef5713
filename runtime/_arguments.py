"""A tool call's arguments as plain JSON data, whoever sent them (a model, or code-mode code).

Arguments are stored on the thread as JSON and validated by the tool's pydantic model, so they
must be plain JSON of a bounded shape. Anything else is refused with an :class:`ArgumentsError`
naming where (the call then gets an error result and the batch goes on): text that is not JSON,
``NaN`` and ``Infinity``, an integer of more than ``MAX_INT_DIGITS`` digits, nesting deeper than
``MAX_ARGUMENT_DEPTH``, more than ``MAX_ARGUMENT_VALUES`` values, a non-string key, and values
JSON has no form for (a typed array or ``ArrayBuffer``, ``Set``, ``Map`` with non-string keys
or ``Date`` from code). As ``JSON.stringify`` does, ``undefined`` is dropped from objects and is
``null`` in arrays. The walk is recursive but never deeper than ``MAX_ARGUMENT_DEPTH``, and it
stops after ``MAX_ARGUMENT_VALUES`` values, so a shared or cyclic Python structure cannot make it
explode.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from quickjail.sandbox import UNDEFINED, TypedArray

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "MAX_ARGUMENT_VALUES",
    "MAX_INT_DIGITS",
    "ArgumentsError",
    "ArgumentsSyntaxError",
    "loads_arguments",
    "plain_arguments",
]

MAX_ARGUMENT_DEPTH: Final = 64
MAX_ARGUMENT_VALUES: Final = 1_000_000
MAX_INT_DIGITS: Final = 4000  # below CPython's default int <-> str limit (4300): always storable
_INT_BOUND: Final = 10**MAX_INT_DIGITS
_MAX_KEY_SHOWN: Final = 40


class ArgumentsError(ValueError):
    """Arguments that are not plain JSON data of a bounded shape; the message says where."""


class ArgumentsSyntaxError(ArgumentsError):
    """Arguments whose text is not JSON; the message is the parser's."""


class _Refused(Exception):
    """Raised inside the walk; ``path`` is filled in (innermost first) while it unwinds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []

    def message(self, root: str) -> str:
        return f"{root}{''.join(reversed(self.path))}: {self.reason}"


def _refuse_constant(name: str) -> NoReturn:
    raise _Refused(f"{name} is not a JSON number")


def loads_arguments(text: str, root: str = "arguments") -> Any:
    """Parse a JSON text of arguments into plain data (see the module docstring).

    Raises:
        ArgumentsSyntaxError: Not JSON.
        ArgumentsError: JSON that :func:`plain_arguments` refuses.
    """
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except _Refused as exc:
        raise ArgumentsError(exc.message(root)) from None
    except RecursionError:
        raise ArgumentsError(f"{root}: nested deeper than {MAX_ARGUMENT_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise ArgumentsSyntaxError(str(exc)) from None
    except ValueError as exc:  # an integer past CPython's int-string digit limit
        raise ArgumentsError(f"{root}: {exc}") from None
    return plain_arguments(value, root)


def plain_arguments(value: Any, root: str = "arguments") -> Any:
    """Return a plain-JSON copy of ``value`` (see the module docstring for what is refused).

    Raises:
        ArgumentsError: Naming the first refused value's path and why.
    """
    budget = [MAX_ARGUMENT_VALUES]
    try:
        return _plain(value, 0, budget)
    except _Refused as exc:
        raise ArgumentsError(exc.message(root)) from None


def _plain(value: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _Refused(f"more than {MAX_ARGUMENT_VALUES} values")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if -_INT_BOUND < value < _INT_BOUND:
            return int(value)
        raise _Refused(f"an integer of more than {MAX_INT_DIGITS} digits")
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        name = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        raise _Refused(f"{name} is not a JSON number")
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_ARGUMENT_DEPTH:
        raise _Refused(f"nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _Refused(f"a key of type {type(key).__name__} (keys must be strings)")
            if item is UNDEFINED:
                continue
            try:
                out[key] = _plain(item, depth + 1, budget)
            except _Refused as exc:
                exc.path.append(_key_path(key))
                raise
        return out
    if isinstance(value, list | tuple):
        items: list[Any] = []
        for index, item in enumerate(value):
            try:
                items.append(None if item is UNDEFINED else _plain(item, depth + 1, budget))
            except _Refused as exc:
                exc.path.append(f"[{index}]")
                raise
        return items
    raise _Refused(f"{_kind(value)} is not JSON data")


def _key_path(key: str) -> str:
    shown = key if len(key) <= _MAX_KEY_SHOWN else key[:_MAX_KEY_SHOWN] + "..."
    return f".{shown}" if shown.isidentifier() else f"[{shown!r}]"


def _kind(value: Any) -> str:
    if value is UNDEFINED:
        return "undefined"
    if isinstance(value, bytes | bytearray):
        return "a Uint8Array (bytes)"
    if isinstance(value, TypedArray):
        return f"a {value.kind}"
    if isinstance(value, set | frozenset):
        return "a Set"
    if isinstance(value, datetime.date):
        return "a Date"
    return f"a value of type {type(value).__name__}"
