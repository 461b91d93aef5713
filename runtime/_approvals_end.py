"""Ending a waiting batch without a decision: expiry and ``thread.abandon`` (issue 26 item 5).

An ended pause does not resume: the pause goes ``waiting`` → ``ending`` (one transaction, so
it cannot also be resumed), each of its pending calls gets the error result
``expired: ...``/``abandoned: ...``, then, for an abandoned code-mode program, the ``revert``
of each tool the program called successfully runs, newest first (each once: a revert that
raises is reported and the next one still runs). The waiting call (the top-level call, or the
code-mode call) gets the error result with, for code mode, ``{"reverted": [...], "calls":
[...]}`` as its value; the batch's later calls get ``not run`` error results; the pause
closes. A process that ends midway leaves ``ending``: ``recover_approvals`` finishes the
results and does not call a revert again.
"""

from __future__ import annotations

import time
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from ._approvals import _fail_call, _step, _store_result
from ._approvals_data import approval_context, open_blob, started, stored_result
from ._calls import ParsedCall
from ._result import ToolResult
from ._store_approvals import (
    PauseRow,
    claim_approval,
    close_pause,
    ending_pause,
    expired_pauses,
    find_approval,
    select_approvals,
    select_pause,
)
from .errors import ApprovalDecidedError, StoredRunError

if TYPE_CHECKING:
    from ._state import ThreadCore

__all__ = ["Ending", "abandon", "expire", "finish_ending"]

Ending = Literal["expired", "abandoned"]


async def expire(core: ThreadCore) -> None:
    """End every waiting batch of the thread with an approval pending past the timeout."""
    timeout = core.approval_timeout
    if timeout is None:
        return
    ids = await core.store.transact(
        core.thread_id, 0, partial(expired_pauses, core.thread_id, time.time() - timeout)
    )
    for pause_id in ids:
        if await core.store.transact(core.thread_id, 0, partial(ending_pause, pause_id)):
            reason = f"not decided within {timeout:g} seconds"
            await finish_ending(core, pause_id, "expired", reason, revert=False)


async def abandon(core: ThreadCore, approval_id: str, reason: str) -> ToolResult:
    """End the batch an approval belongs to, on purpose (reverting a program's calls).

    Raises:
        UnknownApprovalError: No such approval on this thread.
        ApprovalDecidedError: The batch was ended, decided or moved on already.
    """
    row = await core.store.transact(
        core.thread_id, 0, partial(find_approval, core.thread_id, approval_id)
    )
    if row.state != "pending" or not await core.store.transact(
        core.thread_id, 0, partial(ending_pause, row.pause_id)
    ):
        raise ApprovalDecidedError(
            f"approval {approval_id!r}: its batch was decided, ended or moved on already"
        )
    _step("ending")
    return await finish_ending(core, row.pause_id, "abandoned", reason, revert=True)


async def finish_ending(
    core: ThreadCore, pause_id: str, how: Ending, reason: str, *, revert: bool
) -> ToolResult:
    """Store the results of an ``ending`` pause (see the module docstring); returns the
    waiting call's result."""
    pause = await core.store.transact(
        core.thread_id, 0, partial(select_pause, core.thread_id, pause_id)
    )
    assert pause is not None
    text = f"{how}: {core.redactor.text(reason)}"
    rows = await core.store.transact(
        core.thread_id, 0, partial(select_approvals, core.thread_id, pause.id, "pending")
    )
    for row in rows:
        claim = partial(
            claim_approval,
            core.thread_id,
            row.id,
            how,
            reason,
            None,
            {"status": "error", "error": text},
        )
        try:
            await _store_result(core, row, ToolResult.failure(text), claim)
        except ApprovalDecidedError:
            continue  # recorded before a process ended
    batch = open_blob(core, pause.payload, approval_context(core, "batch", pause.id), "batch")
    value: dict[str, Any] | None = None
    if pause.kind == "code":
        reverted = await _revert(core, pause, batch.get("made", [])) if revert else []
        if not revert and how == "abandoned":  # recovering: reverts are not called again
            reverted = [{"status": "unknown", "error": "interrupted; reverts not run again"}]
        value = {"reverted": reverted, "calls": batch.get("calls", [])}
    result = ToolResult.failure(text, result=value)
    first = await _store_waiting(core, pause, result)
    for q in batch.get("queued", []):
        if not await started(core, q["call_id"]):
            call = ParsedCall(q["call_id"], q["name"], q["arguments"], q["raw"], q["error"])
            await _fail_call(
                core, call, f"not run: the batch ended ({how}) at call {pause.call_id}"
            )
    await core.store.transact(core.thread_id, 0, partial(close_pause, pause.id))
    return first


async def _store_waiting(core: ThreadCore, pause: PauseRow, result: ToolResult) -> ToolResult:
    """The waiting top-level call's result (code mode: the code-mode call's), stored once."""
    from ._thread import persist

    if pause.kind == "tool":  # its approval's result is the call's result
        return await stored_result(core, pause.call_id)
    try:
        return await stored_result(core, pause.call_id)
    except StoredRunError:  # not stored yet (the usual case)
        call = ParsedCall(pause.call_id, pause.tool_name, None)
        return await persist(core, core.redact_result(result), call, None)


async def _revert(
    core: ThreadCore, pause: PauseRow, made: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Call each revert, newest call first; a failure is reported, the rest still run."""
    from ._approvals import _tools_of

    tools = _tools_of(core, pause)
    out: list[dict[str, Any]] = []
    for entry in reversed(made):
        report: dict[str, Any] = {"call_id": entry.get("call_id"), "tool": entry.get("tool")}
        tool = tools.get(str(entry.get("tool")))
        if entry.get("dropped") or tool is None or tool.revert is None:
            out.append({**report, "status": "error", "error": "not revertible (not recorded)"})
            continue
        state = core.root._bind(tool, str(entry.get("call_id")))
        try:
            args = tool.parse_args(entry.get("arguments"))
            await tool.revert(state, args, entry.get("result"))
        except Exception as exc:
            error = core.redactor.text(f"{type(exc).__name__}: {exc}")
            out.append({**report, "status": "error", "error": error})
        else:
            out.append({**report, "status": "success", "error": None})
    return out
