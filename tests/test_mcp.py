"""``quickjail mcp`` serving the plain ``run_code``: a real server subprocess driven by the MCP
SDK's own stdio client (``--tools``: :mod:`test_mcp_tools_server`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP server needs the 'mcp' extra")

from mcp_support import connect, payload, pool_workers  # noqa: E402

from quickjail._mcp import input_schema  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SECRET = "TOP-SECRET-OUTSIDE-THE-ROOT"

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

# The run_code tool's input schema is a contract with every MCP client: a change must show
# up here as a visible diff.
EXPECTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The program: statements (top-level await works; `return` the "
            "result), an async arrow function (called), or an ES module whose default "
            "export is the result (a function export is called with `args`). One "
            "surrounding Markdown code fence is ignored.",
        },
        "kind": {
            "type": "string",
            "enum": ["auto", "module", "script"],
            "default": "auto",
            "description": '"auto" accepts every shape above; "module" only an ES module, '
            '"script" only a classic script (its completion value is the result).',
        },
        "language": {
            "type": "string",
            "enum": ["typescript", "javascript"],
            "default": "typescript",
            "description": "Source language; TypeScript types are stripped before running.",
        },
        "execute_fn": {
            "type": "string",
            "minLength": 1,
            "default": "default",
            "description": "Name of the export to run instead of the default export.",
        },
        "args": {
            "type": "array",
            "items": {},
            "description": "JSON arguments for the exported function, in order.",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds the run may take (capped by the server).",
        },
    },
    "required": ["code"],
    "additionalProperties": False,
}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    (root / "notes.txt").write_text("hello from the host", encoding="utf-8")
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    return root


def test_input_schema_snapshot() -> None:
    assert input_schema() == EXPECTED_SCHEMA


async def test_server_lists_run_code_with_its_input_schema(data_dir: Path) -> None:
    async with connect("--allow-read", str(data_dir)) as session:
        listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {"run_code"}
    tool = tools["run_code"]
    assert tool.input_schema == EXPECTED_SCHEMA
    assert tool.description is not None and 'from "fs"' in tool.description
    assert tool.annotations is not None and tool.annotations.read_only_hint is True


async def test_run_code_returns_the_value_and_reads_an_allowed_file(data_dir: Path) -> None:
    code = """
        import { readFile } from "fs";
        export default async function (name: string, times: number) {
            report("reading " + name);
            console.log("about to read");
            const text = await readFile(name, "utf8");
            return { text, times, bytes: new Uint8Array([104, 105]) };
        }
    """
    async with connect("--allow-read", str(data_dir)) as session:
        result = await session.call_tool("run_code", {"code": code, "args": ["notes.txt", 3]})
    assert result.is_error is False
    data = payload(result)
    assert data == {
        "status": "success",
        "result": {"text": "hello from the host", "times": 3, "bytes": {"$bytes": "aGk="}},
        "error": None,
        "reason": None,
        "reports": ["reading notes.txt"],
        "logs": [{"level": "log", "args": ["about to read"]}],
    }
    assert result.structured_content == data


async def test_model_shaped_code_runs_by_default_and_kind_can_be_chosen() -> None:
    code = "```ts\nconst x: number = 20;\nreturn x * 2;\n```"
    async with connect() as session:
        shaped = await session.call_tool("run_code", {"code": code})
        as_module = await session.call_tool("run_code", {"code": code, "kind": "module"})
        bad = await session.call_tool("run_code", {"code": "1", "kind": "program"})
    assert payload(shaped)["result"] == 40
    assert payload(as_module)["status"] == "error"
    assert payload(bad)["status"] == "invalid_arguments" and "`kind`" in str(payload(bad))


async def test_the_servers_default_kind_is_a_flag() -> None:
    async with connect("--kind", "module") as session:
        listed = await session.list_tools()
        result = await session.call_tool("run_code", {"code": "return 1"})
    assert listed.tools[0].input_schema["properties"]["kind"]["default"] == "module"
    assert payload(result)["status"] == "error"


async def test_execute_fn_and_javascript_language_are_honoured(data_dir: Path) -> None:
    code = "export function main(a, b) { return a * b }"
    async with connect() as session:
        result = await session.call_tool(
            "run_code",
            {"code": code, "language": "javascript", "execute_fn": "main", "args": [6, 7]},
        )
    assert result.is_error is False
    assert payload(result)["result"] == 42


async def test_failing_program_sets_is_error_and_reports_the_position(data_dir: Path) -> None:
    code = 'const n: number = 1;\nexport default () => { throw new RangeError("too far") }\n'
    async with connect() as session:
        result = await session.call_tool("run_code", {"code": code})
    assert result.is_error is True
    data = payload(result)
    assert data["status"] == "error"
    assert data["error"]["name"] == "RangeError"
    assert data["error"]["message"] == "too far"
    # QuickJS places `new RangeError(...)` at the constructor's name
    assert (data["error"]["line"], data["error"]["column"]) == (2, 34)


async def test_traversal_outside_the_allowed_dir_is_refused(data_dir: Path) -> None:
    code = 'import { readFile } from "fs";\nexport default await readFile("../secret.txt", "utf8");'
    async with connect("--allow-read", str(data_dir)) as session:
        result = await session.call_tool("run_code", {"code": code})
    assert result.is_error is True
    text = result.content[0].text  # type: ignore[union-attr]
    assert SECRET not in text
    assert str(data_dir) not in text
    assert payload(result)["status"] == "error"


async def test_without_allow_read_there_is_no_fs_module() -> None:
    async with connect() as session:
        result = await session.call_tool(
            "run_code", {"code": 'import { readFile } from "fs"; export default 1'}
        )
    assert result.is_error is True
    assert payload(result)["status"] == "link_error"


async def test_busy_loop_is_stopped_by_the_server_timeout_cap() -> None:
    async with connect("--timeout", "0.2", "--max-timeout", "0.3") as session:
        result = await session.call_tool(
            "run_code", {"code": "export default (() => { while (true) {} })()", "timeout": 1000}
        )
    assert result.is_error is True
    data = payload(result)
    assert (data["status"], data["reason"]) == ("terminated", "timeout")


INVALID_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("missing-code", {}, "`code` is required"),
    (
        "bad-language",
        {"code": "export default 1", "language": "python"},
        "`language` must be one of",
    ),
    (
        "negative-timeout",
        {"code": "export default 1", "timeout": -1},
        "`timeout` must be a positive number",
    ),
    ("args-not-array", {"code": "export default 1", "args": "x"}, "`args` must be an array"),
    ("unknown-key", {"code": "export default 1", "nope": 1}, "unknown argument(s) nope"),
]


async def test_invalid_arguments_are_a_tool_error_the_model_can_read() -> None:
    # one server for the whole table: starting one costs about a second
    async with connect() as session:
        for case, arguments, message in INVALID_ARGUMENTS:
            result = await session.call_tool("run_code", arguments)
            assert result.is_error is True, case
            data = payload(result)
            assert data["status"] == "invalid_arguments", case
            assert message in data["error"]["message"], case
            assert set(data) == {"status", "result", "error", "reason", "reports", "logs"}


async def test_unknown_tool_is_a_protocol_error() -> None:
    from mcp.shared.exceptions import MCPError

    async with connect() as session:
        with pytest.raises(MCPError, match="unknown tool 'nope'"):
            await session.call_tool("nope", {})


async def test_the_servers_event_loop_runs_while_a_calls_typescript_is_stripped() -> None:
    # run_code erases TypeScript before it returns; for a large source that is a helper
    # process's parse, seconds on adversarial text. The server waits for it on a worker
    # thread: a task of its loop keeps running (it ticked about once before, the loop being
    # blocked in run_code until the call's timeout).
    import anyio
    from mcp import types

    from quickjail._mcp import ServerOptions, _RunCodeTool

    tool = _RunCodeTool(ServerOptions(), None, None)
    code = "f<T>(x," * (400 * 2**10 // 7)
    params = types.CallToolRequestParams(
        name="run_code", arguments={"code": code, "kind": "module", "timeout": 0.5}
    )
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(tick)
        await anyio.sleep(0.01)
        before = ticks
        result = await tool.call_tool(None, params)  # type: ignore[arg-type]  # ctx unused
        during = ticks - before
        tasks.cancel_scope.cancel()
    data = payload(result)
    assert (data["status"], data["reason"]) == ("terminated", "timeout")
    assert during > 20, during


async def test_workers_flag_runs_each_call_in_a_worker_with_the_same_answer(
    data_dir: Path,
) -> None:
    code = """
        import { readFile } from "fs";
        report("r"); console.log("l");
        export default { text: await readFile("notes.txt", "utf8"), n: 6 * 7 };
    """
    async with connect("--allow-read", str(data_dir)) as session:
        here = await session.call_tool("run_code", {"code": code})
    async with connect("--workers", "2", "--allow-read", str(data_dir)) as session:
        pooled = await session.call_tool("run_code", {"code": code})
        workers = pool_workers()
        spin = await session.call_tool(
            "run_code", {"code": "while (true) {}", "timeout": 0.2, "kind": "script"}
        )
    assert pooled.is_error is False
    assert payload(pooled) == payload(here)
    assert payload(pooled)["result"] == {"text": "hello from the host", "n": 42}
    assert len(workers) == 2
    assert spin.is_error is True
    assert (payload(spin)["status"], payload(spin)["reason"]) == ("terminated", "timeout")
