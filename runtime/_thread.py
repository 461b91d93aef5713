"""A thread and the execution of a model's tool calls against it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio

from ._calls import ParsedCall, parse_call
from ._paths import attachment_name
from ._result import AttachmentRef, ToolAttachment, ToolResult
from ._state import AbortSignal, ThreadCore, ThreadState
from ._store import dumps
from ._store_files import NewFile
from .errors import ThreadQuotaError

if TYPE_CHECKING:
    from ._approvals import PendingApproval
    from ._runtime import Runtime
    from ._tool import Tool

__all__ = ["Thread", "persist", "run_batch", "run_call", "stored_arguments"]

_MAX_NAMES_SHOWN: Final = 20
#: A nested (code-mode) call's arguments are stored cut to this many characters of JSON.
MAX_NESTED_ARGUMENT_CHARS: Final = 16_384


class Thread:
    """One conversation: its :class:`ThreadState` and the execution of tool calls.

    Obtained from ``await runtime.thread(...)``; lives as long as its runtime is open.
    """

    __slots__ = ("_core", "_runtime")

    def __init__(self, core: ThreadCore, runtime: Runtime) -> None:
        """Wrap a thread core; use ``Runtime.thread``."""
        self._core = core
        self._runtime = runtime

    def __repr__(self) -> str:
        return f"<Thread {self._core.thread_id!r}>"

    @property
    def thread_id(self) -> str:
        """The thread's id."""
        return self._core.thread_id

    @property
    def parent_id(self) -> str | None:
        """The parent thread's id, for a child thread."""
        return self._core.parent_id

    @property
    def state(self) -> ThreadState:
        """The thread's top-level state."""
        return self._core.root

    async def child(
        self,
        thread_id: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
        agent_config: Mapping[str, Any] | None = None,
        tools: Iterable[Tool] | None = None,
    ) -> Thread:
        """Create (or reopen) a child thread: ``runtime.thread(thread_id, parent=self, ...)``.

        The child inherits this thread's variables, layers, ``agent_config`` and (unless
        ``tools`` is given) tools; see :meth:`Runtime.thread`.
        """
        return await self._runtime.thread(
            thread_id, env=env, agent_config=agent_config, tools=tools, parent=self
        )

    async def copy_attachments(
        self, refs: Sequence[AttachmentRef], *, to: Thread
    ) -> list[AttachmentRef]:
        """Copy attachments of this thread into another thread's ``/attachments/``.

        Each file is copied (secrets of either thread redacted) under a free name of the
        receiving thread; the returned refs carry its new ids and paths, in order.

        Raises:
            ThreadPathError: A ref's path is malformed.
            ThreadFileNotFoundError: A ref names no file of this thread, or one of another size.
            ValueError: ``to`` belongs to another runtime.
        """
        if not isinstance(to, Thread) or to._core.store is not self._core.store:
            raise ValueError("attachments are copied between threads of one runtime")
        items = list(refs)
        if any(not isinstance(r, AttachmentRef) for r in items):
            raise TypeError("refs must be AttachmentRef objects")
        source, target = self._core.redactor, to._core.redactor

        def redact(data: bytes) -> bytes:
            return target.data(source.data(data))

        return await self._core.store.copy_attachments(
            self._core.thread_id, items, to._core.thread_id, redact
        )

    async def execute_tool_calls(self, calls: Iterable[object]) -> list[ToolResult]:
        """Run a model's tool calls in order, then any queued ones, persisting each result.

        Each call is validated and run sequentially; its call and result are stored as messages
        before the next call starts. Failures (unknown tool, invalid JSON or arguments, missing
        variables, a tool that raises) become error results and never halt the batch. Calls of
        provider-executed tools are left to the provider and produce no result here. One batch
        counts as one turn. Cancelling the caller sets the abort signal, records the running
        call as cancelled, drops the calls not yet started and propagates.

        Args:
            calls: OpenAI Responses (``function_call``), OpenAI Chat (``{"id", "function"}``),
                Anthropic (``tool_use``) or neutral (``{"id", "name", "arguments"}``, arguments
                as an object or JSON text) tool calls, as dicts or SDK objects.

        Returns:
            The results (``call_id`` and ``tool_name`` set), in execution order.
        """
        if isinstance(calls, (Mapping, str, bytes)):
            raise TypeError("execute_tool_calls takes a list of tool calls")
        parsed = [parse_call(call) for call in calls]
        core = self._core
        async with core.batch_lock:
            core.turn_count = await core.store.bump_turn(core.thread_id)
            core.execution.step_count = 0
            core.execution.abort_signal = AbortSignal()
            queued = list(core.pending)
            core.pending.clear()
            core.pending.extend(parsed)
            core.pending.extend(queued)
            return await run_batch(core)

    async def pending_approvals(self) -> list[PendingApproval]:
        """The calls of this thread waiting for a decision, oldest first.

        Each has its approval id, the tool, its validated arguments (secrets redacted), when
        it started waiting, its call id and, inside code mode, the code-mode call's id.
        """
        from ._approvals import pending_approvals

        return await pending_approvals(self._core)

    async def approve(self, approval_id: str, *, decided_by: str | None = None) -> list[ToolResult]:
        """Approve a waiting call: the tool runs (once), then the batch or program goes on.

        Args:
            approval_id: From :meth:`pending_approvals` (or the waiting result).
            decided_by: Who or what decided, kept with the decision.

        Returns:
            The results the batch produced from there, in order: the approved call's (or,
            inside code mode, the code-mode call's: the program's outcome), then the later
            calls'. The last is ``"waiting"`` again if the batch stopped at another approval.

        Raises:
            UnknownApprovalError: No such approval on this thread.
            ApprovalDecidedError: It was approved or rejected already (nothing runs).
            StoredRunError: The stored call or program fails its checks (nothing runs).
        """
        from ._approvals import approve

        return await approve(self._core, approval_id, decided_by)

    async def reject(
        self, approval_id: str, reason: str = "", *, decided_by: str | None = None
    ) -> list[ToolResult]:
        """Reject a waiting call: its result is the error ``rejected: reason``; inside code
        mode the call's promise rejects with an ``ApprovalDenied`` error the program can
        catch. Then the batch or program goes on, as :meth:`approve`'s.

        Raises:
            UnknownApprovalError, ApprovalDecidedError, StoredRunError: As :meth:`approve`.
        """
        from ._approvals import reject

        return await reject(self._core, approval_id, reason, decided_by)

    async def abandon(self, approval_id: str, reason: str = "") -> ToolResult:
        """End the batch this approval waits in, without deciding it.

        Its pending calls get the error result ``abandoned: reason``; for a code-mode
        program, the ``revert`` of every tool it called successfully runs, newest first
        (reported in the code-mode call's result: ``{"reverted": [...], "calls": [...]}``;
        a revert that raises is reported and the others still run); the batch's later calls
        are not run (error results). The program is not resumed.

        Returns:
            The waiting call's result (the code-mode call's, inside code mode).

        Raises:
            UnknownApprovalError: No such approval on this thread.
            ApprovalDecidedError: Its batch was decided, ended or moved on already.
        """
        from ._approvals import abandon_approval

        return await abandon_approval(self._core, approval_id, reason)

    async def recover_approvals(self) -> list[ToolResult]:
        """Finish decisions a process that ended midway left unfinished (call at start-up,
        when no other process works on this thread's approvals).

        An approved call not started runs; one that was running is recorded as interrupted
        and not run again; a decided program resumes; the batch's later calls run.

        Returns:
            The results produced, in order.
        """
        from ._approvals import recover

        return await recover(self._core)


