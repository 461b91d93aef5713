"""Routing the guest's imports to the run that owns it.

Host imports are defined once per process on the engine's shared linker, so each import finds
its run through a thread-local: the worker thread executing a guest binds the run first. Epoch
callbacks find theirs through a registry keyed by the integer each store was created with. The
clock is no Python import: the host library reads the run's :attr:`HostRouter.clock` through
the store's data pointer.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from quickjail.sandbox import _capi
from quickjail.sandbox._abi import E_HOST, WASI_EBADF
from quickjail.sandbox._hostlib import ClockState

__all__ = [
    "EPOCH_CALLBACK",
    "HostRouter",
    "badf_import",
    "bind",
    "current",
    "host_import",
    "register",
    "stores",
]


class HostRouter(Protocol):
    """What the engine needs from whoever owns the guest executing on a worker thread."""

    @property
    def clock(self) -> ClockState:
        """The guest's clock (the store's data, read by the host library)."""
        ...

    def on_host(self, op: int, a: int, b: int, c: int, d: int) -> int: ...

    def should_stop(self) -> bool: ...


_current = threading.local()


def bind(router: HostRouter | None) -> None:
    """Bind the router that owns the guest executing on this thread (None to unbind)."""
    _current.router = router


def current() -> HostRouter | None:
    """The router bound on this thread."""
    router: HostRouter | None = getattr(_current, "router", None)
    return router


def host_import(args: Any, _n: int) -> None:
    """``qj.host(op, a, b, c, d) -> i64``: one crossing, dispatched by the bound router."""
    router: HostRouter | None = getattr(_current, "router", None)
    if router is None:
        args[0].i64 = E_HOST
        return
    args[0].i64 = router.on_host(args[0].i32, args[1].i32, args[2].i32, args[3].i32, args[4].i32)


def badf_import(args: Any, _n: int) -> None:
    """Every WASI import but the clock (:mod:`._hostlib`): "bad file descriptor" (the guest has
    no files)."""
    args[0].i32 = WASI_EBADF


# Epoch decisions: the engine's epoch only advances when some run must stop; each store's
# callback then asks its router whether its run is the one.


class _Stores:
    """Routers by store key, for the epoch callback (which gets only the key)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routers: dict[int, HostRouter] = {}
        self._next = 1

    def add(self, router: HostRouter) -> int:
        with self._lock:
            key = self._next
            self._next += 1
            self._routers[key] = router
            return key

    def remove(self, key: int) -> None:
        with self._lock:
            self._routers.pop(key, None)

    def get(self, key: int) -> HostRouter | None:
        return self._routers.get(key)


stores = _Stores()
register = stores.add


def _epoch_cb(_ctx: Any, data: int | None, delta: Any, kind: Any) -> int:
    router = stores.get(data or 0)
    if router is None or router.should_stop():
        err: int | None = _capi.lib.wasmtime_error_new(b"quickjail: run stopped")
        return err or 0
    delta[0] = 1
    kind[0] = 0  # continue
    return 0


EPOCH_CALLBACK = _capi.EPOCH_CALLBACK_TYPE(_epoch_cb)
