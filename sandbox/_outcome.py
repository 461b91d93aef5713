"""Deciding a run's status from host facts, never from the text of a JS error.

The facts: the status code the guest returned (or None when it trapped), the trap itself
(stack overflow, out of fuel), whether a stop was requested and why, whether the guest's
allocator reported a failure in this run, and the outcome message the guest sent, if any, with
the guest's record of whether the run's error is the value an allocation failure threw (its
``oom`` field, set by our C code, never read from the thrown value).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from quickjail.sandbox._abi import OUT_LINK_ERROR, OUT_VALUE, QJ_FAIL, QJ_PENDING
from quickjail.sandbox._native import GuestStopped
from quickjail.sandbox._result import ErrorInfo, Status, error_from_guest

__all__ = ["Outcome", "decide"]


class Outcome:
    """The status of a run and what goes with it (read-only by contract; a plain class because
    a frozen dataclass costs about a millisecond of every process's first run to build)."""

    __slots__ = ("error", "reason", "result", "status")

    def __init__(
        self,
        status: Status,
        *,
        result: Any = None,
        error: ErrorInfo | None = None,
        reason: str | None = None,
    ) -> None:
        self.status: Final = status
        self.result: Final = result
        self.error: Final = error
        self.reason: Final = reason


def decide(
    status_code: int | None,
    *,
    trap: GuestStopped | None,
    stop_reason: str | None,
    oom: bool,
    sent: tuple[int, Any] | None,
    sources: Mapping[str, str | None],
) -> Outcome:
    """The outcome of a run.

    Args:
        status_code: what ``qj_run``/``qj_resume`` returned last; None when the guest trapped.
        trap: the trap, when there was one.
        stop_reason: why a stop was requested (``terminate``, timeout), if it was.
        oom: the guest's allocator reported a failure during this run.
        sent: the ``(kind, payload)`` outcome message the guest sent, if it sent one.
        sources: each file of the run's graph → its user source, for error positions.
    """
    if status_code is None and trap is not None and trap.out_of_fuel:
        return Outcome("terminated", reason="fuel")
    if stop_reason is not None and (status_code in (None, QJ_PENDING) or sent is None):
        return Outcome("terminated", reason=stop_reason)
    if status_code is None:
        if oom:
            return Outcome("memory", error=ErrorInfo("InternalError", "out of memory"))
        return Outcome("error", error=ErrorInfo("InternalError", _trap_message(trap)))
    if status_code == QJ_FAIL or sent is None:
        message = "out of memory" if oom else "the sandbox failed to run the code"
        return Outcome("memory" if oom else "error", error=ErrorInfo("InternalError", message))
    kind, payload = sent
    if kind == OUT_VALUE:
        return Outcome("success", result=payload)
    error = error_from_guest(payload, sources)
    if oom and _thrown_by_allocator(payload):
        # both facts: the allocator failed in this run, and the run's error is the very value
        # that failure threw (the guest's own record, which no property of the value can
        # forge); a program that caught an out-of-memory error and then threw null or its
        # own InternalError('out of memory') has an ordinary error
        return Outcome("memory", error=error)
    return Outcome("link_error" if kind == OUT_LINK_ERROR else "error", error=error)


def _thrown_by_allocator(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("oom") is True


def _trap_message(trap: BaseException | None) -> str:
    if trap is None:
        return "the sandbox stopped unexpectedly"
    if isinstance(trap, GuestStopped) and trap.stack_overflow:
        return "Maximum call stack size exceeded (native stack)"
    text = str(trap)
    return "the sandbox trapped: " + text.splitlines()[0][:200] if text else "the sandbox trapped"
