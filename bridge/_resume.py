"""The public ``resume``: continue a paused run with the host capabilities the caller bridges."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from quickjail import sandbox
from quickjail.bridge._errors import ResumeError
from quickjail.bridge._quotas import Quotas
from quickjail.bridge._table import BridgeTable
from quickjail.sandbox import durable
from quickjail.sandbox.errors import ContinuationError
from quickjail.sandbox.errors import ResumeError as SandboxResumeError
from quickjail.sandbox.host import DEFAULT_MEMORY_LIMIT, Executor, blocking

__all__ = ["resume", "resume_sync"]


def resume(
    sealed: bytes,
    *,
    key: bytes,
    context: bytes = b"",
    answers: Mapping[int, Any],
    imports: Mapping[str, Any] | None = None,
    globals: Mapping[str, Any] | None = None,
    report: Callable[[Any], Any] | None = None,
    timeout: float | None = None,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
    max_age: float | None = None,
    executor: Executor | None = None,
) -> sandbox.CodeExecution:
    """Continue a paused run exactly where it stopped, in this process or any other.

    Nothing runs again: the guest's memory and the run's host state come from the sealed
    bytes, and each paused call's promise settles with its answer. The run then goes on as
    any run (it may pause again); ``await`` the handle for its ``CodeResult``.

    Args:
        sealed: what ``CodeResult.continuation.seal(key, context)`` gave.
        key: the key it was sealed with (at least 32 bytes).
        context: the context it was sealed with.
        answers: ``{call id: value}`` for every paused call (``CodeResult.paused``); a
            :class:`Rejection` rejects the call's promise with its message.
        imports: the same bare-specifier modules as the paused run's (same names, same order).
        globals: the same globals as the paused run's.
        report: called with each ``report(value)`` from now on (sync or async callable).
        timeout: seconds for the rest of the run (a fresh deadline); None for none.
        memory_limit_bytes: the resumed run's memory cap; the paused memory must fit in it,
            and the sealed bytes are refused unless smaller than about this cap (before
            anything is checked or inflated).
        max_age: refuse a continuation sealed longer ago than this many seconds.
        executor: where the resumed run executes: None (this process) or one of
            ``quickjail.executors``, whichever the run paused on; the sealed bytes are
            opened here and the key never leaves this process.

    Returns:
        The run's handle, as ``run_code``'s.

    Raises:
        ContinuationError: the sealed bytes were refused (too large, truncated, wrong key or
            tampered, another context, format version or guest build, too old).
        ResumeError: a missing or extra host function, an answer for a call that is not
            paused, a paused call left unanswered.
        TypeError, ValueError: an option is wrong; an answer cannot cross into the guest.
    """
    opened = durable.open_continuation(
        sealed, key=key, context=context, memory_limit_bytes=memory_limit_bytes, max_age=max_age
    )
    usage = opened.continuation.state.get("quotas")
    quotas = Quotas()
    if isinstance(usage, dict) and isinstance(usage.get("limits"), dict):
        try:
            quotas = Quotas(**usage["limits"])
        except (TypeError, ValueError) as exc:
            raise ContinuationError(
                f"cannot resume this continuation: its quotas do not fit ({exc})",
                reason="tampered",
            ) from None
    host = BridgeTable(imports, globals, quotas) if imports or globals else None
    try:
        return durable.resume(
            opened,
            answers=answers,
            host=host,
            report=report,
            timeout=timeout,
            executor=executor,
        )
    except SandboxResumeError as exc:
        raise ResumeError(str(exc)) from None


resume_sync = blocking(resume)
