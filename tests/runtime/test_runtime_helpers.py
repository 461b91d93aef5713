"""Builder helpers: inject_message, get_messages, emit_thread_event, queue_tool."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from quickjail import runtime

pytestmark = pytest.mark.anyio


async def test_get_messages_returns_the_last_n_oldest_first(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    for i in range(5):
        await runtime.helpers.inject_message(state, f"m{i}", role="user" if i % 2 else "assistant")
    last = await runtime.helpers.get_messages(state, 2)
    assert [m.content for m in last] == ["m3", "m4"]
    assert [m.role for m in last] == ["user", "assistant"]
    assert [m.content for m in await runtime.helpers.get_messages(state)] == [
        f"m{i}" for i in range(5)
    ]
    assert await runtime.helpers.get_messages(state, 0) == []


async def test_inject_message_refuses_unknown_roles(rt: runtime.Runtime) -> None:
    with pytest.raises(ValueError, match="role"):
        await runtime.helpers.inject_message((await rt.thread()).state, "x", role="robot")  # type: ignore[arg-type]


async def test_thread_events_are_stored_and_delivered_sync_or_async(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    seen: list[tuple[str, str, Any]] = []

    async def on_event(thread_id: str, kind: str, data: Any) -> None:
        seen.append((thread_id, kind, data))

    async with open_runtime(on_event=on_event) as rt:
        state = (await rt.thread("ev")).state
        await runtime.helpers.emit_thread_event(state, "progress", {"done": 1, "of": 3})
    assert seen == [("ev", "progress", {"done": 1, "of": 3})]
    conn = sqlite3.connect(db_path)
    rows = conn.execute("SELECT thread_id, type, data FROM events").fetchall()
    conn.close()
    assert rows == [("ev", "progress", '{"done":1,"of":3}')]


async def test_queue_tool_outside_a_batch_runs_after_the_next_batchs_calls(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def hello(state: runtime.ThreadState) -> runtime.ToolResult:
        return runtime.ToolResult.success("hi")

    tool = runtime.define_tool(description="hi", execute=hello, name="hello")
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        queued_id = runtime.helpers.queue_tool(thread.state, "hello")
        results = await thread.execute_tool_calls(
            [{"type": "tool_use", "id": "first", "name": "hello", "input": {}}]
        )
    assert [r.call_id for r in results] == ["first", queued_id]
