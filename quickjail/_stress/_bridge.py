"""The bridge under test: loading it from ``MODULE:CALLABLE`` and analysing it.

:func:`analyse_bridge` checks a bridge configuration, finds every bridged host function
(a :class:`Target` the fuzz phase calls) and every :class:`bridge.ReadOnlyDir` root (the
canary is planted outside them), and wraps each function in a :class:`Probe` that records
what it received and what it raised: the host side of the boundary the runner cannot see
in a result.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from quickjail import bridge, sandbox
from quickjail.sandbox.host import is_async_callable

__all__ = [
    "Bridge",
    "Probe",
    "StressConfigError",
    "Target",
    "analyse_bridge",
    "has_callable",
    "load_bridge",
    "readonlydir_root",
]

_T = TypeVar("_T")
_CONFIG_KEYS: Final = frozenset(
    {"imports", "globals", "output_limits", "quotas", "timeout", "memory_limit_bytes"}
)


class StressConfigError(ValueError):
    """The bridge configuration (or the entry point naming it) cannot be used."""


def load_bridge(spec: str) -> dict[str, Any]:
    """Import a bridge factory named ``"package.module:callable"`` and call it.

    The current directory is put on ``sys.path`` first (as ``python -m`` does), so a module
    of the project under test is found from the console script too.

    Args:
        spec: ``module:attribute`` (the attribute may be dotted). A callable is called with
            no arguments; a mapping is used as it is.

    Returns:
        The bridge configuration: a dict with ``imports`` and/or ``globals``, and optionally
        ``output_limits``, ``quotas``, ``timeout`` and ``memory_limit_bytes``.

    Raises:
        StressConfigError: If the module cannot be imported, the attribute is missing, or the
            factory fails or returns something else than a mapping.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise StressConfigError(
            f"--bridge {spec!r} is not MODULE:CALLABLE; e.g. --bridge my_pkg.bridges:make"
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise StressConfigError(
            f"cannot import {module_name!r} ({type(exc).__name__}: {exc}); check the module "
            "path and that it is importable from the current directory"
        ) from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise StressConfigError(f"{module_name!r} has no attribute {attr!r}") from None
    if callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise StressConfigError(
                f"the bridge factory {spec} raised {type(exc).__name__}: {exc}"
            ) from exc
    if not isinstance(obj, Mapping):
        raise StressConfigError(
            f"the bridge factory {spec} returned {type(obj).__name__}; it must return a dict "
            "with 'imports' and/or 'globals'"
        )
    return dict(obj)


@dataclass(frozen=True, slots=True)
class Target:
    """A bridged host function and how JS reaches it."""

    label: str
    fn: Callable[..., Any]
    module: str | None  # the import's module name, or None for a global
    keys: tuple[str, ...]  # property path inside the module namespace or globalThis
    arity: int

    def prelude(self) -> str:
        """JS that binds the function to ``__qj_target``."""
        props = "".join(f"[{json.dumps(k)}]" for k in self.keys)
        if self.module is None:
            return f"const __qj_target = globalThis{props};\n"
        return (
            f"import * as __qj_ns from {json.dumps(self.module)};\n"
            f"const __qj_target = __qj_ns{props};\n"
        )


@dataclass(slots=True)
class Probe:
    """Records what the bridged functions received (wrapped around each of them)."""

    callable_args: list[str] = field(default_factory=list)
    base_exceptions: list[str] = field(default_factory=list)

    def saw(self, label: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """A host function was called: note it when a callable came in with the arguments."""
        if len(self.callable_args) < 5 and has_callable((args, dict(kwargs))):
            self.callable_args.append(label)

    def raised(self, label: str, exc: BaseException) -> None:
        """A host function raised something that is not an ``Exception``."""
        if not isinstance(exc, Exception) and len(self.base_exceptions) < 5:
            self.base_exceptions.append(f"{label} raised {type(exc).__name__}")


def has_callable(value: Any, depth: int = 0) -> bool:
    """True when a value holds a callable other than a class (looked for 300 levels deep)."""
    if depth > 300:
        return False
    if callable(value) and not isinstance(value, type):
        return True
    if isinstance(value, Mapping):
        return any(
            has_callable(k, depth + 1) or has_callable(v, depth + 1) for k, v in value.items()
        )
    if isinstance(value, list | tuple | set | frozenset):
        return any(has_callable(v, depth + 1) for v in value)
    return False


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _wrap(fn: Callable[..., Any], label: str, probe: Probe) -> Callable[..., Any]:
    """The function, recording its calls; signature and type hints stay visible."""
    if is_async_callable(fn):

        @functools.wraps(fn)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            probe.saw(label, args, kwargs)
            try:
                return await fn(*args, **kwargs)
            except BaseException as exc:
                probe.raised(label, exc)
                raise

        return call_async

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        probe.saw(label, args, kwargs)
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            probe.raised(label, exc)
            raise

    return call


def _is_synchronous(fn: Any) -> bool:
    """Whether ``fn`` was marked with ``bridge.synchronous`` (marking it again is a no-op)."""
    try:
        return bridge.synchronous(fn) is fn
    except TypeError:
        return False


def _expand(value: Any) -> Any:
    """A capability object (with ``exports()``) becomes its mapping, as the sandbox does."""
    exports = getattr(value, "exports", None)
    if callable(exports) and not isinstance(value, Mapping):
        out = exports()
        if isinstance(out, Mapping):
            return out
    return value


@dataclass(slots=True)
class Bridge:
    """A user's bridge, with probes around its functions and what the stress test found."""

    imports: dict[str, Any]
    globals: dict[str, Any]
    output_limits: sandbox.OutputLimits
    quotas: bridge.Quotas
    targets: list[Target]
    roots: list[str]
    probe: Probe


def analyse_bridge(config: Mapping[str, Any]) -> Bridge:
    """Check a bridge configuration, find its functions and roots, and wrap the functions.

    Args:
        config: The bridge configuration given to :func:`quickjail._stress.run_stress`.

    Returns:
        The bridge to run the programs with: its functions wrapped in one :class:`Probe`.

    Raises:
        StressConfigError: If the configuration, its ``imports`` or its ``globals`` is not a
            mapping, a key is unknown, or ``output_limits``/``quotas`` is not valid.
    """
    if not isinstance(config, Mapping):
        raise StressConfigError(
            f"the bridge configuration must be a dict, not {type(config).__name__}"
        )
    unknown = set(config) - _CONFIG_KEYS
    if unknown:
        raise StressConfigError(
            f"unknown bridge configuration key(s): {', '.join(sorted(map(str, unknown)))}; "
            f"allowed: {', '.join(sorted(_CONFIG_KEYS))}"
        )
    imports = config.get("imports") or {}
    glob = config.get("globals") or {}
    if not isinstance(imports, Mapping) or not isinstance(glob, Mapping):
        raise StressConfigError("'imports' and 'globals' must be mappings")
    output_limits = _typed(sandbox.OutputLimits, config, "output_limits")
    quotas = _typed(bridge.Quotas, config, "quotas")
    probe = Probe()
    targets: list[Target] = []
    roots: list[str] = []

    def note_root(obj: Any) -> None:
        if isinstance(obj, bridge.ReadOnlyDir):
            root = readonlydir_root(obj)
            if root is not None and root not in roots:
                roots.append(root)

    def walk(value: Any, label: str, module: str | None, keys: tuple[str, ...], depth: int) -> Any:
        note_root(value)
        value = _expand(value)
        if callable(value) and not isinstance(value, type):
            note_root(getattr(value, "__self__", None))
            targets.append(Target(label, value, module, keys, _arity(value)))
            wrapped = _wrap(value, label, probe)
            return bridge.synchronous(wrapped) if _is_synchronous(value) else wrapped
        if depth < 16 and isinstance(value, Mapping):
            return {
                k: walk(v, f"{label}.{k}", module, (*keys, str(k)), depth + 1)
                if isinstance(k, str)
                else v
                for k, v in value.items()
            }
        return value

    wrapped_imports = {
        name: walk(ns, f"imports.{name}", str(name), (), 0) for name, ns in imports.items()
    }
    wrapped_globals = {
        name: walk(v, f"globals.{name}", None, (str(name),), 0) for name, v in glob.items()
    }
    return Bridge(wrapped_imports, wrapped_globals, output_limits, quotas, targets, roots, probe)


def _typed(cls: type[_T], config: Mapping[str, Any], key: str) -> _T:
    """A typed limits object from the configuration: an instance, a mapping of its fields, or
    absent (the defaults)."""
    value = config.get(key)
    try:
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls(**value)
    except (TypeError, ValueError) as exc:
        raise StressConfigError(f"{key!r}: {exc}") from None
    raise StressConfigError(f"{key!r} must be a {cls.__name__} or a mapping of its fields")


def readonlydir_root(fs: bridge.ReadOnlyDir) -> str | None:
    """The host directory a :class:`bridge.ReadOnlyDir` exposes, read from its ``root``.

    Args:
        fs: The capability.

    Returns:
        The absolute root path, or None once the capability is closed.
    """
    try:
        return fs.root
    except bridge.FsError:
        return None  # closed
