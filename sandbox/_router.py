"""Routing the guest's imports and epoch callbacks to the run that owns it.

Host imports are defined once per process on the engine's shared linker. ``qj.host`` and the
clock are C functions of the host library: they find their run through the store's data
pointer, the run's :attr:`HostRouter.store_data`, whose ``owner`` the run sets. Epoch
callbacks find theirs through a registry keyed by the integer each store was created with.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

from quickjail.sandbox import _capi, _hostlib
from quickjail.sandbox._abi import WASI_EBADF
from quickjail.sandbox._hostlib import StoreData

__all__ = [
    "HostRouter",
    "badf_import",
    "epoch_callback",
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

    def interrupted(self, exc: BaseException) -> None:
        """Keep ``exc`` (raised on this run's thread while its guest ran: a signal handler's)
        for the caller, and stop."""
        ...


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

    def __len__(self) -> int:
        """How many stores are live (a run holds one until it ends)."""
        return len(self._routers)

    def forget(self) -> None:
        """After ``fork``, in the child: the parent's runs do not go on here (their threads
        are gone), and a lock another thread held at the fork stays held."""
        self._lock = threading.Lock()
        self._routers = {}


stores = _Stores()
register = stores.add
os.register_at_fork(after_in_child=stores.forget)


def _decide(key: int) -> int:
    """The epoch callback's question for store ``key``: 1 stops its guest, 0 lets it go on."""
    router = stores.get(key)
    return 1 if router is None or router.should_stop() else 0


def _interrupted(key: int, exc: BaseException) -> None:
    """An exception raised while the epoch callback asked (a signal handler's, such as
    Ctrl-C's ``KeyboardInterrupt``, when the guest runs on the main thread): the store's run
    keeps it and stops."""
    router = stores.get(key)
    if router is not None:
        router.interrupted(exc)


_callback: Any = None


def epoch_callback() -> Any:
    """The stores' epoch deadline callback, the host library's C function (loaded on first
    use): it asks :func:`_decide` and hands an exception to :func:`_interrupted`."""
    global _callback
    if _callback is None:
        _callback = _capi.EPOCH_CALLBACK_TYPE(_hostlib.epoch_callback(_decide, _interrupted))
    return _callback