async def run_batch(core: ThreadCore, closing: str | None = None) -> list[ToolResult]:
    """Run ``core.pending`` in order until it is empty or a call waits for approval.

    A waiting call stores its pause with the calls behind it (and closes ``closing``, the
    pause this batch continued from, in the same transaction).
    """
    results: list[ToolResult] = []
    try:
        while core.pending:
            result = await run_call(core, core.pending.popleft())
            if result is None:
                continue
            results.append(result)
            if result.status == "waiting":
                from ._approvals import park

                rest = list(core.pending)
                core.pending.clear()
                try:
                    await park(core, result, rest, closing)
                except ThreadQuotaError as exc:  # it cannot wait: an error result, and on
                    call = ParsedCall(result.call_id or "", result.tool_name or "", None)
                    failure = ToolResult.failure(f"cannot wait for approval: {exc}")
                    results[-1] = await persist(core, failure, call, None)
                    core.pending.extend(rest)
                    continue
                return results
    except BaseException:
        core.pending.clear()
        raise
    if closing is not None:
        from ._approvals import close

        await close(core, closing)
    return results


async def run_call(
    core: ThreadCore,
    call: ParsedCall,
    *,
    tool: Tool | None = None,
    parent_call_id: str | None = None,
) -> ToolResult | None:
    """Run one call and persist it: a ``tool_call`` message, then a ``tool_result`` message.

    Returns:
        The stored result, or ``None`` for a provider-executed tool (not run locally).
    """
    if tool is None:
        tool = core.tools.get(call.name)
    if tool is not None and tool.execution_mode == "provider":
        return None
    core.execution.step_count += 1
    arguments = call.arguments if call.arguments is not None else call.raw_arguments
    known = len(core.redactor)
    nested = parent_call_id is not None
    stored = await core.store.add_message(
        core.thread_id,
        "assistant",
        "tool_call",
        _stored_call(core, call.name, arguments, nested),
        tool_call_id=call.call_id,
        tool_name=call.name or None,
        parent_call_id=parent_call_id,
    )
    signal = core.execution.abort_signal
    if (
        call.error is None
        and tool is not None
        and not signal.aborted
        and tool.requires_approval is not False
        and await tool.approval_needed(call.arguments, core.root._bind(tool, call.call_id))
    ):
        from ._approvals import wait_for_approval

        waiting = wait_for_approval(core, call, parent_call_id)
        if isinstance(waiting, ToolResult):
            return waiting
        return await persist(core, ToolResult.failure(waiting), call, parent_call_id)
    try:
        if call.error is not None:
            result = ToolResult.failure(call.error)
        elif signal.aborted:
            result = ToolResult.failure(f"not run: execution aborted ({signal.reason})")
        elif tool is None:
            result = ToolResult.failure(_unknown_tool(core, call.name))
        else:
            result = await tool.call(call.arguments, core.root._bind(tool, call.call_id))
    except anyio.get_cancelled_exc_class():
        if parent_call_id is None:
            # a nested (code-mode) call is cancelled when its program ends with the call in
            # flight: that ends the call, not the model's batch
            signal.abort("cancelled")
        core.parked.pop(call.call_id, None)  # a cancelled program waits for nothing
        with anyio.CancelScope(shield=True):
            cancelled = ToolResult.failure("cancelled while running")
            await persist(core, cancelled, call, parent_call_id)
        raise
    except Exception as exc:  # Tool.call returns failures; this is the net for what it misses
        result = ToolResult.failure(f"tool {call.name!r} failed: {type(exc).__name__}")
    if len(core.redactor) != known:  # the tool registered a secret (maybe one of its arguments)
        redacted = _stored_call(core, call.name, arguments, nested)
        await core.store.replace_content(core.thread_id, stored.id, redacted)
    parked = core.parked.get(call.call_id)
    if parked is not None and parked.continuation is not None:  # a code-mode program paused
        ids = [a.id for a in parked.approvals]
        waiting = ToolResult.waiting(ids, f"the program waits for approval {', '.join(ids)}")
        return waiting.model_copy(update={"call_id": call.call_id, "tool_name": call.name})
    core.parked.pop(call.call_id, None)
    return await persist(core, core.redact_result(result), call, parent_call_id)


