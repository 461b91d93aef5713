"""``quickjail mcp --tools MODULE``: a module's runtime tools, ``run_code`` over them and the
discovery tools, served by a real server subprocess driven by the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP server needs the 'mcp' extra")

from mcp_support import ROOT, connect, pool_workers  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]


TOOLS_MODULE = """
from pydantic import BaseModel


from quickjail.runtime import AttachmentRef, ThreadState, ToolAttachment, ToolResult, Variable
from quickjail.runtime import define_tool

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415478"
    "9c63f8cfc000000301010018dd8db00000000049454e44ae426082"
)
TOKEN = Variable("TOKEN", type="secret")


class AddArgs(BaseModel):
    a: int
    b: int


class SecretArgs(BaseModel):
    name: str


async def _add(state: ThreadState, args: AddArgs) -> ToolResult:
    return ToolResult.success({"sum": args.a + args.b})


async def _remember(state: ThreadState, args: SecretArgs) -> ToolResult:
    await state.set_env("TOKEN", "hunter2-mcp-" + args.name, "secret")
    return ToolResult.success("stored")


async def _leak(state: ThreadState) -> ToolResult:
    return ToolResult.success(f"token={await state.env('TOKEN')} in {state.thread_id}")


async def _boom(state: ThreadState) -> ToolResult:
    raise RuntimeError("boom")


async def _picture(state: ThreadState) -> ToolResult:
    image = ToolAttachment.from_bytes("dot.png", "image/png", PNG)
    return ToolResult.success("a dot", attachments=[image])


async def _bad_ref(state: ThreadState) -> ToolResult:
    ref = AttachmentRef(id="a", path="../../etc/passwd", name="p", mime_type="text/plain", size=1)
    return ToolResult.success("see attachment", attachments=[ref])


