"""Code mode and run_code bound to a thread (these need the sandbox's host functions)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field

from quickjail import runtime
from quickjail.runtime import (
    ThreadState,
    ToolAttachment,
    ToolResult,
    code_mode_tool,
    define_tool,
)
from quickjail.runtime.errors import ToolDefinitionError

pytestmark = pytest.mark.anyio


class CityArgs(BaseModel):
    city: str = Field(description="City name")


class AddArgs(BaseModel):
    a: int
    b: int


def _tools(barrier: anyio.Event | None = None, started: list[str] | None = None) -> list[Any]:
    async def weather(state: ThreadState, args: Any) -> ToolResult:
        if started is not None and barrier is not None:
            started.append("weather")
            if len(started) == 2:
                barrier.set()
            await barrier.wait()  # only returns if both tools are in flight at once
        return ToolResult.success({"city": args.city, "temp_c": 21})

    async def add(state: ThreadState, args: Any) -> ToolResult:
        if started is not None and barrier is not None:
            started.append("add")
            if len(started) == 2:
                barrier.set()
            await barrier.wait()
        return ToolResult.success(args.a + args.b)

    return [
        define_tool(
            description="Current weather.", args=CityArgs, execute=weather, name="get_weather"
        ),
        define_tool(description="Add integers.", args=AddArgs, execute=add, name="add"),
    ]


PROMISE_ALL = """
import { tools } from "tools";

