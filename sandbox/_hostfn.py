"""Host functions: argument validation and the safe JS view of their failures.

As in JavaScript, a call may pass more arguments than the function declares: the extra ones
are ignored (``[1, 2].map(lookup)`` calls ``lookup(value)``), unless it takes ``*args``.

A host callable whose parameters carry type hints (or a pydantic model) gets its arguments
validated before it is called; a violation is a ``TypeError`` inside JS that names the
argument and the reason, and the callable is not called. A callable whose only parameter is a
pydantic model accepts "keyword-style" calls: ``lookup({id: 3})`` validates the object as the
model. Unannotated parameters take any transferable value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, get_type_hints

if TYPE_CHECKING:
    import pydantic

__all__ = ["ArgumentError", "build_validator"]


class ArgumentError(TypeError):
    """The program called a host function with arguments it does not accept."""

    js_name = "TypeError"

    @property
    def js_message(self) -> str:
        return str(self)


Validator = Callable[[list[Any]], tuple[tuple[Any, ...], dict[str, Any]]]


def _describe(exc: pydantic.ValidationError, names: list[str], fn_name: str) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        loc = [str(x) for x in err.get("loc", ())]
        if loc and loc[0].isdigit() and int(loc[0]) < len(names):
            loc[0] = names[int(loc[0])]
        where = ".".join(loc) if loc else "arguments"
        parts.append(f"argument {where!r}: {err.get('msg', 'invalid')}")
    return f"{fn_name}(): " + "; ".join(parts)


def build_validator(fn: Callable[..., Any], label: str) -> Validator | None:
    """Return a function that validates JS args for ``fn``, or None when nothing is declared."""
    target = fn
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    try:
        hints = get_type_hints(target)
    except Exception:
        hints = {}
    params = [p for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_var = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    annotated = [p for p in params if p.name in hints]
    if not annotated:
        # still check the count, so a JS caller cannot trigger a Python TypeError deep inside
        def count_only(args: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            required = sum(1 for p in params if p.default is p.empty)
            if len(args) < required:
                raise ArgumentError(
                    f"{label}() takes {required}"
                    + (f" to {len(params)}" if len(params) != required else "")
                    + f" argument(s), got {len(args)}"
                )
            # like a JavaScript function, extra arguments are ignored
            return tuple(args if has_var else args[: len(params)]), {}
        return count_only

    import pydantic  # only needed when a host function declares types

    names = [p.name for p in params]
    model_param = (
        params[0] if len(params) == 1 and isinstance(hints.get(params[0].name), type)
        and issubclass(hints[params[0].name], pydantic.BaseModel) else None
    )
    fields: dict[str, Any] = {}
    for p in params:
        ann = hints.get(p.name, Any)
        fields[p.name] = (ann, ... if p.default is p.empty else p.default)
    model = pydantic.create_model(
        f"Args_{getattr(fn, '__name__', 'fn')}",
        __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
        **fields,
    )

    ValidationError = pydantic.ValidationError

    def validate(args: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        extra = tuple(args[len(names):]) if has_var else ()  # else ignored, as in JavaScript
        data = dict(zip(names, args, strict=False))
        try:
            checked = model.model_validate(data)
        except ValidationError as exc:
            raise ArgumentError(_describe(exc, names, label)) from None
        values = tuple(getattr(checked, n) for n in names[: max(len(args), _required(params))])
        return values[: len(names)] + extra, {}

    if model_param is not None:
        return validate  # a single model parameter: a JS object validates as the model
    return validate


def _required(params: list[inspect.Parameter]) -> int:
    return sum(1 for p in params if p.default is p.empty)
