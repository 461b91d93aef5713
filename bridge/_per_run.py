"""What capabilities keep for one run, found from inside its host calls.

A capability's host functions are shared by every run that uses its table, so state kept on
the capability is shared too: one run could exhaust or evict what another holds (a fetch
ticket, an open response). Such state lives here instead, on the run's host-call state
(``HostTable.calls()``, one per run), and is closed when the run ends (``aclose``, which the
sandbox awaits on the run's event loop).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from quickjail.sandbox.host import current_calls

__all__ = ["PerRun", "current"]

T = TypeVar("T")


class PerRun:
    """One run's objects, one per capability that asked (by identity)."""

    __slots__ = ("_held", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, tuple[object, object]] = {}

    def get(self, owner: object, make: Callable[[], T]) -> T:
        """The object ``owner`` keeps for this run, made by ``make()`` on its first use."""
        with self._lock:
            held = self._held.get(id(owner))
            if held is None or held[0] is not owner:
                held = (owner, make())
                self._held[id(owner)] = held
            return held[1]  # type: ignore[return-value]  # make() made it for this owner

    async def aclose(self) -> None:
        """The run ended: close what was kept for it (each object's ``aclose``, if it has
        one), and forget it. Idempotent."""
        with self._lock:
            held = [obj for _, obj in self._held.values()]
            self._held.clear()
        for obj in held:
            close = getattr(obj, "aclose", None)
            if close is not None:
                await close()


def current() -> PerRun | None:
    """The :class:`PerRun` of the run whose host function is executing here, or None outside a
    run of a bridge table (a host function called directly from Python)."""
    held = getattr(current_calls(), "per_run", None)
    return held if isinstance(held, PerRun) else None
