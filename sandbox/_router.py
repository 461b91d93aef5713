"""Routing the guest's imports and epoch callbacks to the run that owns it.

Host imports are defined once per process on the engine's shared linker. ``qj.host`` and the
clock are C functions of the host library: they find their run through the store's data
pointer, the run's :attr:`HostRouter.store_data`, whose ``owner`` the run sets. Epoch
callbacks find theirs through a registry keyed by the integer each store was created with.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from quickjail.sandbox import _capi
from quickjail.sandbox._abi import WASI_EBADF
from quickjail.sandbox._hostlib import StoreData

__all__ = [
    "EPOCH_CALLBACK",
    "HostRouter",
    "badf_import",
    "register",
    "stores",
]


class HostRouter(Protocol):
    """What the engine needs from whoever owns a guest instance."""

    @property
    def store_data(self) -> StoreData:
        """The store's data: the guest's clock, and the owner ``qj.host`` calls."""
        ...

    def on_host(
        self, op: int, a: int, b: int, c: int, d: int, view: memoryview | None
    ) -> int | bytes:
        """Answer ``qj.host(op, a, b, c, d)``; ``view`` is the span ``(b, c)`` for an op that
        passes one inside memory (released when this returns: copy what is kept), else None.
        A bytes answer is copied to the scratch buffer and its length is the guest's answer."""
        ...

    def should_stop(self) -> bool: ...


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