def _stored_call(
    core: ThreadCore,
    name: str,
    arguments: Any,
    nested: bool,
    limit: int = MAX_NESTED_ARGUMENT_CHARS,
) -> dict[str, Any]:
    """The content of a ``tool_call`` message: the tool's name and arguments, secrets redacted.

    A nested (code-mode) call's arguments longer than ``MAX_NESTED_ARGUMENT_CHARS`` as JSON
    are stored as the start of that JSON, ending with a note of how much was cut, and
    ``"arguments_truncated": true``: a program can make calls in a loop with arguments as
    large as the sandbox can build, and the thread's database is not where they belong. The
    call itself gets its whole arguments. Redaction comes first, so a cut never splits a
    secret out of sight of the redactor.
    """
    content: dict[str, Any] = core.redactor.value({"name": name, "arguments": arguments})
    if nested:
        text = dumps(content["arguments"])
        if len(text) > limit:
            cut = len(text) - limit
            content["arguments"] = (
                f"{text[:limit]}… [truncated: {cut} of {len(text)} "
                "characters of JSON arguments not stored]"
            )
            content["arguments_truncated"] = True
    return content


def stored_arguments(core: ThreadCore, name: str, arguments: Any, limit: int) -> Any:
    """A nested call's arguments as a log keeps them (secrets redacted, cut past ``limit``
    characters of JSON)."""
    return _stored_call(core, name, arguments, True, limit)["arguments"]


