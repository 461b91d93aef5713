"""Routing the guest's imports to the run that owns it.

Host imports are defined once per process on the engine's shared linker, so each import finds
its run through a thread-local: the worker thread executing a guest binds the run first. Epoch
callbacks find theirs through a registry keyed by the integer each store was created with.
"""

from __future__ import annotations

import struct
import threading
from typing import Any, Protocol

from quickjail.sandbox import _capi
from quickjail.sandbox._abi import E_HOST, WASI_EBADF
from quickjail.sandbox._native import BadPointer, NativeInstance

__all__ = [
    "EPOCH_CALLBACK",
    "HostRouter",
    "badf_import",
    "bind",
    "clock_import",
    "current",
    "host_import",
    "register",
    "stores",
]

_U64 = struct.Struct("<Q")


class HostRouter(Protocol):
    """What the engine needs from whoever owns the guest executing on a worker thread."""

    @property
    def instance(self) -> NativeInstance: ...

    def on_host(self, op: int, a: int, b: int, c: int, d: int) -> int: ...

    def clock_ns(self, clock_id: int) -> int: ...

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


def clock_import(args: Any, _n: int) -> None:
    """WASI ``clock_time_get``: the router's clock, written into that guest's own memory."""
    router: HostRouter | None = getattr(_current, "router", None)
    if router is None:
        args[0].i32 = WASI_EBADF
        return
    clock_id, out = args[0].i32, args[2].i32 & 0xFFFFFFFF
    try:
        router.instance.write(out, _U64.pack(router.clock_ns(clock_id) & 0xFFFFFFFFFFFFFFFF))
    except BadPointer:
        args[0].i32 = WASI_EBADF
        return
    args[0].i32 = 0


def badf_import(args: Any, _n: int) -> None:
    """Every other WASI import: "bad file descriptor" (the guest has no files)."""
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
