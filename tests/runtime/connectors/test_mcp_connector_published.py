"""The MCP connector against a published server: the reference ``time`` server from PyPI
(``mcp-server-time``, pinned in the ``dev`` extra), run over stdio as its users run it."""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime

import pytest
from _mcp_support import by_name

from quickjail.runtime import connectors

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


@pytest.fixture
def time_server() -> list[str]:
    if importlib.util.find_spec("mcp_server_time") is None:
        pytest.fail(
            "these tests need the published MCP time server: pip install -e '.[dev]' (it pins "
            "mcp-server-time)"
        )
    return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


async def test_the_published_time_servers_tools_answer_as_values(time_server: list[str]) -> None:
    async with connectors.mcp("time", command=time_server, timeout=60) as time:
        tools = by_name(await time.tools())
        assert {"get_current_time", "convert_time"} <= set(tools)
        assert "timezone: string" in tools["get_current_time"].typescript_declaration

        now = await tools["get_current_time"].call({"timezone": "Asia/Tokyo"})
        assert now.status == "success", now.error
        assert now.result["timezone"] == "Asia/Tokyo"
        assert datetime.fromisoformat(now.result["datetime"]).utcoffset() is not None
        assert now.result["is_dst"] is False  # Japan keeps no daylight saving time

        moved = await tools["convert_time"].call(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert moved.status == "success", moved.error
        assert moved.result["target"]["datetime"].endswith("T21:00:00+09:00")
        assert moved.result["time_difference"] == "+9.0h"


async def test_the_published_time_servers_errors_fail_the_call_with_its_message(
    time_server: list[str],
) -> None:
    async with connectors.mcp("time", command=time_server, timeout=60) as time:
        tools = by_name(await time.tools())
        wrong = await tools["get_current_time"].call({"timezone": "Nowhere/Land"})
        assert wrong.status == "error"
        assert "Invalid timezone" in (wrong.error or "")
        missing = await tools["convert_time"].call({"source_timezone": "UTC"})
        assert missing.status == "error" and "invalid arguments" in (missing.error or "")
