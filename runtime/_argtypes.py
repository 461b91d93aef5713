"""The argument types a tool may use: :func:`check_model` refuses a model with any other type.

Allowed are the types every provider format and the TypeScript declarations can express:
``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal``, ``Enum`` (str or int values),
``Optional``, ``list[T]``, ``dict[str, T]``, unions and nested (non-recursive) pydantic models.
``datetime`` and friends are refused (pass ISO 8601 strings), and so are recursive models
(every exported schema inlines its models); the messages say so.
"""

from __future__ import annotations

import datetime
import enum
import types
import typing
from typing import Any, Final, Literal, get_args, get_origin

from pydantic import BaseModel

from .errors import ToolDefinitionError

__all__ = ["check_model"]

_SCALARS: Final = (str, int, float, bool, type(None))
# refused: arguments are checked to be exactly the JSON the schema names, and a date-time
# string parsed into one would be a coercion (and Gemini's schema subset drops most formats)
_TIMES: Final = (datetime.datetime, datetime.date, datetime.time, datetime.timedelta)
_ALLOWED: Final = (
    "str, int, float, bool, None, Literal, Enum, Optional, list[T], dict[str, T], "
    "unions and nested pydantic models"
)


def check_model(model: type[BaseModel], what: str) -> None:
    """Refuse a model using an argument type outside the supported set.

    Args:
        model: The pydantic model of a tool's arguments or return value.
        what: ``"args"`` or ``"returns"``, for the message.

    Raises:
        ToolDefinitionError: Naming the offending field and its type.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ToolDefinitionError(f"{what} must be a pydantic BaseModel subclass, got {model!r}")
    _check_fields(model, model.__name__, (model,))


def _check_fields(model: type[BaseModel], path: str, stack: tuple[type[BaseModel], ...]) -> None:
    for name, field in model.model_fields.items():
        _check_type(field.annotation, f"{path}.{name}", stack)


def _check_type(tp: Any, path: str, stack: tuple[type[BaseModel], ...]) -> None:
    origin, args = get_origin(tp), get_args(tp)
    if tp is None or tp in _SCALARS:
        return
    if origin is typing.Annotated:
        _check_type(args[0], path, stack)
    elif origin is Literal:
        bad = [a for a in args if not isinstance(a, (str, int, bool, type(None)))]
        if bad:
            raise ToolDefinitionError(f"field {path}: Literal values must be str/int/bool/None")
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        if not all(isinstance(m.value, (str, int)) for m in tp):
            raise ToolDefinitionError(f"field {path}: Enum {tp.__name__} needs str or int values")
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            _check_type(arg, path, stack)
    elif origin is list:
        _check_type(args[0], f"{path}[]", stack)
    elif origin is dict:
        if args[0] is not str:
            raise ToolDefinitionError(f"field {path}: dict keys must be str, got {args[0]!r}")
        _check_type(args[1], f"{path}{{}}", stack)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in stack:
            raise ToolDefinitionError(
                f"field {path}: recursive model {tp.__name__} is not allowed; every exported "
                "schema inlines its models (Gemini's format has no $ref): flatten it, or "
                "nest a fixed number of levels"
            )
        _check_fields(tp, path, (*stack, tp))
    else:
        shown = getattr(tp, "__name__", None) or repr(tp)
        if tp in (list, dict):
            shown += " (give the item type, e.g. list[str])"
        elif tp in _TIMES:
            shown += " (arguments are JSON: pass an ISO 8601 string (str) and parse it in the tool)"
        raise ToolDefinitionError(f"field {path}: unsupported type {shown}; allowed: {_ALLOWED}")
