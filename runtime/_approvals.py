"""Approvals: a call to a ``requires_approval`` tool waits for a person, across restarts.

A top-level call that needs approval stops its batch: its ``tool_call`` message and every
earlier result are stored, the call gets a ``"waiting"`` result naming its approval id, and
the batch's later calls are stored (encrypted) behind it. In code mode the program's call
pauses the program (``bridge.Pause``); the sealed continuation is stored encrypted with the
runtime's AES-GCM key, and the code-mode call waits the same way.

The order of writes, which makes a decision take effect at most once (see
``_store_approvals`` for the states); each step is one transaction:

1. *decided*: ``pending`` → ``approved`` (or, for a rejection, ``settled`` together with the
   call's error result message). A second decision finds the row decided and is refused.
2. *running*: ``approved`` → ``running``, then the tool runs.
3. *settled*: the tool's result message and ``running`` → ``settled``, together.
4. code mode only, *resuming*: the pause goes ``waiting`` → ``resuming``, then the program
   resumes with the stored results; its outcome (the code-mode call's result message, or a
   new continuation if it paused again) is stored with the pause's next state.
5. the batch's later calls run as in any batch (a call whose ``tool_call`` message exists was
   started before and is not run again); the pause closes when they are done, or in the same
   transaction that stores the next pause of the batch.

``Thread.recover_approvals`` finishes what a process that ended midway left: an ``approved``
call runs; a ``running`` one (the tool may or may not have had its effect) is recorded as
interrupted and never run again; a settled call's program resumes; a program left
``resuming`` is recorded as interrupted (what it did after the resume is not redone).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from quickjail import bridge

from ._approvals_data import (
    ApprovalDenied,
    Parked,
    PendingApproval,
    approval_context,
    record_call,
)
from ._approvals_data import open_blob as _open
from ._approvals_data import queued_calls as _queued
from ._approvals_data import seal as _seal
from ._approvals_data import started as _started
from ._approvals_data import stored_result as _stored_result
from ._calls import ParsedCall
from ._result import ToolResult
from ._store import dumps
from ._store_approvals import (
    ApprovalRow,
    NewApproval,
    PauseRow,
    claim_approval,
    close_pause,
    find_approval,
    insert_pause,
    mark_running,
    resumed_pause,
    resuming_pause,
    select_approvals,
    select_pause,
    select_pauses,
    settle_approval,
)
from .errors import ApprovalDecidedError, SecretKeyError, StoredRunError

if TYPE_CHECKING:
    from ._state import ThreadCore
    from ._tool import Tool

__all__ = [
    "ApprovalDenied",
    "Parked",
    "PendingApproval",
    "abandon_approval",
    "approval_context",
    "approve",
    "park",
    "pending_approvals",
    "recover",
    "reject",
    "wait_for_approval",
]


#: Test-only: called with each step's name ("decided", "running", "tool_ran", "settled",
#: "resumed", and "ending" in ``_approvals_end``) so a test can end the process there. None
#: (nothing is called) in production.
STEP_HOOK: Callable[[str], None] | None = None


def _step(name: str) -> None:
    if STEP_HOOK is not None:
        STEP_HOOK(name)


def wait_for_approval(
    core: ThreadCore, call: ParsedCall, parent_call_id: str | None
) -> ToolResult | str:
    """Make ``call`` wait for approval: its approval joins the waiting top-level call's.

    Returns:
        The call's ``"waiting"`` result, or why it cannot wait (the call then fails).
    """
    top = parent_call_id if parent_call_id is not None else call.call_id
    parked = core.parked.get(top)
    if parent_call_id is not None:
        if parked is None or parked.kind != "code":
            return f"tool {call.name!r} needs approval, which only a code-mode program can wait for"
        if core.box is None:
            return (
                f"tool {call.name!r} needs approval; inside code mode that needs "
                "Runtime(secret_key=...) (the paused program is stored encrypted)"
            )
    approval_id = f"apr_{uuid.uuid4().hex[:24]}"
    sealed = _seal(core, call.arguments, approval_context(core, "arguments", approval_id))
    if sealed is None:
        return (
            f"tool {call.name!r} needs approval, but its arguments hold a secret value and the "
            "runtime has no secret_key to store them encrypted while they wait"
        )
    if parked is None:
        parked = core.parked[top] = Parked("tool", call.name)
    shown = core.redactor.value(call.arguments)
    parked.approvals.append(
        NewApproval(approval_id, call.call_id, parent_call_id, call.name, shown, sealed)
    )
    message = f"waiting for approval {approval_id} (tool {call.name!r})"
    return ToolResult.waiting([approval_id], message).model_copy(
        update={"call_id": call.call_id, "tool_name": call.name}
    )


async def park(
    core: ThreadCore, waiting: ToolResult, rest: list[ParsedCall], closing: str | None
) -> None:
    """Store the waiting call's pause, its approvals and the batch's ``rest`` (one
    transaction, which also closes ``closing``, the pause this batch continued from)."""
    assert waiting.call_id is not None
    parked = core.parked.pop(waiting.call_id)
    context = approval_context(core, "batch", parked.pause_id)
    log = {"calls": parked.calls, "made": parked.made, "raw": parked.raw}
    payload = _seal(core, {"queued": _queued(rest), **log}, context)
    if payload is None:  # a later call's arguments hold a secret and there is no key
        payload = _seal(core, {"queued": [], **log}, context)
        assert payload is not None
        for call in rest:
            refused = "not run: it waited behind an approval, and its arguments hold a secret "
            refused += "the runtime cannot store without secret_key"
            await _fail_call(core, call, refused)
    continuation = None
    if parked.continuation is not None:
        assert core.box is not None
        context = approval_context(core, "continuation", parked.pause_id)
        continuation = core.box.encrypt_bytes(parked.continuation, context)
    row = PauseRow(
        parked.pause_id,
        core.thread_id,
        waiting.call_id,
        parked.tool_name,
        parked.kind,
        "waiting",
        payload,
        continuation,
        0.0,
    )
    nbytes = len(payload) + len(continuation or b"")
    nbytes += sum(len(a.sealed) + len(dumps(a.arguments)) for a in parked.approvals)
    await core.store.transact(
        core.thread_id, nbytes, partial(insert_pause, row, parked.approvals, closing)
    )


async def _fail_call(core: ThreadCore, call: ParsedCall, error: str) -> None:
    from ._thread import run_call

    await run_call(core, replace(call, error=error))


async def close(core: ThreadCore, pause_id: str) -> None:
    """Close a pause whose batch finished."""
    await core.store.transact(core.thread_id, 0, partial(close_pause, pause_id))


async def pending_approvals(core: ThreadCore) -> list[PendingApproval]:
    """The thread's approvals waiting for a decision, oldest first (expired ones end)."""
    from ._approvals_end import expire

    async with core.batch_lock:
        await expire(core)
    rows = await core.store.transact(
        core.thread_id, 0, partial(select_approvals, core.thread_id, None, "pending")
    )
    return [
        PendingApproval(
            r.id, r.thread_id, r.tool_name, r.arguments, r.call_id, r.parent_call_id, r.created_at
        )
        for r in rows
    ]


