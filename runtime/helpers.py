"""Helpers for tool authors (``quickjail.runtime.helpers``).

Functions over a :class:`~quickjail.runtime.ThreadState`: queue a call, inject or read
messages, emit thread events; :func:`render_results` for provider messages (text) and
:func:`render_content` (images as images, with :class:`TextContent`/:class:`ImageContent`,
the two kinds of :data:`ToolContent`), :func:`result_content` (one result as content);
:class:`RunCodeAnswer`, the answer of every ``run_code`` tool (:func:`run_code_answer`,
:func:`invalid_answer`, :func:`answer_schema`); and the types of ``state.execution``
(:class:`ExecutionState`, :class:`AbortSignal`) and ``state.storage`` (:class:`ThreadStorage`,
:class:`SqlResult`); :func:`discovery_tools`, the ``search``/``describe``/``save_snippet``
tools of a code-mode tool.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Mapping
from typing import Any

from ._answer import RunCodeAnswer, answer_schema, invalid_answer, run_code_answer
from ._calls import ParsedCall, render_results
from ._codemode import discovery_tools
from ._content import ImageContent, TextContent, ToolContent, render_content, result_content
from ._message import Message, Role
from ._state import AbortSignal, ExecutionState, ThreadState
from ._storage import SqlResult, ThreadStorage

__all__ = [
    "AbortSignal",
    "ExecutionState",
    "ImageContent",
    "RunCodeAnswer",
    "SqlResult",
    "TextContent",
    "ThreadStorage",
    "ToolContent",
    "answer_schema",
    "discovery_tools",
    "emit_thread_event",
    "get_messages",
    "inject_message",
    "invalid_answer",
    "queue_tool",
    "render_content",
    "render_results",
    "result_content",
    "run_code_answer",
]

_ROLES = ("system", "user", "assistant", "tool")


def queue_tool(state: ThreadState, name: str, args: Mapping[str, Any] | None = None) -> str:
    """Queue a tool call to run after the current batch's calls (or after the next batch's).

    Args:
        state: Any state of the thread (usually ``state.root_state``).
        name: The tool to call.
        args: Its arguments (validated when it runs).

    Returns:
        The call id the queued call will carry.
    """
    call_id = f"queued_{uuid.uuid4().hex[:24]}"
    arguments = dict(args) if args is not None else {}
    state.root_state._core.pending.append(ParsedCall(call_id, name, arguments, arguments))
    return call_id


async def inject_message(state: ThreadState, content: Any, *, role: Role = "user") -> Message:
    """Append a text message to the thread (secrets redacted) and return it.

    Raises:
        ValueError: Unknown role.
    """
    if role not in _ROLES:
        raise ValueError(f"role must be one of {_ROLES}, got {role!r}")
    core = state._core
    return await core.store.add_message(core.thread_id, role, "text", core.redactor.value(content))


async def get_messages(state: ThreadState, n: int | None = None) -> list[Message]:
    """Return the thread's last ``n`` messages (all when ``None``), oldest first."""
    if n is not None and (not isinstance(n, int) or n < 0):
        raise ValueError("n must be a non-negative int or None")
    return await state._core.store.get_messages(state.thread_id, n)


async def emit_thread_event(state: ThreadState, type: str, data: Any = None) -> None:
    """Record a thread event (e.g. progress for a UI) and pass it to ``Runtime(on_event=...)``.

    The data has secrets redacted before it is stored or delivered.
    """
    if not isinstance(type, str) or not type:
        raise ValueError("an event type must be a non-empty str")
    core = state._core
    clean = core.redactor.value(data)
    await core.store.add_event(core.thread_id, type, clean)
    if core.on_event is not None:
        out = core.on_event(core.thread_id, type, clean)
        if inspect.isawaitable(out):
            await out
