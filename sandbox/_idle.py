"""Giving back the pages a parked guest used only while it ran.

While a guest waits (for host calls or timers), its shadow stack and scratch buffer hold
nothing (``EngineState.idle_spans``). Once it has waited ``IDLE_DROP_DELAY``, those pages go
back to the system (``NativeInstance.drop``). Not at once: dropping costs a ``madvise`` (and
TLB shootdowns on every core running a thread of this process) and the next slice faults the
pages in again, which is most of the host CPU time of a quick async host call; one deadline
per run, re-armed while it keeps waking up.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable

from quickjail.sandbox._native import NativeInstance
from quickjail.sandbox._threads import Deadlines

__all__ = ["IDLE_DROP_DELAY", "IdlePages"]

IDLE_DROP_DELAY = 0.02  # seconds a guest waits before its idle pages go back


class IdlePages:
    """One run's idle pages: dropped once its guest has waited long enough, never while a
    slice runs or after the instance was released."""

    __slots__ = (
        "__weakref__",
        "_armed",
        "_at",
        "_deadlines",
        "_inst",
        "_lock",
        "_released",
        "_spans",
    )

    def __init__(
        self,
        instance: NativeInstance,
        deadlines: Deadlines,
        spans: Iterable[tuple[int, int]],
    ) -> None:
        self._inst = instance
        self._deadlines = deadlines
        self._spans = tuple(spans)
        self._lock = threading.Lock()
        self._at: float | None = None  # when the guest last started waiting
        self._armed = False  # a deadline will drop the idle pages
        self._released = False

    def running(self) -> None:
        """A slice starts: a drop still pending must not touch the running guest."""
        with self._lock:
            self._at = None

    def release(self) -> None:
        """The instance goes: a drop still pending is a no-op from now on."""
        with self._lock:
            self._released = True

    def parked(self) -> None:
        """The guest waits: arm the deadline that drops its idle pages (once per run)."""
        now = time.monotonic()
        with self._lock:
            self._at = now
            if self._armed or self._released:
                return
            self._armed = True
        self._deadlines.add(now + IDLE_DROP_DELAY, _weakly(self))

    def drop_if_idle(self) -> None:
        """On the deadline thread: drop the idle pages if the guest is still waiting (else wait
        for its next park, or until it has waited long enough)."""
        now = time.monotonic()
        with self._lock:
            at = self._at
            if at is None or self._released:
                self._armed = False
                return
            if now < at + IDLE_DROP_DELAY:
                again = at + IDLE_DROP_DELAY
            else:
                self._armed = False
                self._inst.drop(self._spans)  # under the lock: no slice starts
                return
        self._deadlines.add(again, _weakly(self))


def _weakly(pages: IdlePages) -> Callable[[], None]:
    """The deadline's callback, which does not keep the run's pages (and instance) alive."""
    ref = weakref.ref(pages)

    def call() -> None:
        target = ref()
        if target is not None:
            target.drop_if_idle()

    return call
