"""The exceptions of ``quickjail.executors`` (the tree is drawn in the package docstring)."""

from __future__ import annotations

__all__ = ["ExecutorClosed", "ExecutorError", "QueueFull", "WorkerStartError"]


class ExecutorError(Exception):
    """Root of the exceptions an executor raises (a dead worker is an outcome, not one)."""


class ExecutorClosed(ExecutorError):
    """The executor was closed: it takes no more runs, and runs waiting for it get this."""


class QueueFull(ExecutorError):
    """Every worker is busy and ``max_queued`` runs already wait: back off and retry."""


class WorkerStartError(ExecutorError):
    """Worker processes die before they are ready (a broken installation, no memory)."""
