"""The MCP connector against published servers, run over stdio as their users run them: the
reference ``time`` server from PyPI (``mcp-server-time``, pinned in the ``dev`` extra), and the
reference ``everything`` server from npm (``@modelcontextprotocol/server-everything``, pinned
with integrity hashes in ``tests/mcp_everything_server/package-lock.json`` and installed with
``npm ci`` into a cache directory keyed by the lockfile's hash: under ``$QUICKJAIL_CACHE_DIR``
when set, else pytest's cache). Without Node or npm the npm server's tests fail, saying so."""

from __future__ import annotations

import importlib.util
import sys
from datetime import datetime
from pathlib import Path

import pytest
from _mcp_support import by_name
from npm_support import npm_install, require_node

from quickjail.runtime import connectors

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]
EVERYTHING = Path(__file__).resolve().parents[2] / "mcp_everything_server"


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


@pytest.fixture(scope="session")
def everything_server(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> list[str]:
    """The command running the pinned ``everything`` server over stdio."""
    what = "to run the reference MCP server 'everything'"
    node, _ = require_node(what)
    target = npm_install(EVERYTHING, "mcp-everything", pytestconfig, tmp_path_factory, what)
    script = target / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
    return [node, str(script / "index.js"), "stdio"]


async def test_the_reference_everything_servers_tools_answer_as_values(
    everything_server: list[str],
) -> None:
    async with connectors.mcp("everything", command=everything_server, timeout=60) as srv:
        tools = by_name(await srv.tools())
        assert tools["get_sum"].title == "get-sum"  # a dashed name, mapped
        assert "MCP tool name: 'get-sum'" in tools["get_sum"].description
        assert (await tools["echo"].call({"message": "hi"})).result == "Echo: hi"
        total = await tools["get_sum"].call({"a": 2, "b": 3})
        assert total.result == "The sum of 2 and 3 is 5."
        weather = await tools["get_structured_content"].call({"location": "New York"})
        assert weather.status == "success", weather.error
        assert set(weather.result) == {"temperature", "conditions", "humidity"}
        assert tools["get_structured_content"].output_schema is not None


async def test_an_image_beside_text_is_an_attachment_of_the_call(
    everything_server: list[str],
) -> None:
    async with connectors.mcp("everything", command=everything_server, timeout=60) as srv:
        tools = by_name(await srv.tools())
        image = await tools["get_tiny_image"].call({})
        assert image.status == "success", image.error
        assert isinstance(image.result, str) and "image" in image.result
        (attachment,) = image.attachments
        assert attachment.mime_type == "image/png"
        assert attachment.content().startswith(b"\x89PNG")
