"""The MCP connector's listing of a hostile or long server (names that are no identifiers or
collide, deep, recursive and huge schemas, thousands of tools over pages, a cursor that never
ends), its arguments, its value rules, and its use from several event loops."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _mcp_support import by_name, server_command

from quickjail.runtime import connectors
from quickjail.runtime.connectors import _mcp_values
from quickjail.runtime.connectors._mcp_values import (
    MAX_DESCRIPTION,
    result_attachments,
    result_value,
)
from quickjail.runtime.connectors._schemas import MAX_DEPTH
from quickjail.runtime.errors import ConnectorError, ToolDefinitionError

pytestmark = pytest.mark.timeout(180)


def depth(schema: Any) -> int:
    if isinstance(schema, dict):
        return 1 + max((depth(v) for v in schema.values()), default=0)
    if isinstance(schema, list):
        return 1 + max((depth(v) for v in schema), default=0)
    return 0


@pytest.mark.anyio
async def test_foreign_names_map_to_distinct_identifiers_and_calls_reach_the_original() -> None:
    async with connectors.mcp("gh", command=server_command("hostile"), timeout=60) as gh:
        tools = by_name(await gh.tools())
        mapped = {name: tools[name].title for name in tools if tools[name].title}
        assert mapped == {
            "create_issue": "create-issue",
            "create_issue_2": "create_issue",
            "_2fa": "2fa",
            "class_": "class",
        }
        assert "MCP tool name: 'create_issue'" in tools["create_issue_2"].description
        reached = await tools["create_issue_2"].call({})
        assert reached.result == "called create_issue with {}"
        reached = await tools["create_issue"].call({})
        assert reached.result == "called create-issue with {}"
        assert (await tools["class_"].call({})).result == "called class with {}"


@pytest.mark.anyio
async def test_deep_recursive_and_huge_schemas_and_descriptions_are_kept_bounded() -> None:
    async with connectors.mcp("gh", command=server_command("hostile"), timeout=60) as gh:
        tools = by_name(await gh.tools())
        deep = tools["deep"].input_schema
        assert deep["type"] == "object" and depth(deep) <= 2 * MAX_DEPTH + 4
        tree = tools["recursive"].input_schema["properties"]["tree"]
        assert tree["properties"]["children"] == {"type": "array", "items": {}}  # cycle cut
        huge = tools["huge"]
        assert huge.input_schema == {"type": "object"}
        assert "too large to keep" in huge.description
        assert len(huge.description) < MAX_DESCRIPTION + 200
        assert "characters cut" in huge.description
        for tool in tools.values():  # every declaration renders
            assert tool.typescript_declaration


@pytest.mark.anyio
async def test_thousands_of_tools_are_listed_over_pages_up_to_max_tools() -> None:
    async with connectors.mcp("many", command=server_command("many:3000"), timeout=60) as srv:
        tools = await srv.tools()
        assert len(tools) == 3000 and tools[2999].name == "tool_2999"
    async with connectors.mcp(
        "many", command=server_command("many:3000"), timeout=60, max_tools=1000
    ) as srv:
        with pytest.raises(ConnectorError, match=r"lists more than 1,000 tools \(max_tools\)"):
            await srv.tools()


@pytest.mark.anyio
async def test_a_listing_past_the_budget_of_kept_characters_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_mcp_values, "MAX_LISTING_CHARS", 50_000)  # 3,000 tools keep ~180,000
    async with connectors.mcp("many", command=server_command("many:3000"), timeout=60) as srv:
        with pytest.raises(ConnectorError, match="describes its tools in over 50,000 characters"):
            await srv.tools()


@pytest.mark.anyio
async def test_a_listing_whose_cursor_never_ends_is_refused() -> None:
    async with connectors.mcp("loop", command=server_command("endless"), timeout=60) as srv:
        with pytest.raises(ConnectorError, match="repeated a page cursor"):
            await srv.tools()


def test_the_connector_is_usable_from_two_event_loops_one_after_the_other() -> None:
    srv = connectors.mcp("srv", command=server_command(), timeout=60)
    try:

        async def use() -> Any:
            tools = by_name(await srv.tools())
            return (await tools["pid"].call({})).result["pid"]

        first = anyio.run(use, backend="asyncio")
        second = anyio.run(use, backend="trio")
        assert first == second  # the session lives in the connector's loop, not the caller's
    finally:
        srv.close()


def test_bad_arguments_are_a_tool_definition_error() -> None:
    bad: list[dict[str, Any]] = [
        {},
        {"command": ["x"], "url": "http://127.0.0.1/mcp"},
        {"command": "python server.py"},
        {"command": []},
        {"command": ["x", 1]},
        {"url": "ftp://host/mcp"},
        {"url": "http://127.0.0.1/mcp", "env": {"A": "1"}},
        {"command": ["x"], "headers": {"A": "1"}},
        {"command": ["x"], "timeout": 0},
        {"command": ["x"], "timeout": float("nan")},
        {"command": ["x"], "max_tools": 0},
        {"command": ["x"], "env": {"A": 1}},
    ]
    for options in bad:
        with pytest.raises(ToolDefinitionError):
            connectors.mcp("srv", **options)
    with pytest.raises(ToolDefinitionError):
        connectors.mcp("search", command=["x"])  # a name code mode defines
    with pytest.raises(ToolDefinitionError):
        connectors.mcp("not-an-identifier", command=["x"])


def text_value(*texts: str) -> Any:
    result = types.CallToolResult(content=[types.TextContent(text=t) for t in texts])
    return result_value("s", "t", result, 100_000)


def test_text_is_read_as_json_only_when_it_is_json_data() -> None:
    assert text_value("true") is True and text_value("null") is None
    assert text_value(" [1] ") == [1] and text_value('{"a":', "1}") == {"a": 1}
    assert text_value("nothing") == "nothing" and text_value("{bad") == "{bad"
    assert text_value("NaN") == "NaN" and text_value("1e400") == "1e400"
    deep = "[" * 50_000 + "]" * 50_000  # past the parser's recursion limit: kept as text
    assert text_value(deep) == deep
    assert result_value("s", "t", types.CallToolResult(content=[]), 10) is None


def test_non_text_blocks_are_the_value_only_without_text_or_structured_content() -> None:
    image = types.ImageContent(data="AAAA", mime_type="image/png")
    alone = types.CallToolResult(content=[image])
    assert result_value("s", "t", alone, 1000) == [
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    ]
    with_text = types.CallToolResult(content=[image, types.TextContent(text="a cat")])
    assert result_value("s", "t", with_text, 1000) == "a cat"
    structured = types.CallToolResult(
        content=[types.TextContent(text="ignored")], structured_content={"n": 1}
    )
    assert result_value("s", "t", structured, 1000) == {"n": 1}


def test_without_the_sdk_the_connector_names_the_extra_to_install() -> None:
    script = (
        "import sys; sys.modules['mcp'] = None\n"
        "from quickjail.runtime import connectors\n"
        "try:\n"
        "    connectors.mcp('srv', command=['x'])\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ConnectorError MCP connector 'srv' needs the MCP SDK")
    assert "quickjail[connectors]" in done.stdout


RAW = Path(__file__).resolve().parent / "_mcp_raw_server.py"


def raw_server(mode: str) -> list[str]:
    return [sys.executable, str(RAW), "--mode", mode]


@pytest.mark.anyio
async def test_a_listing_mcp_does_not_allow_is_refused_naming_what_is_wrong() -> None:
    for mode, wrong in (("odd-schemas", "inputSchema.properties"), ("not-a-listing", "tools")):
        async with connectors.mcp("raw", command=raw_server(mode), timeout=60) as raw:
            with pytest.raises(ConnectorError) as caught:
                await raw.tools()
            message = str(caught.value)
            assert "MCP server 'raw' listed its tools in a form MCP does not allow" in message
            assert wrong in message


@pytest.mark.anyio
async def test_tools_with_an_empty_or_overlong_name_are_left_out() -> None:
    async with connectors.mcp("raw", command=raw_server("odd-names"), timeout=60) as raw:
        tools = await raw.tools()
        assert [t.name for t in tools] == ["ok"]
        assert (await tools[0].call({})).result == "fine"


@pytest.mark.anyio
async def test_an_answer_that_is_no_tool_result_fails_the_call_and_lines_not_json_are_skipped() -> (
    None
):
    async with connectors.mcp("raw", command=raw_server("not-a-result"), timeout=60) as raw:
        (ok,) = await raw.tools()
        result = await ok.call({})
        assert result.status == "error"
        assert "tool 'ok' of MCP server 'raw' answered something that is not a tool result" in (
            result.error or ""
        )
    async with connectors.mcp("raw", command=raw_server("garbage"), timeout=60) as raw:
        (ok,) = await raw.tools()
        assert (await ok.call({})).result == "fine"


def test_images_audio_and_binary_resources_are_attachments_and_bad_ones_are_left_out() -> None:
    blob = types.BlobResourceContents(uri="file:///r.bin", blob="AAEC", mime_type=None)
    result = types.CallToolResult(
        content=[
            types.TextContent(text="three files"),
            types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
            types.AudioContent(data="UklGRg==", mime_type="audio/wav"),
            types.EmbeddedResource(resource=blob),
            types.ImageContent(data="not base64!", mime_type="image/png"),
            types.ImageContent(data="AAAA", mime_type="no mime type"),
        ]
    )
    found = result_attachments("shot", result)
    assert [(a.name, a.mime_type) for a in found] == [
        ("shot-2.png", "image/png"),
        ("shot-3.wav", "audio/wav"),
        ("shot-4.bin", "application/octet-stream"),
    ]
    assert found[2].content() == b"\x00\x01\x02"
