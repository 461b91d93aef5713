"""Runs started by a run's host functions: stopping a run stops them too.

A sync host function may start a run of its own (``run_code_sync`` inside it), and an async one
may await one. Such a nested run works for the run that called the function, so when that run
is stopped (``terminate``, its timeout, Ctrl-C) the nested run is stopped with it: otherwise
its guest would go on, on some worker thread, after everything that waited for it is gone.
While a host function executes, :data:`calling` names the run that called it; every run
made meanwhile in that context (in this process, or on an executor) is adopted by that run.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from quickjail.sandbox.host import HostCalls

__all__ = ["Children", "Parent", "Stoppable", "adopt", "calling"]


class Stoppable(Protocol):
    """A run's handle: what a parent stops."""

    def terminate(self, reason: str = ...) -> None: ...


class Parent(Protocol):
    """A run whose host functions may start runs (``Run``)."""

    def adopt(self, child: Stoppable) -> None: ...

    @property
    def host_calls(self) -> HostCalls | None:
        """The run's host-call state (``HostTable.calls()``), for ``host.current_calls``."""
        ...


calling: ContextVar[Parent | None] = ContextVar("quickjail_calling_run", default=None)
"""The run whose host function is executing in this context, if any."""


def adopt(child: Stoppable) -> None:
    """Tie ``child`` to the run whose host function is executing here (a no-op outside one)."""
    parent = calling.get()
    if parent is not None:
        parent.adopt(child)


class Children:
    """The runs a run's host functions started (held weakly: a finished one is forgotten)."""

    def __init__(self) -> None:
        self._runs: weakref.WeakSet[Stoppable] = weakref.WeakSet()

    def adopt(self, child: Stoppable, stopping: str | None) -> None:
        """Keep ``child``; stop it at once if its parent is ``stopping`` (the reason) already.
        Called under the parent's lock (a parent never waits for its children's locks the
        other way round, so the order is always parent, then child)."""
        if stopping is None:
            self._runs.add(child)
        else:
            child.terminate(_why(stopping))

    def stop(self, reason: str) -> None:
        """The parent stops for ``reason``: stop every child still going."""
        for child in list(self._runs):
            child.terminate(_why(reason))


def _why(reason: str) -> str:
    return f"the run that started it stopped ({reason})"
