"""Validation of the arguments a program passes to a host function.

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
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_type_hints

if TYPE_CHECKING:
    import pydantic

from quickjail.bridge._errors import ArgumentError

__all__ = ["Validator", "build_validator"]


Validator = Callable[[list[Any]], tuple[Any, ...]]


def _describe(exc: pydantic.ValidationError, names: list[str], fn_name: str) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        loc = [str(x) for x in err.get("loc", ())]
        if loc and loc[0].isdigit() and int(loc[0]) < len(names):
            loc[0] = names[int(loc[0])]
        where = ".".join(loc) if loc else "arguments"
        parts.append(f"argument {where!r}: {err.get('msg', 'invalid')}")
    return f"{fn_name}(): " + "; ".join(parts)


@dataclass(frozen=True)
class _Spec:
    """What a callable declares, analysed once per function (the pydantic model is costly)."""

    names: list[str]
    required: int
    has_var: bool
    model: Any  # a pydantic model of the annotated parameters, or None


_specs: weakref.WeakKeyDictionary[Any, dict[bool, _Spec | None]] = weakref.WeakKeyDictionary()
_specs_lock = threading.Lock()


def _spec(fn: Callable[..., Any]) -> _Spec | None:
    """The cached analysis of ``fn`` (keyed by its function, so bound methods share it)."""
    func = getattr(fn, "__func__", fn)
    bound = func is not fn
    try:
        with _specs_lock:
            per_kind = _specs.setdefault(func, {})
            if bound in per_kind:
                return per_kind[bound]
    except TypeError:  # not weak-referenceable: analyse every time
        return _analyse(fn)
    spec = _analyse(fn)
    with _specs_lock:
        per_kind[bound] = spec
    return spec


def _analyse(fn: Callable[..., Any]) -> _Spec | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        hints = get_type_hints(fn)
    except Exception:
        hints = {}
    params = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    names = [p.name for p in params]
    required = sum(1 for p in params if p.default is p.empty)
    has_var = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    if not any(p.name in hints for p in params):
        return _Spec(names, required, has_var, None)

    import pydantic  # only needed when a host function declares types

    fields: dict[str, Any] = {
        p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default) for p in params
    }
    model = pydantic.create_model(
        f"Args_{getattr(fn, '__name__', 'fn')}",
        __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
        **fields,
    )
    return _Spec(names, required, has_var, model)


def build_validator(fn: Callable[..., Any], label: str) -> Validator | None:
    """Return a function that validates JS args for ``fn``, or None when it has no signature.

    A single pydantic-model parameter needs nothing special: a JS object validates as it.
    """
    spec = _spec(fn)
    if spec is None:
        return None
    names, required, has_var, model = spec.names, spec.required, spec.has_var, spec.model

    if model is None:
        # still check the count, so a JS caller cannot trigger a Python TypeError deep inside
        def count_only(args: list[Any]) -> tuple[Any, ...]:
            if len(args) < required:
                raise ArgumentError(
                    f"{label}() takes {required}"
                    + (f" to {len(names)}" if len(names) != required else "")
                    + f" argument(s), got {len(args)}"
                )
            # like a JavaScript function, extra arguments are ignored
            return tuple(args if has_var else args[: len(names)])

        return count_only

    import pydantic

    validation_error = pydantic.ValidationError

    def validate(args: list[Any]) -> tuple[Any, ...]:
        extra = tuple(args[len(names) :]) if has_var else ()  # else ignored, as in JavaScript
        data = dict(zip(names, args, strict=False))
        try:
            checked = model.model_validate(data)
        except validation_error as exc:
            raise ArgumentError(_describe(exc, names, label)) from None
        values = tuple(getattr(checked, n) for n in names[: max(len(args), required)])
        return values[: len(names)] + extra

    return validate
