"""Validation of the arguments a program passes to a host function.

As in JavaScript, a call may pass more arguments than the function declares: the extra ones
are ignored (``[1, 2].map(lookup)`` calls ``lookup(value)``), unless it takes ``*args``, whose
annotation then checks each of them.

A host callable whose parameters carry type hints (or a pydantic model) gets its arguments
validated before it is called, with every constraint the hints carry (``Annotated[int,
Field(ge=0)]``, ``StringConstraints``, ``AfterValidator``...); a violation is a ``TypeError``
inside JS that names the argument, and the callable is not called. What the program reads of a
violation is pydantic's own message for its built-in checks; a validator's text (which may
hold host paths or policy) is never shown, only the error type, unless the validator raised a
:class:`~quickjail.bridge.HostError` on purpose. A callable whose only parameter is a pydantic
model accepts "keyword-style" calls: ``lookup({id: 3})`` validates the object as the model.
Unannotated parameters take any transferable value.

A type hint that cannot be resolved is an error when the run is built (a ``TypeError`` naming
the function and the parameter), never a silent loss of validation.
"""

from __future__ import annotations

import functools
import inspect
import os
import threading
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import pydantic

from quickjail.bridge._errors import ArgumentError, HostError

__all__ = ["Validator", "build_validator"]


Validator = Callable[[list[Any]], tuple[Any, ...]]

_MAX_ERRORS_SHOWN: Final = 5
# errors whose text a validator (the host's code) wrote, not pydantic
_VALIDATOR_ERRORS: Final = frozenset({"value_error", "assertion_error"})


@functools.cache
def _builtin_error_types() -> frozenset[str]:
    from pydantic_core.core_schema import ErrorType

    return frozenset(typing.get_args(ErrorType)) - _VALIDATOR_ERRORS


def _describe(
    exc: pydantic.ValidationError, fn_name: str, where: Callable[[list[str]], str]
) -> str:
    """What the program reads of a violation; raises a validator's own :class:`HostError`."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:_MAX_ERRORS_SHOWN]:
        ctx = err.get("ctx") or {}
        if isinstance(ctx.get("error"), HostError):
            raise ctx["error"]  # the validator chose what the program may read
        kind = str(err.get("type", ""))
        shown = where([str(x) for x in err.get("loc", ())])
        if kind in _builtin_error_types():
            parts.append(f"argument {shown!r}: {err.get('msg', 'invalid')}")
        else:  # a validator's message may hold host paths or policy: only its type is shown
            parts.append(f"argument {shown!r}: invalid value ({kind or 'rejected'})")
    extra = exc.error_count() - _MAX_ERRORS_SHOWN
    if extra > 0:
        parts.append(f"and {extra} more")
    return f"{fn_name}(): " + "; ".join(parts)


class _Spec:
    """What a callable declares, analysed once per function (the pydantic model is costly).

    Read-only by contract; a plain class, not a frozen dataclass, whose building at import
    costs about a millisecond of every process's first run.
    """

    __slots__ = ("exact", "model", "names", "required", "var_adapter", "var_name")

    def __init__(
        self,
        names: list[str],
        required: int,
        var_name: str | None,
        model: Any,
        var_adapter: Any,
        exact: tuple[type | None, ...] | None = None,
    ) -> None:
        self.names: Final = names
        self.required: Final = required
        self.var_name: Final = var_name  # the *args parameter, if any
        # a pydantic model of the annotated positional parameters, or None
        self.model: Final = model
        self.var_adapter: Final = var_adapter  # a pydantic TypeAdapter for the *args, or None
        self.exact: Final = exact  # see _exact_types


_specs: weakref.WeakKeyDictionary[Any, dict[bool, _Spec | None]] = weakref.WeakKeyDictionary()
_specs_lock = threading.Lock()


def _new_specs_lock() -> None:
    """After ``fork``, in the child: a lock another thread held at the fork stays held."""
    global _specs_lock
    _specs_lock = threading.Lock()


os.register_at_fork(after_in_child=_new_specs_lock)


def _spec(fn: Callable[..., Any], label: str) -> _Spec | None:
    """The cached analysis of ``fn`` (keyed by its function, so bound methods share it)."""
    func = getattr(fn, "__func__", fn)
    bound = func is not fn
    try:
        with _specs_lock:
            per_kind = _specs.setdefault(func, {})
            if bound in per_kind:
                return per_kind[bound]
    except TypeError:  # not weak-referenceable: analyse every time
        return _analyse(fn, label)
    spec = _analyse(fn, label)  # raises for an unresolvable hint: nothing is cached then
    with _specs_lock:
        per_kind[bound] = spec
    return spec


def _globals_of(fn: Any) -> dict[str, Any]:
    """The module namespace a callable's string annotations are written in."""
    obj = fn
    for _ in range(32):  # partials, bound methods and decorators' __wrapped__, unwrapped
        inner = (
            obj.func
            if isinstance(obj, functools.partial)
            else getattr(obj, "__func__", None) or getattr(obj, "__wrapped__", None)
        )
        if inner is None:
            break
        obj = inner
    if not inspect.isfunction(obj) and callable(obj):
        call = getattr(type(obj), "__call__", None)  # noqa: B004 - a callable instance
        obj = getattr(call, "__func__", call)
    namespace = getattr(obj, "__globals__", None)
    return namespace if isinstance(namespace, dict) else {}