def _check_id(approval_id: object) -> str:
    if not isinstance(approval_id, str) or not approval_id or len(approval_id) > 64:
        raise TypeError("an approval id is a non-empty str (from pending_approvals)")
    return approval_id


def _check_text(value: object, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 4096:
        raise TypeError(f"{what} must be a str of at most 4096 characters or None")
    return value


async def approve(core: ThreadCore, approval_id: str, decided_by: str | None) -> list[ToolResult]:
    """Approve a waiting call: it runs once, then the program or batch goes on."""
    approval_id = _check_id(approval_id)
    decided_by = _check_text(decided_by, "decided_by")
    from ._approvals_end import expire

    async with core.batch_lock:
        await expire(core)
        await _verify(core, approval_id)
        claim = partial(
            claim_approval, core.thread_id, approval_id, "approved", None, decided_by, None
        )
        row = await core.store.transact(core.thread_id, 0, claim)
        _step("decided")
        return await _advance(core, row.pause_id, recovering=False)


async def reject(
    core: ThreadCore, approval_id: str, reason: str, decided_by: str | None
) -> list[ToolResult]:
    """Reject a waiting call: its result is the error ``rejected: reason``; then it goes on."""
    approval_id = _check_id(approval_id)
    reason = _check_text(reason, "reason") or "no reason given"
    decided_by = _check_text(decided_by, "decided_by")
    from ._approvals_end import expire

    async with core.batch_lock:
        await expire(core)
        row = await _verify(core, approval_id)
        result = ToolResult.failure(f"rejected: {core.redactor.text(reason)}")
        claim = partial(
            claim_approval,
            core.thread_id,
            approval_id,
            "rejected",
            reason,
            decided_by,
            {"status": "error", "error": result.error},
        )
        await _store_result(core, row, result, claim)
        _step("decided")
        return await _advance(core, row.pause_id, recovering=False)


async def _verify(core: ThreadCore, approval_id: str) -> ApprovalRow:
    """Before a decision: the approval exists here, and what it will need from the database
    (its arguments, the paused program) passes its checks, so a refused blob runs nothing.

    Raises:
        UnknownApprovalError: No such approval on this thread.
        StoredRunError: A stored blob fails its check.
    """
    row = await core.store.transact(
        core.thread_id, 0, partial(find_approval, core.thread_id, approval_id)
    )
    pause = await core.store.transact(
        core.thread_id, 0, partial(select_pause, core.thread_id, row.pause_id)
    )
    if row.state == "pending":
        _open(core, row.sealed, approval_context(core, "arguments", row.id), "call arguments")
    if pause is not None and pause.state == "waiting":
        _open(core, pause.payload, approval_context(core, "batch", pause.id), "batch")
        if pause.kind == "code":
            _continuation(core, pause)
    return row


def _continuation(core: ThreadCore, pause: PauseRow) -> bytes:
    """The paused program's sealed bytes, decrypted.

    Raises:
        StoredRunError: None stored, no key, wrong key or edited by hand.
    """
    if pause.continuation is None or core.box is None:
        raise StoredRunError(
            f"the paused program of call {pause.call_id!r} is not stored, or this runtime has "
            "no secret_key to decrypt it"
        )
    context = approval_context(core, "continuation", pause.id)
    try:
        return core.box.decrypt_bytes(pause.continuation, context)
    except SecretKeyError:
        raise StoredRunError(
            "the stored program fails its check: wrong secret_key, or edited by hand"
        ) from None


async def recover(core: ThreadCore) -> list[ToolResult]:
    """Finish decided approvals a process that ended left unfinished (module docstring)."""
    from ._approvals_end import Ending, expire, finish_ending

    async with core.batch_lock:
        results: list[ToolResult] = []
        pauses = await core.store.transact(
            core.thread_id, 0, partial(select_pauses, core.thread_id)
        )
        for pause in pauses:
            rows = await _approvals_of(core, pause.id)
            if pause.state == "ending":
                ended = [r.decision for r in rows if r.decision in ("expired", "abandoned")]
                how: Ending = "expired" if "expired" in ended else "abandoned"
                reason = "the process ended while the batch was being ended"
                results.append(await finish_ending(core, pause.id, how, reason, revert=False))
                continue
            started = any(r.state in ("approved", "running") for r in rows)
            decided = rows and all(r.state == "settled" for r in rows)
            if started or decided or pause.state in ("resuming", "resumed"):
                results += await _advance(core, pause.id, recovering=True)
        await expire(core)
        return results


async def abandon_approval(core: ThreadCore, approval_id: str, reason: str) -> ToolResult:
    """End the batch ``approval_id`` waits in, on purpose (see ``_approvals_end``)."""
    from ._approvals_end import abandon, expire

    approval_id = _check_id(approval_id)
    reason = _check_text(reason, "reason") or "no reason given"
    async with core.batch_lock:
        await expire(core)
        return await abandon(core, approval_id, reason)


async def _approvals_of(core: ThreadCore, pause_id: str) -> list[ApprovalRow]:
    return await core.store.transact(
        core.thread_id, 0, partial(select_approvals, core.thread_id, pause_id, None)
    )


async def _store_result(
    core: ThreadCore,
    row: ApprovalRow,
    result: ToolResult,
    also: Callable[[sqlite3.Connection], object],
) -> ToolResult:
    """Store a waiting call's result message with the approval's state change, at once."""
    from ._thread import persist

    call = ParsedCall(row.call_id, row.tool_name, None)
    return await persist(core, core.redact_result(result), call, row.parent_call_id, also=also)


def _tools_of(core: ThreadCore, pause: PauseRow) -> dict[str, Tool]:
    if pause.kind == "code":
        code_tool = core.tools.get(pause.tool_name)
        resumer = getattr(code_tool, "_resumer", None)
        return dict(resumer.tools) if resumer is not None else {}
    return dict(core.tools)


async def _run_approved(core: ThreadCore, pause: PauseRow, row: ApprovalRow) -> None:
    """Steps 2 and 3: mark it running, run the tool, store its result and settle."""
    arguments = _open(
        core, row.sealed, approval_context(core, "arguments", row.id), "call arguments"
    )
    tool = _tools_of(core, pause).get(row.tool_name)
    ran = await core.store.transact(core.thread_id, 0, partial(mark_running, row.id))
    if not ran:
        return
    _step("running")
    seconds = None
    if tool is None:
        result = ToolResult.failure(f"tool {row.tool_name!r} is no longer available; not run")
    else:
        started = time.monotonic()
        try:
            result = await tool.call(arguments, core.root._bind(tool, row.call_id))
        except Exception as exc:  # Tool.call returns failures; the net for what it misses
            result = ToolResult.failure(f"tool {row.tool_name!r} failed: {type(exc).__name__}")
        seconds = round(time.monotonic() - started, 6)
    _step("tool_ran")
    summary = {"status": result.status, "error": result.error, "duration_s": seconds}
    await _store_result(core, row, result, partial(settle_approval, row.id, summary, None))
    _step("settled")


async def _interrupt(core: ThreadCore, row: ApprovalRow) -> None:
    """A call left ``running`` by a process that ended: recorded, never run again."""
    error = (
        "interrupted: the process ended while this approved call ran; it is not run again "
        "(it may or may not have had its effect)"
    )
    summary = {"status": "error", "error": error}
    also = partial(settle_approval, row.id, summary, "interrupted")
    await _store_result(core, row, ToolResult.failure(error), also)


async def _advance(core: ThreadCore, pause_id: str, *, recovering: bool) -> list[ToolResult]:
    """Carry a pause forward as far as its decisions allow (steps 2-5)."""
    from ._state import AbortSignal

    pause = await core.store.transact(
        core.thread_id, 0, partial(select_pause, core.thread_id, pause_id)
    )
    if pause is None or pause.state == "closed":
        raise ApprovalDecidedError(f"the batch of pause {pause_id!r} moved on already")
    for row in await _approvals_of(core, pause.id):
        if row.state == "approved":
            await _run_approved(core, pause, row)
        elif row.state == "running" and recovering:
            await _interrupt(core, row)
    rows = await _approvals_of(core, pause.id)
    waiting = [r.id for r in rows if r.state != "settled"]
    if waiting:
        message = f"waiting for approval {', '.join(waiting)}"
        return [
            ToolResult.waiting(waiting, message).model_copy(
                update={"call_id": pause.call_id, "tool_name": pause.tool_name}
            )
        ]
    if pause.kind == "tool" or pause.state == "resumed":
        first = await _stored_result(core, pause.call_id)
    else:
        first = await _resume(core, pause, rows, recovering)
        if first.status == "waiting":
            return [first]
    batch = _open(core, pause.payload, approval_context(core, "batch", pause.id), "batch")
    queued = [
        ParsedCall(q["call_id"], q["name"], q["arguments"], q["raw"], q["error"])
        for q in batch.get("queued", [])
        if not await _started(core, q["call_id"])
    ]
    from ._thread import run_batch

    core.execution.abort_signal = AbortSignal()
    core.pending.extend(queued)
    return [first, *await run_batch(core, closing=pause.id)]


async def _resume(
    core: ThreadCore, pause: PauseRow, rows: list[ApprovalRow], recovering: bool
) -> ToolResult:
    """Step 4: resume the paused program with its answers; store what it ends with."""
    from ._codemode_calls import js_result

    code_tool = core.tools.get(pause.tool_name)
    resumer = getattr(code_tool, "_resumer", None)
    claimed = pause.state == "waiting" and await core.store.transact(
        core.thread_id, 0, partial(resuming_pause, pause.id)
    )
    call = ParsedCall(pause.call_id, pause.tool_name, None)
    if not claimed:
        if not recovering:
            raise ApprovalDecidedError(f"the program of pause {pause.id!r} is being resumed")
        error = (
            "interrupted: the process ended while the program ran after its approval; it is "
            "not resumed twice"
        )
        return await _store_code_result(core, pause, ToolResult.failure(error), call)
    if pause.continuation is None or code_tool is None or resumer is None:
        error = f"the paused program of tool {pause.tool_name!r} cannot be resumed here"
        return await _store_code_result(core, pause, ToolResult.failure(error), call)
    context = approval_context(core, "continuation", pause.id)
    assert core.box is not None
    sealed = _continuation(core, pause)
    answers: dict[int, Any] = {}
    batch = _open(core, pause.payload, approval_context(core, "batch", pause.id), "batch")
    raw = set(batch.get("raw", []))  # calls made with { raw: true }: the whole result
    for row in rows:
        if row.run_call is None:
            continue  # an earlier leg's call, answered then
        if row.decision == "rejected":
            answers[row.run_call] = bridge.Rejection(
                f"rejected: {core.redactor.text(row.reason or '')}", name=ApprovalDenied
            )
        else:
            stored = await _stored_result(core, row.call_id)
            if row.id in raw:
                answers[row.run_call] = js_result(stored)
            elif stored.status == "success":
                answers[row.run_call] = stored.result
            else:
                answers[row.run_call] = bridge.Rejection(stored.error or "the tool failed")
    state = core.root._bind(code_tool, pause.call_id)
    parked = Parked("code", pause.tool_name, pause_id=pause.id)
    parked.calls, parked.made = list(batch.get("calls", [])), list(batch.get("made", []))
    parked.raw = list(batch.get("raw", []))
    core.parked[pause.call_id] = parked
    await _log_decided(core, pause, parked, rows)
    try:
        result = await resumer.resume(state, sealed, context, answers)
    finally:
        core.parked.pop(pause.call_id, None)
    _step("resumed")
    if parked.continuation is None:
        return await _store_code_result(core, pause, result, call)
    # it paused again: the new continuation, approvals and call log; the batch's rest stays
    log = {
        "queued": batch.get("queued", []),
        "calls": parked.calls,
        "made": parked.made,
        "raw": parked.raw,
    }
    payload = _seal(core, log, approval_context(core, "batch", pause.id))
    assert payload is not None  # a code-mode pause has a key
    again = replace(
        pause,
        continuation=core.box.encrypt_bytes(parked.continuation, context),
        state="waiting",
        payload=payload,
    )
    nbytes = len(again.continuation or b"") + len(payload)
    nbytes += sum(len(a.sealed) + len(dumps(a.arguments)) for a in parked.approvals)
    await core.store.transact(
        core.thread_id, nbytes, partial(insert_pause, again, parked.approvals, None)
    )
    ids = [a.id for a in parked.approvals]
    waiting = ToolResult.waiting(ids, f"waiting for approval {', '.join(ids)}")
    return waiting.model_copy(update={"call_id": pause.call_id, "tool_name": pause.tool_name})


async def _log_decided(
    core: ThreadCore, pause: PauseRow, parked: Parked, rows: list[ApprovalRow]
) -> None:
    """Add the calls decided since the pause to the program's call log (with the decision,
    who decided and why) before it resumes."""
    tools = _tools_of(core, pause)
    for row in rows:
        if row.run_call is None:
            continue
        tool = tools.get(row.tool_name)
        if tool is None:
            continue
        outcome = row.outcome if isinstance(row.outcome, dict) else {}
        if row.decision == "approved" and outcome.get("status") == "success":
            result = await _stored_result(core, row.call_id)
            context = approval_context(core, "arguments", row.id)
            arguments = _open(core, row.sealed, context, "call arguments")
        else:
            error = outcome.get("error") or f"{row.decision}"
            result, arguments = ToolResult.failure(str(error)), None
        approval = {"id": row.id, "decision": row.decision, "decided_by": row.decided_by}
        if row.reason is not None:
            approval["reason"] = core.redactor.text(row.reason)
        call = ParsedCall(row.call_id, row.tool_name, arguments)
        seconds = outcome.get("duration_s")
        record_call(core, pause.call_id, tool, call, result, seconds, approval)
        if arguments is None:  # the log shows the arguments it waited with
            parked.calls[-1]["arguments"] = row.arguments


async def _store_code_result(
    core: ThreadCore, pause: PauseRow, result: ToolResult, call: ParsedCall
) -> ToolResult:
    """The program's outcome as the code-mode call's result, with the pause ``resumed``."""
    from ._thread import persist

    also = partial(resumed_pause, pause.id)
    return await persist(core, core.redact_result(result), call, None, also=also)