add = define_tool(
    description="Add two integers.", title="Add", args=AddArgs, execute=_add, name="add"
)
remember = define_tool(
    description="Remember a secret.", args=SecretArgs, execute=_remember, name="remember",
    variables=[TOKEN],
)
leak = define_tool(description="Say the secret.", execute=_leak, name="leak", variables=[TOKEN])
boom = define_tool(description="Raise.", execute=_boom, name="boom")
picture = define_tool(description="Draw a dot.", execute=_picture, name="picture")
bad_ref = define_tool(description="Refer to a host file.", execute=_bad_ref, name="bad_ref")
"""
TOOLS_KEY = "0123456789abcdef0123456789abcdef-mcp-tools-key"


@pytest.fixture
def tools_server(tmp_path: Path) -> tuple[str, ...]:
    module = tmp_path / "agent_tools.py"
    module.write_text(TOOLS_MODULE, encoding="utf-8")
    return ("--tools", str(module), "--tools-db", str(tmp_path / "tools.db"))


def _text(result: Any) -> str:
    assert result.content and result.content[0].type == "text"
    return str(result.content[0].text)


async def test_tools_server_lists_the_module_tools_and_the_code_mode_tool(
    tools_server: tuple[str, ...],
) -> None:
    async with connect(*tools_server, extra_env={"QUICKJAIL_SECRET_KEY": TOOLS_KEY}) as session:
        listed = await session.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == {
        *("add", "remember", "leak", "boom", "picture", "bad_ref", "run_code"),
        *("search", "describe", "save_snippet"),
    }
    assert tools["add"].title == "Add"
    assert tools["add"].input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert "```ts" in (tools["run_code"].description or "")


async def test_tools_server_validates_strictly_and_returns_failures_as_results(
    tools_server: tuple[str, ...],
) -> None:
    async with connect(*tools_server, extra_env={"QUICKJAIL_SECRET_KEY": TOOLS_KEY}) as session:
        ok = await session.call_tool("add", {"a": 1, "b": 2})
        coerced = await session.call_tool("add", {"a": "1", "b": 2})
        extra = await session.call_tool("add", {"a": 1, "b": 2, "c": 3})
        raised = await session.call_tool("boom", {})
        bad_ref = await session.call_tool("bad_ref", {})
        code = await session.call_tool(
            "run_code",
            {
                "code": 'import { tools } from "tools";\n'
                "export default await tools.add({a: 2, b: 5});"
            },
        )
    # no output schema: the value goes once, as text
    assert ok.is_error is False and ok.structured_content is None
    assert json.loads(_text(ok)) == {"sum": 3}
    assert coerced.is_error is True and 'a: expected an integer (got a string "1")' in _text(
        coerced
    )
    assert extra.is_error is True and "c: unexpected key" in _text(extra)
    assert raised.is_error is True and "RuntimeError: boom" in _text(raised)
    assert bad_ref.is_error is True and "'..' is not allowed" in _text(bad_ref)
    assert code.is_error is False, _text(code)
    assert code.structured_content is not None
    assert code.structured_content["status"] == "success"
    assert code.structured_content["result"] == {"sum": 7}


async def test_tools_server_keeps_one_persisted_thread_per_session_and_redacts_secrets(
    tools_server: tuple[str, ...], tmp_path: Path
) -> None:
    import sqlite3

    env = {"QUICKJAIL_SECRET_KEY": TOOLS_KEY}
    async with connect(*tools_server, extra_env=env) as session:
        stored = await session.call_tool("remember", {"name": "secret"})
        first = await session.call_tool("leak", {})
        again = await session.call_tool("leak", {})
        picture = await session.call_tool("picture", {})
    async with connect(*tools_server, extra_env=env) as session:
        other = await session.call_tool("leak", {})
    assert stored.is_error is False
    assert _text(first).startswith("token=[REDACTED] in mcp-")
    thread_id = _text(first).split(" in ")[1]
    assert thread_id in _text(again)  # same session, same thread
    assert _text(other).startswith("token=None in mcp-") and thread_id not in _text(other)
    assert picture.is_error is False
    assert [c.type for c in picture.content] == ["text", "image"]
    assert picture.content[1].mime_type == "image/png"
    db = tmp_path / "tools.db"
    with sqlite3.connect(db) as conn:
        threads = {row[0] for row in conn.execute("SELECT id FROM threads")}
        calls = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE thread_id = ? AND kind = 'tool_result'",
            (thread_id,),
        ).fetchone()[0]
    conn.close()
    assert thread_id in threads and len(threads) == 2 and calls == 4
    assert b"hunter2-mcp-secret" not in db.read_bytes()


async def test_tools_server_unknown_tool_is_a_protocol_error(
    tools_server: tuple[str, ...],
) -> None:
    from mcp.shared.exceptions import MCPError

    async with connect(*tools_server, extra_env={"QUICKJAIL_SECRET_KEY": TOOLS_KEY}) as session:
        with pytest.raises(MCPError, match="unknown tool 'nope'"):
            await session.call_tool("nope", {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tools-db", "x.db"], "--tools-db is the database of --tools"),
        (["--tools", "m.py", "--allow-read", "."], "drop one of them"),
        (["--tools", "no_such_module_for_quickjail"], "ModuleNotFoundError"),
        (["--tools", "json"], "defines no local tool"),
    ],
    ids=["db-without-tools", "with-allow-read", "missing-module", "no-tools"],
)
def test_tools_flag_mistakes_are_usage_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from quickjail._cli import EXIT_USAGE, main

    assert main(["mcp", *args]) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_what_a_tools_module_prints_while_loading_goes_to_stderr_not_the_mcp_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from quickjail import _mcp

    module = tmp_path / "noisy_tools.py"
    module.write_text('print("loading tools")\n' + TOOLS_MODULE, encoding="utf-8")
    tools = _mcp.load_tools(str(module), _mcp.ServerOptions())
    out, err = capsys.readouterr()
    assert out == "" and "loading tools" in err
    assert "add" in {tool.name for tool in tools}


async def test_tools_server_with_workers_runs_code_mode_in_a_worker(
    tools_server: tuple[str, ...],
) -> None:
    env = {"QUICKJAIL_SECRET_KEY": TOOLS_KEY}
    async with connect(*tools_server, "--workers", "1", extra_env=env) as session:
        result = await session.call_tool(
            "run_code", {"code": "const r = await tools.add({ a: 2, b: 3 }); return r"}
        )
        workers = pool_workers()
    assert result.is_error is False, _text(result)
    assert json.loads(_text(result))["result"] == {"sum": 5}
    assert len(workers) == 1


# ---------------------------------------------- one answer, declared (issue 29 item 18)


async def test_run_code_tools_declare_their_answer_as_output_schema(
    tools_server: tuple[str, ...],
) -> None:
    from quickjail.runtime.helpers import answer_schema

    async with connect() as session:
        (plain,) = (await session.list_tools()).tools
    async with connect(*tools_server, extra_env={"QUICKJAIL_SECRET_KEY": TOOLS_KEY}) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert plain.output_schema == answer_schema()
    assert listed["run_code"].output_schema == answer_schema()
    assert answer_schema()["required"] == ["status", "result", "error", "reason", "reports", "logs"]


async def test_code_mode_answers_a_failure_as_the_plain_tool_does_without_a_doubled_prefix(
    tools_server: tuple[str, ...],
) -> None:
    code = "console.log('start');\nthrow new Error('boom')"
    async with connect() as session:
        plain = await session.call_tool("run_code", {"code": code})
    async with connect(*tools_server, extra_env={"QUICKJAIL_SECRET_KEY": TOOLS_KEY}) as session:
        mode = await session.call_tool("run_code", {"code": code})
    assert plain.is_error is True and mode.is_error is True
    assert plain.structured_content is not None and mode.structured_content is not None
    for answer in (plain.structured_content, mode.structured_content):
        assert answer["status"] == "error"
        assert (answer["error"]["name"], answer["error"]["message"]) == ("Error", "boom")
        assert answer["logs"] == [{"level": "log", "args": ["start"]}]
    # code mode adds its call log (issue 26 item 6); the rest is the plain tool's answer
    assert set(mode.structured_content) - {"calls"} == set(plain.structured_content)
    assert mode.structured_content["error"].keys() == plain.structured_content["error"].keys()
    assert _text(mode).startswith("Error: uncaught Error: boom at line 2")
    assert "Error: Error:" not in _text(mode)


CHATTY_MODULE = """
from quickjail.runtime import ThreadState, ToolResult, define_tool


