"""The whitelist: a sandbox ``HostTable`` built from ``imports=`` and ``globals=``.

Every callable found in the namespaces (at any depth, or in what a :class:`Capability`
exports) becomes a :class:`~quickjail.sandbox.host.HostFunction` with its validator; every
other value is data the sandbox copies in. A name that is not here cannot be called. In JS
every such function returns a Promise, unless it was marked with :func:`synchronous`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, runtime_checkable

from quickjail.bridge._errors import HostError
from quickjail.bridge._fetch import Fetch
from quickjail.bridge._per_run import PerRun
from quickjail.bridge._quotas import Quotas, QuotaState
from quickjail.bridge._validate import build_validator
from quickjail.sandbox.host import HIDDEN_GLOBALS, HostFunction, is_async_callable

__all__ = ["BridgeTable", "Capability", "synchronous"]

_MAX_DEPTH = 128  # the sandbox's own transfer depth; deeper data is its error to report

P = ParamSpec("P")
R = TypeVar("R")


class _Synchronous(Generic[P, R]):
    """A sync callable whose JS calls return its value, not a Promise (see :func:`synchronous`)."""

    __slots__ = ("__wrapped__", "fn")

    def __init__(self, fn: Callable[P, R]) -> None:
        self.fn = fn
        self.__wrapped__ = fn  # inspect.signature and functools.wraps see the function

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"synchronous({self.fn!r})"


def synchronous(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark a sync host function so that calling it in JS returns its value (or throws).

    By default every host function returns a Promise in JS, as tool functions do in a Worker
    (``await fs.readFile(p)``, ``tool(x).catch(...)``). A function marked with this (as a
    decorator, or around a value in ``imports=``/``globals=``) keeps synchronous JS semantics
    instead: ``const n = counter.next()`` gets the number. The Python side is the same either
    way: the function is called at once on the run's worker thread. Calling the result from
    Python calls ``fn``.

    Raises:
        TypeError: ``fn`` is async (its result only exists later) or not callable.
    """
    if isinstance(fn, _Synchronous):
        return fn
    if not callable(fn) or isinstance(fn, type):
        raise TypeError("synchronous() takes a function")
    if is_async_callable(fn):
        raise TypeError("synchronous() takes a sync function: an async one's value comes later")
    return _Synchronous(fn)


@runtime_checkable
class Capability(Protocol):
    """A ready-made set of host functions, such as :class:`~quickjail.bridge.ReadOnlyDir`.

    Passed as a namespace (``imports={"fs": ReadOnlyDir(root)}``) or a value in one, it is
    replaced by what ``exports()`` returns: a mapping of names to functions and data.
    """

    def exports(self) -> Mapping[str, Any]:
        """The names the program may import, and what they are."""
        ...


_PER_RUN_LOCK = threading.Lock()


class _Calls(QuotaState):
    """One run's host-call state: quota use, what a failure may show the program, and what
    capabilities keep for the run (:mod:`quickjail.bridge._per_run`)."""

    __slots__ = ("_per_run",)

    def __init__(self, quotas: Quotas) -> None:
        super().__init__(quotas)
        self._per_run: PerRun | None = None  # made on a capability's first ask: most runs never

    @property
    def per_run(self) -> PerRun:
        """What capabilities keep for this run (made on first use)."""
        with _PER_RUN_LOCK:
            if self._per_run is None:
                self._per_run = PerRun()
            return self._per_run

    async def aclose(self) -> None:
        if self._per_run is not None:
            await self._per_run.aclose()

    def describe(self, exc: BaseException) -> tuple[str, str] | None:
        if isinstance(exc, HostError):
            return exc.js_name, str(exc)
        return None


class BridgeTable:
    """The sandbox's :class:`~quickjail.sandbox.host.HostTable` for one set of options."""

    __slots__ = ("_globals", "_modules", "_quotas")

    def __init__(
        self, imports: Mapping[str, Any] | None, globals: Mapping[str, Any] | None, quotas: Quotas
    ) -> None:
        """Build the table.

        Raises:
            TypeError, ValueError: a malformed namespace or name.
        """
        self._quotas = quotas
        imports = {} if imports is None else imports
        if not isinstance(imports, Mapping):
            raise TypeError("imports must be a mapping of module names to namespaces")
        modules: dict[str, Mapping[str, Any]] = {}
        for name, namespace in imports.items():
            if not isinstance(name, str) or not name or name.startswith((".", "/")):
                raise ValueError(f"import names are bare specifiers, not {name!r}")
            ns = _expand(namespace, f"imports[{name!r}]")
            if not isinstance(ns, Mapping):
                raise TypeError(f"imports[{name!r}] must be a mapping of export names to values")
            modules[name] = _wrap(ns, name, 0, set())
        self._modules = modules
        glob = {} if globals is None else globals
        if not isinstance(glob, Mapping):
            raise TypeError("globals must be a mapping of names to values")
        plain: dict[str, Any] = {}
        hidden: dict[str, Any] = {}
        for name, value in glob.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"global names must be identifiers, not {name!r}")
            if isinstance(value, Fetch):
                if name != "fetch":
                    raise ValueError(f"a bridge.Fetch is the global 'fetch', not {name!r}")
                # the guest's own fetch reads it; the program cannot (sandbox.host.HIDDEN_GLOBALS)
                hidden[HIDDEN_GLOBALS + name] = _wrap(value.exports(), name, 1, set())
            else:
                plain[name] = value
        self._globals: Mapping[str, Any] = {**_wrap(plain, "", 0, set()), **hidden}

    @property
    def modules(self) -> Mapping[str, Mapping[str, Any]]:
        return self._modules

    @property
    def globals(self) -> Mapping[str, Any]:
        return self._globals

    def calls(self) -> _Calls:
        return _Calls(self._quotas)


def _expand(value: Any, path: str) -> Any:
    if isinstance(value, Fetch):
        raise TypeError(
            f"{path or 'a value'}: a bridge.Fetch goes in globals={{'fetch': Fetch(...)}}"
        )
    if isinstance(value, Capability) and not isinstance(value, Mapping | type):
        exported = value.exports()
        if not isinstance(exported, Mapping):
            raise TypeError(f"{path}.exports() must return a mapping")
        return exported
    return value


def _wrap(value: Any, name: str, depth: int, seen: set[int]) -> Any:
    """``value`` with every callable replaced by a :class:`HostFunction` named for its path."""
    value = _expand(value, name)
    if isinstance(value, _Synchronous):
        return _host_function(value.fn, name, sync_js=True)
    if callable(value) and not isinstance(value, type):
        return _host_function(value, name)
    if depth >= _MAX_DEPTH or id(value) in seen:
        return value  # the sandbox refuses it with the path
    if isinstance(value, Mapping):
        seen.add(id(value))
        try:
            return {
                k: _wrap(v, f"{name}.{k}" if name else str(k), depth + 1, seen)
                for k, v in value.items()
            }
        finally:
            seen.discard(id(value))
    if isinstance(value, list | tuple):
        seen.add(id(value))
        try:
            return [_wrap(v, f"{name}[{i}]", depth + 1, seen) for i, v in enumerate(value)]
        finally:
            seen.discard(id(value))
    return value


def _host_function(fn: Callable[..., Any], name: str, *, sync_js: bool = False) -> HostFunction:
    return HostFunction(name, fn, is_async_callable(fn), build_validator(fn, name), sync_js=sync_js)