def _unresolvable(label: str, name: str, hint: object, exc: BaseException) -> TypeError:
    return TypeError(
        f"host function {label}(): the type hint {hint!r} of parameter {name!r} cannot be "
        f"resolved or used ({type(exc).__name__}: {exc}); define or import it where the "
        "function is defined, or remove the hint"
    )


def _hints(fn: Callable[..., Any], params: list[inspect.Parameter], label: str) -> dict[str, Any]:
    """The resolved annotation of each annotated parameter in ``params`` (extras kept).

    Raises:
        TypeError: One of them cannot be resolved (naming it).
    """
    annotated = [p for p in params if p.annotation is not p.empty]
    if any(isinstance(p.annotation, str) for p in annotated):
        try:
            resolved = inspect.signature(fn, eval_str=True).parameters
        except Exception:  # which one? (the return annotation, not checked, may be the culprit)
            namespace = _globals_of(fn)
            hints: dict[str, Any] = {}
            for p in annotated:
                hint = p.annotation
                if isinstance(hint, str):
                    try:
                        hint = eval(hint, namespace)  # the host author's own code
                    except Exception as exc:
                        raise _unresolvable(label, p.name, p.annotation, exc) from None
                hints[p.name] = hint
            return {k: type(None) if v is None else v for k, v in hints.items()}
        annotated = [resolved[p.name] for p in annotated]
    return {p.name: type(None) if p.annotation is None else p.annotation for p in annotated}


def _analyse(fn: Callable[..., Any], label: str) -> _Spec | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    except Exception as exc:  # Python 3.14 evaluates annotations here
        raise TypeError(
            f"host function {label}(): a type hint cannot be resolved ({type(exc).__name__}: "
            f"{exc}); define or import it where the function is defined, or remove the hint"
        ) from None
    params = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    var = next((p for p in sig.parameters.values() if p.kind == p.VAR_POSITIONAL), None)
    names = [p.name for p in params]
    required = sum(1 for p in params if p.default is p.empty)
    hints = _hints(fn, params + ([var] if var is not None else []), label)
    var_name = var.name if var is not None else None
    if not hints:
        return _Spec(names, required, var_name, None, None)
    exact = _exact_types(hints, names)

    import pydantic  # only needed when a host function declares types

    config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    model: Any = None
    if any(n in hints for n in names):
        fields: dict[str, Any] = {
            p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default)
            for p in params
        }
        try:
            model = pydantic.create_model(
                f"Args_{getattr(fn, '__name__', 'fn')}",
                __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
                **fields,
            )
            if not model.__pydantic_complete__:
                model.model_rebuild(_types_namespace=_globals_of(fn))
        except Exception as exc:
            culprit = _culprit(hints, names, config)
            raise _unresolvable(label, culprit, hints.get(culprit), exc) from None
    var_adapter: Any = None
    if var_name is not None and var_name in hints:
        try:
            var_adapter = pydantic.TypeAdapter(_list_of(hints[var_name]), config=config)
        except Exception as exc:
            raise _unresolvable(label, var_name, hints[var_name], exc) from None
    return _Spec(names, required, var_name, model, var_adapter, exact)