def _unknown_tool(core: ThreadCore, name: str) -> str:
    local = sorted(n for n, t in core.tools.items() if t.execution_mode == "local")
    shown = ", ".join(local[:_MAX_NAMES_SHOWN]) + (", ..." if len(local) > _MAX_NAMES_SHOWN else "")
    return f"unknown tool {name!r}; available: {shown or '(none)'}"


async def persist(
    core: ThreadCore,
    result: ToolResult,
    call: ParsedCall,
    parent_call_id: str | None,
    *,
    also: Callable[[sqlite3.Connection], object] | None = None,
) -> ToolResult:
    """Store a call's result message (and its new attachments); ``also`` runs in the same
    transaction (an approval's state change).

    A code-mode answer whose call log would take the thread past its quota is stored with
    the log left out (``calls_omitted`` says how many entries); the quota error stands if
    even that does not fit.
    """
    try:
        return await _persist(core, result, call, parent_call_id, also)
    except ThreadQuotaError:
        answer = result.result
        if not isinstance(answer, dict) or not answer.get("calls"):
            raise
        slim = {**answer, "calls": [], "calls_omitted": len(answer["calls"])}
        return await _persist(
            core, result.model_copy(update={"result": slim}), call, parent_call_id, also
        )


async def _persist(
    core: ThreadCore,
    result: ToolResult,
    call: ParsedCall,
    parent_call_id: str | None,
    also: Callable[[sqlite3.Connection], object] | None,
) -> ToolResult:
    items: list[AttachmentRef | NewFile] = []
    for item in result.attachments:
        if isinstance(item, ToolAttachment):
            data = core.redactor.data(item.content())
            name = attachment_name(item.name)
            items.append(NewFile(name, data, item.mime_type, item.width, item.height))
        else:
            items.append(item)
    content = {
        "status": result.status,
        "result": result.result,
        "error": result.error,
        "stack": result.stack,
    }
    _, refs = await core.store.add_tool_result(
        core.thread_id,
        content,
        items,
        tool_call_id=call.call_id,
        tool_name=call.name or None,
        parent_call_id=parent_call_id,
        also=also,
    )
    attachments: list[ToolAttachment | AttachmentRef] = list(refs)
    return result.model_copy(
        update={"attachments": attachments, "call_id": call.call_id, "tool_name": call.name or None}
    )
