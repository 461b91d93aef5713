"""``define_tool(tenvs=Model)``: a tool's environment variables declared as a pydantic model.

Each field is one variable: its name is the field's alias (or its name), it is required when the
field has no default, its description is the field's, it is a secret when the field is a
``pydantic.SecretStr`` and scoped when the field says ``json_schema_extra={"scoped": True}``.
Values are text (they come from the environment layers), so fields may be ``str``,
``SecretStr``, ``int``, ``float``, ``bool`` or a ``Literal`` of strings, optionally ``| None``;
the model parses them when a tool runs and the tool reads the typed instance as
``state.tenvs``.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Final, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr, ValidationError

from .errors import ToolDefinitionError

if TYPE_CHECKING:
    from ._tool import Variable

__all__ = ["env_name", "parse_tenvs", "tenv_variables"]

_SCALARS: Final = (str, SecretStr, int, float, bool)
_MAX_ISSUES: Final = 5


def env_name(field: str, model: type[BaseModel]) -> str:
    """The variable name of a field: its alias when it has one."""
    return model.model_fields[field].alias or field


def _plain(annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _allowed(annotation: Any) -> bool:
    plain = _plain(annotation)
    if plain in _SCALARS:
        return True
    return get_origin(plain) is Literal and all(isinstance(a, str) for a in get_args(plain))


def tenv_variables(tool: str, model: type[BaseModel]) -> tuple[Variable, ...]:
    """The :class:`Variable` of each field of a tenvs model.

    Raises:
        ToolDefinitionError: Not a model, or a field of a type text cannot be parsed into.
    """
    from ._tool import Variable

    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ToolDefinitionError(f"tool {tool!r}: tenvs must be a pydantic model class")
    out = []
    for field, info in model.model_fields.items():
        if not _allowed(info.annotation):
            raise ToolDefinitionError(
                f"tool {tool!r}: tenv {field!r} must be str, SecretStr, int, float, bool or a "
                f"Literal of str (optionally | None), not {info.annotation!r}"
            )
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        out.append(
            Variable(
                env_name(field, model),
                type="secret" if _plain(info.annotation) is SecretStr else "text",
                required=info.is_required(),
                scoped=extra.get("scoped") is True,
                description=info.description or "",
            )
        )
    return tuple(out)


def parse_tenvs(tool: str, model: type[BaseModel], values: dict[str, str]) -> BaseModel | str:
    """Parse the resolved values into the model; a message naming the fields when it fails.

    The message names fields and what was expected, never the values (they may be secrets).
    """
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        issues = [
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)[:_MAX_ISSUES]
        ]
        return f"tool {tool!r}: invalid tenvs: {'; '.join(issues)}"