export default async function () {
  const [weather, sum] = await Promise.all([
    tools.get_weather({ city: "Paris" }),
    tools.add({ a: 2, b: 3 }),
  ]);
  console.log("both done");
  return { weather, sum };
}
"""


def _call(code: str, call_id: str = "outer") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "run_code", "input": {"code": code}}


async def test_code_mode_runs_two_tools_with_promise_all_and_persists_both(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    barrier, started = anyio.Event(), list[str]()
    tool = code_mode_tool(_tools(barrier, started), timeout=30)
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        with anyio.fail_after(60):
            (result,) = await thread.execute_tool_calls([_call(PROMISE_ALL)])
        messages = await runtime.helpers.get_messages(thread.state)
    assert result.status == "success", result.error
    assert sorted(c["tool"] for c in result.result["calls"]) == ["add", "get_weather"]
    assert _no_log(result.result) == {
        "status": "success",
        "result": {"weather": {"city": "Paris", "temp_c": 21}, "sum": 5},
        "error": None,
        "reason": None,
        "reports": [],
        "logs": [{"level": "log", "args": ["both done"]}],
    }
    assert sorted(started) == ["add", "weather"]
    nested = [m for m in messages if m.parent_call_id == "outer"]
    assert sorted((m.kind, m.tool_name) for m in nested) == [
        ("tool_call", "add"),
        ("tool_call", "get_weather"),
        ("tool_result", "add"),
        ("tool_result", "get_weather"),
    ]
    results = {m.tool_name: m.content for m in nested if m.kind == "tool_result"}
    assert results["add"]["result"] == 5
    assert results["get_weather"]["result"] == {"city": "Paris", "temp_c": 21}
    assert (messages[0].kind, messages[0].tool_call_id) == ("tool_call", "outer")
    assert (messages[-1].kind, messages[-1].tool_call_id) == ("tool_result", "outer")


async def test_code_mode_validates_nested_arguments_with_the_tools_model(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    import { add } from "tools";
    export default await add({ a: "two", b: 3 }, { raw: true });
    """
    async with open_runtime(tools=[code_mode_tool(_tools(), timeout=30)]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls([_call(code)])
        nested = [
            m
            for m in await runtime.helpers.get_messages(thread.state)
            if m.parent_call_id == "outer"
        ]
    assert result.status == "success", result.error
    returned = result.result["result"]
    assert returned["status"] == "error"
    assert "invalid arguments for tool 'add'" in returned["error"]
    assert [m.kind for m in nested] == ["tool_call", "tool_result"]


async def test_code_mode_reports_program_errors_with_position(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = 'const x: number = 1;\nthrow new TypeError("bad " + x);\nexport default 1;\n'
    async with open_runtime(tools=[code_mode_tool(_tools(), timeout=30)]) as rt:
        (result,) = await (await rt.thread()).execute_tool_calls([_call(code)])
    assert result.status == "error"
    assert result.error == "uncaught TypeError: bad 1 at line 2, column 30"
    assert result.result["status"] == "error"
    error = result.result["error"]
    assert (error["name"], error["message"], error["line"]) == ("TypeError", "bad 1", 2)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("export default undefined", None),
        ("report(1); export default undefined", None),
        ("export default NaN", {"$float": "NaN"}),
        ("export default new Uint8Array([1, 2])", {"$bytes": "AQI="}),
        ("export default 2n ** 64n", 2**64),
    ],
    ids=["undefined", "report-only", "nan", "bytes", "bigint"],
)
async def test_code_mode_persists_any_transferable_result_as_json(
    open_runtime: Callable[..., runtime.Runtime],
    code: str,
    expected: Any,
) -> None:
    async with open_runtime(tools=[code_mode_tool([], timeout=30)]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls([_call(code)])
        messages = await runtime.helpers.get_messages(thread.state, 10)
    assert result.status == "success", result.error
    assert {**_no_log(result.result), "reports": []} == _answer(expected)
    assert any(m.kind == "tool_result" for m in messages)


async def test_run_code_bridges_thread_files_read_only(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    await state.write_file("notes/a.txt", "alpha")
    await state.write_file("notes/b.bin", b"\x01\x02")
    code = """
    import { readFile, readdir, stat } from "fs";
    export default async function () {
      let missing = "";
      try { await readFile("nope.txt", "utf8"); } catch (e) { missing = String(e.message); }
      let escaped = "";
      try { await readFile("../x", "utf8"); } catch (e) { escaped = String(e.message); }
      return {
        text: await readFile("notes/a.txt", "utf8"),
        bytes: Array.from(await readFile("/notes/b.bin")),
        root: await readdir("."),
        notes: await readdir("notes"),
        kind: (await stat("notes")).type,
        size: (await stat("notes/a.txt")).size,
        missing, escaped,
      };
    }
    """
    with anyio.fail_after(60):
        result = await state.run_code(code, files=True, timeout=30)
    assert result.status == "success", result.error
    value = result.result
    assert value["text"] == "alpha" and value["bytes"] == [1, 2]
    assert value["root"] == ["notes"] and value["notes"] == ["a.txt", "b.bin"]
    assert value["kind"] == "directory" and value["size"] == 5
    assert "ENOENT" in value["missing"] and "nope.txt" in value["missing"]
    assert "EINVAL" in value["escaped"]


async def test_run_code_results_and_logs_are_redacted(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    await state.set_env("TOKEN", "tok-secret-123", type="secret")
    secret = await state.env("TOKEN")
    code = 'import { token } from "env"; console.log("t=" + token); export default token;'
    with anyio.fail_after(60):
        result = await state.run_code(code, imports={"env": {"token": secret}}, timeout=30)
    assert result.status == "success", result.error
    assert result.result == "[REDACTED]"
    assert result.logs[0].args == ["t=[REDACTED]"]


async def test_run_code_plain_script_needs_no_capabilities(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    with anyio.fail_after(60):
        result = await state.run_code("export default 6 * 7", language="javascript")
    assert result.status == "success" and result.result == 42


# ----------------------------------------------------------------------------- no sandbox needed


def test_code_mode_description_declares_the_tools_module() -> None:
    tool = code_mode_tool(_tools())
    assert tool.name == "run_code"
    assert tool.input_schema == {
        "properties": {
            "code": {
                "description": (
                    "TypeScript: statements (top-level await; `return` the result), an async "
                    "arrow function, or an ES module with `export default`, e.g. "
                    "`const sum = await tools.add({a: 1, b: 2}); return sum;`"
                ),
                "type": "string",
            }
        },
        "required": ["code"],
        "type": "object",
        "additionalProperties": False,
    }
    declaration = tool.description.split("```ts\n", 1)[1].rsplit("\n```", 1)[0]
    assert declaration == (
        'declare module "tools" {\n'
        "  /** Current weather. */\n"
        "  export function get_weather(args: {\n"
        "    /** City name */\n"
        "    city: string;\n"
        "  }): Promise<unknown>;\n"
        "  /** Add integers. */\n"
        "  export function add(args: {\n"
        "    a: number;\n"
        "    b: number;\n"
        "  }): Promise<unknown>;\n"
        "  export const tools: {\n"
        "    get_weather: typeof get_weather;\n"
        "    add: typeof add;\n"
        "  };\n"
        "}\n"
        'declare const tools: typeof import("tools").tools;'
    )


def _typescript_errors(source: str) -> list[str]:
    import tree_sitter
    import tree_sitter_typescript

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_typescript.language_typescript()))
    tree = parser.parse(source.encode())
    errors: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            errors.append(source.encode()[node.start_byte : node.end_byte].decode())
        stack.extend(node.children)
    return errors


def test_generated_declarations_parse_as_typescript() -> None:
    class Odd(BaseModel):
        class_: str = Field(alias="class")
        nested: dict[str, list[int | None]]

    async def run(state: Any, args: Any) -> ToolResult:
        return ToolResult.success()

    with pytest.warns(runtime.errors.ToolNameWarning):
        dashed = define_tool(description="*/ tricky */", args=Odd, execute=run, name="has-dash")
    reserved = define_tool(description="reserved word", args=Odd, execute=run, name="delete")
    tool = code_mode_tool([*_tools(), dashed, reserved])
    declaration = tool.description.split("```ts\n", 1)[1].rsplit("\n```", 1)[0]
    assert _typescript_errors(declaration) == []
    assert '"has-dash": (args:' in declaration and '"delete": (args:' in declaration
    assert "function delete" not in declaration
    for single in _tools():
        assert _typescript_errors(single.typescript_declaration) == []


def test_code_mode_refuses_provider_tools_and_a_tools_import() -> None:
    web = define_tool(description="web", name="web", execution_mode="provider")
    with pytest.raises(ToolDefinitionError, match="provider"):
        code_mode_tool([web])
    with pytest.raises(ToolDefinitionError, match='"tools"'):
        code_mode_tool(_tools(), imports={"tools": {}})


@pytest.mark.parametrize(
    "code",
    [
        "const r = await tools.add({ a: 2, b: 3 });\nreturn r;",
        "async () => await tools.add({ a: 2, b: 3 })",
        "```ts\nconst r = await codemode.add({ a: 2, b: 3 });\nr\n```",
        'import { tools as t } from "tools";\nexport default await t.add({ a: 2, b: 3 });',
        "await tools.add({ a: 2, b: 3 })",
    ],
    ids=["statements-return", "async-arrow", "fenced-codemode", "module-import", "expression"],
)
async def test_code_mode_runs_model_shapes_through_the_tools_global(
    open_runtime: Callable[..., runtime.Runtime], code: str
) -> None:
    tool = code_mode_tool(_tools(), timeout=30, namespace="codemode")
    async with open_runtime(tools=[tool]) as rt:
        (result,) = await (await rt.thread()).execute_tool_calls([_call(code)])
    assert result.status == "success", result.error
    assert _no_log(result.result) == _answer(5)


async def test_calling_a_tool_that_does_not_exist_rejects_naming_it_and_the_tools(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    const p = tools.get_wether({ city: "Paris" });
    const isPromise = p instanceof Promise;
    let message = "";
    try { await p } catch (e) { message = e.message }
    return { isPromise, message, known: typeof tools.add, has: "nope" in tools,
             keys: Object.keys(tools).sort(), thenable: typeof tools.then };
    """
    async with open_runtime(tools=[code_mode_tool(_tools(), timeout=30)]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls([_call(code)])
        nested = [
            m
            for m in await runtime.helpers.get_messages(thread.state)
            if m.parent_call_id == "outer"
        ]
    assert result.status == "success", result.error
    value = result.result["result"]
    assert value["isPromise"] is True and value["known"] == "function"
    assert "get_wether" in value["message"] and "add, get_weather" in value["message"]
    assert value["has"] is False and value["keys"] == ["add", "get_weather"]
    assert value["thenable"] == "undefined"
    assert nested == []  # nothing ran, nothing was persisted as a tool call


async def test_the_tools_global_is_declared_for_the_model_and_names_are_checked() -> None:
    tool = code_mode_tool(_tools(), namespace="codemode")
    assert "declare const tools:" in tool.description
    assert "declare const codemode:" in tool.description
    with pytest.raises(ToolDefinitionError, match="identifier"):
        code_mode_tool(_tools(), namespace="not an identifier")
    with pytest.raises(ToolDefinitionError, match="globals"):
        code_mode_tool(_tools(), globals={"tools": 1})


async def test_the_event_loop_runs_while_a_code_mode_calls_typescript_is_stripped(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    # run_code erases TypeScript before it returns; for a large source that is a helper
    # process's parse, seconds on adversarial text. Code mode waits for it on a worker thread,
    # so a task of the loop keeps running (it ticked about once before: the loop was blocked
    # in run_code until the run's timeout).
    tool = code_mode_tool(_tools(), timeout=0.5, kind="module")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            await anyio.sleep(0.01)
            before = ticks
            (result,) = await thread.execute_tool_calls([_call("f<T>(x," * (400 * 2**10 // 7))])
            during = ticks - before
            tasks.cancel_scope.cancel()
    assert result.result["status"] == "terminated" and result.result["reason"] == "timeout"
    assert during > 20, during


async def test_code_mode_keeps_a_callers_kind_and_globals(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    tool = code_mode_tool(_tools(), timeout=30, kind="module", globals={"LIMIT": 7})
    code = "export default LIMIT + (await tools.add({ a: 1, b: 1 }))"
    async with open_runtime(tools=[tool]) as rt:
        (result,) = await (await rt.thread()).execute_tool_calls([_call(code)])
    assert _no_log(result.result) == _answer(9), result.error
    async with open_runtime(tools=[tool]) as rt:
        (result,) = await (await rt.thread()).execute_tool_calls([_call("return 1")])
    assert result.status == "error"  # kind="module": a top-level return is a syntax error


async def test_code_mode_results_use_the_specs_javascript_names(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def draw(state: ThreadState) -> ToolResult:
        image = ToolAttachment.from_bytes("dot.png", "image/png", b"\x89PNG\r\n\x1a\n")
        return ToolResult.success("drawn", attachments=[image])

    async def explode(state: ThreadState) -> ToolResult:
        raise ValueError("kaboom")

    tools = [
        define_tool(description="Draw.", execute=draw, name="draw"),
        define_tool(description="Explode.", execute=explode, name="explode"),
    ]
    code = code_mode_tool(tools, timeout=30)
    assert "{ raw: true }" in code.description
    program = """
        const drawn = await tools.draw({}, { raw: true });
        const failed = await tools.explode({}, { raw: true });
        const [a] = drawn.attachments;
        return {
          keys: Object.keys(a).sort(),
          mimeType: a.mimeType,
          path: a.path,
          hasStack: typeof failed.stack === "string",
          stackNamesTheTool: failed.stack.includes("in explode"),
          stackHasNoHostPath: !failed.stack.includes(HOST_DIR),
          successHasNoStack: !("stack" in drawn),
          error: failed.error,
        };
    """.replace("HOST_DIR", json.dumps(str(Path(__file__).parent)))
    async with open_runtime(tools=[code]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls(
            [{"id": "c", "name": "run_code", "arguments": {"code": program}}]
        )
    assert result.ok, result.error
    assert result.result["result"] == {
        "keys": ["id", "mimeType", "name", "path", "size", "type"],
        "mimeType": "image/png",
        "path": "/attachments/dot.png",
        "hasStack": True,
        "stackNamesTheTool": True,
        "stackHasNoHostPath": True,
        "successHasNoStack": True,
        "error": "ValueError: kaboom",
    }


def _no_log(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without its call log (durations vary), after checking each entry's keys."""
    answer = dict(answer)
    calls = answer.pop("calls")
    keys = {"call_id", "tool", "arguments", "status", "error", "duration_s"}
    assert all(keys <= set(entry) for entry in calls), calls
    return answer


def _answer(value: Any) -> dict[str, Any]:
    """The code-mode tool's answer to a program that returned ``value`` and logged nothing."""
    return {
        "status": "success",
        "result": value,
        "error": None,
        "reason": None,
        "reports": [],
        "logs": [],
    }


class NoteArgs(BaseModel):
    text: str


def _note_tool() -> Any:
    async def note(state: ThreadState, args: Any) -> ToolResult:
        return ToolResult.success(len(args.text))

    return define_tool(description="Take a note", args=NoteArgs, execute=note, name="note")


def _db_bytes_of(db_path: Any, thread_id: str) -> int:
    """What the thread holds in the runtime's database, read from the file itself."""
    import sqlite3

    from quickjail.runtime._store import _stored_bytes

    conn = sqlite3.connect(db_path)
    try:
        return _stored_bytes(thread_id, conn)
    finally:
        conn.close()


LOOP = """
let refused = 0, ran = 0;
for (let i = 0; i < 200; i++) {
  try { await tools.note({ text: "x".repeat(65536) }); ran++; } catch (e) { refused++; }
}
return { refused, ran };
"""


async def test_a_code_mode_loop_cannot_grow_the_threads_database_past_its_quota(
    open_runtime: Callable[..., runtime.Runtime], db_path: Any
) -> None:
    # a short program persisted every nested call's arguments: 257 MiB in one tool call in
    # the issue, 13 MB here before (issue 28, item 8)
    quota = 2 * 2**20
    tool = code_mode_tool([_note_tool()], timeout=60)
    async with open_runtime(tools=[tool], max_thread_bytes=quota) as rt:
        thread = await rt.thread("looper")
        with anyio.fail_after(120):
            (result,) = await thread.execute_tool_calls([_call(LOOP)])
        assert result.status == "success", result.error
        counts = result.result["result"]
        assert counts["ran"] > 0 and counts["refused"] > 0
        assert counts["ran"] + counts["refused"] == 200
    assert _db_bytes_of(db_path, "looper") <= quota


async def test_large_nested_arguments_are_stored_truncated_saying_so(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    from quickjail.runtime._thread import MAX_NESTED_ARGUMENT_CHARS

    code = 'return await tools.note({ text: "y".repeat(100000) });'
    async with open_runtime(tools=[code_mode_tool([_note_tool()], timeout=60)]) as rt:
        thread = await rt.thread()
        with anyio.fail_after(60):
            (result,) = await thread.execute_tool_calls([_call(code)])
        messages = await runtime.helpers.get_messages(thread.state)
    assert result.status == "success", result.error
    assert result.result["result"] == 100000  # the tool got all of it
    (stored,) = [m for m in messages if m.parent_call_id == "outer" and m.kind == "tool_call"]
    assert stored.content["arguments_truncated"] is True
    text = stored.content["arguments"]
    assert text.startswith('{"text":"yyy') and "truncated" in text and "not stored" in text
    assert len(text) < MAX_NESTED_ARGUMENT_CHARS + 100


async def test_a_write_past_the_thread_quota_raises_and_stores_nothing(
    open_runtime: Callable[..., runtime.Runtime], db_path: Any
) -> None:
    from quickjail.runtime.errors import ThreadQuotaError

    async with open_runtime(max_thread_bytes=100_000) as rt:
        state = (await rt.thread("small")).state
        await state.write_file("/a.bin", b"a" * 60_000)
        with pytest.raises(ThreadQuotaError, match="quota of 100000 bytes"):
            await state.write_file("/b.bin", b"b" * 60_000)
        with pytest.raises(FileNotFoundError):
            await state.read_file("/b.bin")
    held = _db_bytes_of(db_path, "small")
    assert 60_000 <= held <= 100_000
    with pytest.raises(ValueError, match="max_thread_bytes"):
        runtime.Runtime(db_path, max_thread_bytes=0)
