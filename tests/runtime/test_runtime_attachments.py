"""Attachments: stored under /attachments/, never altered, linked and returned as refs."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from quickjail import runtime
from quickjail.runtime import AttachmentRef, ThreadState, ToolAttachment, ToolResult, define_tool
from quickjail.runtime._paths import attachment_name

pytestmark = pytest.mark.anyio

PNG = bytes(range(256)) * 64  # 16 KiB of "image", must come back byte for byte


async def _make_chart(state: ThreadState) -> ToolResult:
    chart = ToolAttachment.from_bytes("chart.png", "image/png", PNG, width=4000, height=3000)
    existing = await state.write_file("/notes/old.txt", "old", mime_type="text/plain")
    return ToolResult.success("drawn", attachments=[chart, existing])


CHART = define_tool(description="Draw a chart.", execute=_make_chart, name="chart")


async def test_attachment_lands_under_attachments_and_comes_back_as_a_ref(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime(tools=[CHART]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls(
            [{"type": "tool_use", "id": "c", "name": "chart", "input": {}}]
        )
        new, existing = result.attachments
        assert isinstance(new, AttachmentRef) and isinstance(existing, AttachmentRef)
        assert existing.id.startswith("file_") and existing.path == "/notes/old.txt"
        assert new.model_dump(exclude={"id"}) == {
            "type": "file",
            "path": "/attachments/chart.png",
            "name": "chart.png",
            "mime_type": "image/png",
            "size": len(PNG),
            "width": 4000,
            "height": 3000,
            "description": None,
        }
        assert await thread.state.read_file(new.path) == PNG  # not downsampled or re-encoded
        assert await thread.state.list_files("/attachments") == ["/attachments/chart.png"]
        (message,) = [
            m for m in await runtime.helpers.get_messages(thread.state) if m.kind == "tool_result"
        ]
        assert message.content["attachments"] == [
            new.model_dump(mode="json"),
            existing.model_dump(mode="json"),
        ]
    with sqlite3.connect(db_path) as conn:
        (linked,) = conn.execute("SELECT message_id FROM files WHERE id = ?", (new.id,)).fetchone()
    conn.close()
    assert linked == message.id


async def test_same_name_twice_gets_a_distinct_path(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(tools=[CHART]) as rt:
        thread = await rt.thread()
        call = {"type": "tool_use", "id": "c", "name": "chart", "input": {}}
        first, second = await thread.execute_tool_calls([call, call])
    assert first.attachments[0].path == "/attachments/chart.png"  # type: ignore[union-attr]
    assert second.attachments[0].path == "/attachments/chart-1.png"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\photo.jpg", "photo.jpg"),
        ("..", "attachment"),
        ("", "attachment"),
        (".hidden", "hidden"),
        ("résumé 2024.pdf", "resume_2024.pdf"),
        ("a\x00b.png", "a_b.png"),
        ("x" * 300 + ".png", "x" * 116 + ".png"),
    ],
    ids=["traversal", "windows", "dotdot", "empty", "hidden", "unicode", "nul", "long"],
)
def test_attachment_names_are_sanitized(given: str, stored: str) -> None:
    assert attachment_name(given) == stored