_EXACT: Final = frozenset({int, float, str, bool})


def _exact_types(hints: Mapping[str, Any], names: list[str]) -> tuple[type | None, ...] | None:
    """Per positional parameter, the one type whose values pydantic's model passes through
    unchanged (a plain ``int``, ``float``, ``str`` or ``bool`` hint), None for a parameter that
    takes anything (no hint, ``Any``); None in all when some hint is anything else. An
    argument of exactly that type needs no model: the value the model would give is itself."""
    exact: list[type | None] = []
    for name in names:
        hint = hints.get(name, Any)
        if hint is Any:
            exact.append(None)
        elif hint in _EXACT:
            exact.append(hint)
        else:
            return None
    return tuple(exact)


def _list_of(hint: Any) -> Any:
    """``list[hint]`` (pydantic refuses ``config=`` for a model itself, not for a list of it)."""
    return types.GenericAlias(list, (hint,))


def _culprit(hints: Mapping[str, Any], names: list[str], config: Any) -> str:
    """The first parameter whose hint pydantic cannot use (else the first annotated one)."""
    import pydantic

    for name in names:
        if name in hints:
            try:
                pydantic.TypeAdapter(_list_of(hints[name]), config=config)
            except Exception:
                return name
    return next(n for n in names if n in hints)


def build_validator(fn: Callable[..., Any], label: str) -> Validator | None:
    """Return a function that validates JS args for ``fn``, or None when it has no signature.

    A single pydantic-model parameter needs nothing special: a JS object validates as it.

    Raises:
        TypeError: A parameter's type hint cannot be resolved or used (naming it).
    """
    spec = _spec(fn, label)
    if spec is None:
        return None
    names, required, model, var_adapter = spec.names, spec.required, spec.model, spec.var_adapter
    exact, declared = spec.exact, len(spec.names)
    has_var = spec.var_name is not None
    var_name = spec.var_name or "args"

    def check_count(args: list[Any]) -> None:
        if len(args) < required:
            raise ArgumentError(
                f"{label}() takes {required}"
                + (f" to {len(names)}" if len(names) != required else "")
                + f" argument(s), got {len(args)}"
            )

    if model is None and var_adapter is None:
        # still check the count, so a JS caller cannot trigger a Python TypeError deep inside
        def count_only(args: list[Any]) -> tuple[Any, ...]:
            check_count(args)
            # like a JavaScript function, extra arguments are ignored
            return tuple(args if has_var else args[: len(names)])

        return count_only

    import pydantic

    validation_error = pydantic.ValidationError

    def where_var(loc: list[str]) -> str:
        if loc and loc[0].isdigit():
            return ".".join([f"{var_name}[{loc[0]}]", *loc[1:]])
        return ".".join(loc) or var_name

    def validate(args: list[Any]) -> tuple[Any, ...]:
        if model is None:
            check_count(args)  # else the model reports a missing argument by name
        extra = list(args[len(names) :]) if has_var else []  # else ignored, as in JavaScript
        if (
            exact is not None
            and len(args) >= declared
            and all(t is None or type(a) is t for t, a in zip(exact, args, strict=False))
        ):
            values = tuple(args[:declared])  # every argument as the model would give it
        elif model is not None:
            data = dict(zip(names, args, strict=False))
            try:
                checked = model.model_validate(data)
            except validation_error as exc:
                message = _describe(exc, label, lambda loc: ".".join(loc) or "arguments")
                raise ArgumentError(message) from None
            values = tuple(getattr(checked, n) for n in names[: max(len(args), required)])
        else:
            values = tuple(args[: len(names)])
        if var_adapter is not None and extra:
            try:
                extra = var_adapter.validate_python(extra)
            except validation_error as exc:
                raise ArgumentError(_describe(exc, label, where_var)) from None
        return values[: len(names)] + tuple(extra)

    return validate