async def _chatty(state: ThreadState) -> ToolResult:
    print("debug output of a tool")
    return ToolResult.success("done")


async def _big(state: ThreadState) -> ToolResult:
    return ToolResult.success("b" * 3_000_000)


chatty = define_tool(description="Print, then answer.", execute=_chatty, name="chatty")
big = define_tool(description="Answer at length.", execute=_big, name="big")
"""


def _server_env() -> dict[str, str]:
    """The environment of a server subprocess, without ``PYTHONUNBUFFERED``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def test_a_tools_print_never_reaches_the_mcp_stream(tmp_path: Path) -> None:
    import subprocess

    module = tmp_path / "chatty_tools.py"
    module.write_text(CHATTY_MODULE, encoding="utf-8")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chatty"}},
    ]
    command = [sys.executable, "-m", "quickjail", "mcp", "--tools", str(module)]
    server = subprocess.Popen(
        [*command, "--tools-db", str(tmp_path / "tools.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_server_env(),
    )
    assert server.stdin is not None and server.stdout is not None
    lines = []
    for message in messages:
        server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        if "id" in message:
            lines.append(server.stdout.readline())
    # the session ends: the server exits, flushing what its buffers hold
    out, err = server.communicate(timeout=100)
    lines += out.splitlines()
    assert server.returncode == 0, err
    assert [json.loads(line)["id"] for line in lines] == [1, 2]
    assert json.loads(lines[1])["result"]["content"][0]["text"] == "done"
    assert b"debug output of a tool" in err


def _unwritable_dir(tmp_path: Path) -> Path:
    """A directory where no database file can be created (even by root: /proc on Linux)."""
    if Path("/proc/self").is_dir():
        return Path("/proc")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    return locked


def test_tools_in_an_unwritable_directory_is_a_one_line_error_naming_the_database(
    tmp_path: Path,
) -> None:
    import subprocess

    module = tmp_path / "chatty_tools.py"
    module.write_text(CHATTY_MODULE, encoding="utf-8")
    cwd = _unwritable_dir(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "quickjail", "mcp", "--tools", str(module)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_server_env(),
        timeout=100,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    error = done.stderr.splitlines()[0]
    assert str(cwd / "quickjail-tools.db") in error and "--tools-db" in error
    assert done.stdout == ""


async def test_big_results_arrive_cut_with_a_note_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    module = tmp_path / "chatty_tools.py"
    module.write_text(CHATTY_MODULE, encoding="utf-8")
    args = ("--tools", str(module), "--tools-db", str(tmp_path / "t.db"))
    async with connect(*args, "--max-result-chars", "10000") as session:
        big = await session.call_tool("big", {})
        code = await session.call_tool("run_code", {"code": 'return "c".repeat(50_000)'})
        after = await session.call_tool("chatty", {})
    note = "characters not sent; --max-result-chars 10000]"
    assert big.is_error is False and big.structured_content is None
    assert len(_text(big)) <= 10_000 and _text(big).endswith(f"of 3000000 {note}")
    assert code.is_error is False and code.structured_content is not None
    assert code.structured_content["result"].endswith(f"of 50000 {note}")
    assert len(_text(code)) <= 10_000
    assert json.loads(_text(code)) == code.structured_content
    assert _text(after) == "done"
    async with connect("--max-result-chars", "10000") as session:
        plain = await session.call_tool("run_code", {"code": 'return "p".repeat(50_000)'})
    assert plain.structured_content is not None
    assert plain.structured_content["result"].endswith(f"of 50000 {note}")
    assert json.loads(_text(plain)) == plain.structured_content


MANY_TOOLS_MODULE = """
from pydantic import BaseModel
from quickjail.runtime import ToolResult, define_tool

class Args(BaseModel):
    n: int

def _make(i):
    async def run(state, args):
        return ToolResult.success(args.n * i)
    return define_tool(name=f"multiply_by_{i}", args=Args, execute=run,
                       description=f"Multiply n by {i}. " + "A description of some length. " * 6)

for _i in range(40):
    globals()[f"tool_{_i}"] = _make(_i)
"""


async def test_a_module_of_many_tools_is_served_with_a_bounded_description_and_discovery(
    tmp_path: Path,
) -> None:
    # issue 30: 11 tools made the description pass 4,096 characters and the server refuse
    module = tmp_path / "many_tools.py"
    module.write_text(MANY_TOOLS_MODULE, encoding="utf-8")
    args = ("--tools", str(module), "--tools-db", str(tmp_path / "tools.db"))
    async with connect(*args) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        found = await session.call_tool("search", {"query": "multiply 17", "limit": 1})
        ran = await session.call_tool(
            "run_code", {"code": "return await tools.multiply_by_17({n: 2});"}
        )
    assert len(listed) == 40 + 4
    assert len(listed["run_code"].description or "") <= 4096
    assert "search(query)" in (listed["run_code"].description or "")
    assert json.loads(_text(found)) == [
        {
            "name": "tools.multiply_by_17",
            "description": "Multiply n by 17. " + ("A description of some length. " * 6).strip(),
        }
    ]
    assert ran.structured_content is not None and ran.structured_content["result"] == 34
