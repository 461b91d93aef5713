"""What a model or its code sends cannot break a batch, alias a file, or see a secret.

Hostile tool calls (arguments that are not plain JSON, ids that have no text form), code-mode
arguments JSON has no form for, nested calls left in flight, file listings that differ only
in case, and a thread-bound run handle read in every way it offers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolResult, code_mode_tool, define_tool

pytestmark = pytest.mark.anyio


class AddArgs(BaseModel):
    a: int
    b: int


class EchoArgs(BaseModel):
    text: str


async def _add(state: ThreadState, args: Any) -> ToolResult:
    return ToolResult.success(args.a + args.b)


async def _echo(state: ThreadState, args: Any) -> ToolResult:
    return ToolResult.success(args.text)


async def _hang(state: ThreadState) -> ToolResult:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


ADD = define_tool(description="Add two integers.", args=AddArgs, execute=_add, name="add")
ECHO = define_tool(description="Echo a text.", args=EchoArgs, execute=_echo, name="echo")
HANG = define_tool(description="Never returns.", execute=_hang, name="hang")


def _chat(call_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "function": {"name": name, "arguments": arguments}}


def _anthropic(call_id: Any, name: str, value: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": value}


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


async def test_arguments_that_are_not_plain_json_become_error_results_and_the_batch_goes_on(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    cyclic: dict[str, Any] = {"a": 1, "b": 2}
    cyclic["self"] = cyclic
    calls = [
        _chat("deep-text", "add", "[" * 100_000),
        _chat("long-int", "add", '{"a": 1' + "0" * 5000 + ', "b": 1}'),
        _chat("nan", "add", '{"a": NaN, "b": 1}'),
        _chat("infinity", "add", '{"a": -Infinity, "b": 1}'),
        _chat("overflow", "add", '{"a": 1e400, "b": 1}'),
        _anthropic("py-nan", "add", {"a": float("nan"), "b": 1}),
        _anthropic("py-deep", "add", {"a": _nested(5000), "b": 1}),
        _anthropic("py-cycle", "add", cyclic),
        _anthropic("py-bytes", "add", {"a": b"\x01", "b": 1}),
        _anthropic("py-list-nan", "add", [float("inf")]),
        _anthropic(10**5000, "add", {"a": 1, "b": 1}),  # an id with no text form
        _chat("surrogate", "echo", '{"text": "\\ud800"}'),
        _chat("last", "add", '{"a": 20, "b": 22}'),
    ]
    async with open_runtime(tools=[ADD, ECHO]) as rt:
        thread = await rt.thread("hostile")
        with anyio.fail_after(60):
            results = await thread.execute_tool_calls(calls)
        messages = await runtime.helpers.get_messages(thread.state)
        turns = thread.state.turn_count
    by_id = {r.call_id: r for r in results}
    assert len(results) == len(calls)
    refused = [
        "deep-text", "long-int", "nan", "infinity", "overflow",
        "py-nan", "py-deep", "py-cycle", "py-bytes", "py-list-nan",
    ]  # fmt: skip
    for call_id in refused:
        result = by_id[call_id]
        assert result.status == "error", call_id
        assert result.error is not None and "arguments" in result.error, call_id
    assert "NaN" in str(by_id["nan"].error) and "Infinity" in str(by_id["infinity"].error)
    assert "arguments.a: a Uint8Array (bytes)" in str(by_id["py-bytes"].error)
    assert results[10].status == "success" and results[10].result == 2  # a fresh id was made
    assert by_id["surrogate"].status == "success" and by_id["surrogate"].result == "\ud800"
    assert by_id["last"].status == "success" and by_id["last"].result == 42
    assert turns == 1
    assert [m.kind for m in messages] == ["tool_call", "tool_result"] * len(calls)
    stored = [m.content for m in messages if m.kind == "tool_result"]
    assert stored[11]["result"] == "\ud800"  # stored and read back exactly


async def test_code_mode_tool_functions_resolve_to_an_error_for_values_json_cannot_hold(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    import { tools } from "tools";
    const bad = [
      { a: NaN, b: 1 }, { a: Infinity, b: 1 }, { a: new Uint8Array([1]), b: 1 },
      { a: new Set([1]), b: 1 }, { a: new Date(0), b: 1 }, [1, 2], 7,
    ];
    const out = [];
    for (const args of bad) {
      try {
        const r = await tools.add(args as any, { raw: true });
        out.push([r.status, r.error]);
      } catch (e) {
        out.push(["rejected", String(e)]);
      }
    }
    // undefined is dropped as JSON.stringify drops it
    out.push(await tools.add({ a: 1, b: 2, c: undefined } as any, { raw: true }));
    export default out;
    """
    tool = code_mode_tool([ADD], timeout=30)
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        with anyio.fail_after(60):
            (result,) = await thread.execute_tool_calls(
                [_anthropic("outer", "run_code", {"code": code})]
            )
    assert result.status == "success", result.error
    out = result.result["result"]
    statuses = [entry[0] for entry in out[:-1]]
    assert statuses == ["error"] * 7, out
    reasons = " | ".join(entry[1] for entry in out[:-1])
    for shown in ("NaN", "Infinity", "Uint8Array", "a Set", "a Date", "must be an object"):
        assert shown in reasons
    assert out[-1]["status"] == "success" and out[-1]["result"] == 3


async def test_a_nested_call_left_in_flight_does_not_abort_the_rest_of_the_batch(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """import { tools } from "tools";
      tools.hang();  // started with the call below, never awaited
      export default await tools.add({ a: 2, b: 2 });"""
    tool = code_mode_tool([HANG, ADD], timeout=30)
    calls = [
        _anthropic("outer", "run_code", {"code": code}),
        _chat("after", "add", '{"a":1,"b":1}'),
    ]
    async with open_runtime(tools=[tool, ADD]) as rt:
        thread = await rt.thread()
        with anyio.fail_after(60):
            results = await thread.execute_tool_calls(calls)
        signal = thread.state.execution.abort_signal
        messages = await runtime.helpers.get_messages(thread.state)
    assert [r.status for r in results] == ["success", "success"], [r.error for r in results]
    assert (results[0].result["result"], results[1].result) == (4, 2)
    assert not signal.aborted
    nested = [
        m.content for m in messages if m.parent_call_id == "outer" and m.kind == "tool_result"
    ]
    assert sorted(str(c["error"]) for c in nested) == ["None", "cancelled while running"]


async def test_listing_files_matches_the_directory_exactly(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    for path in ("/docs/a.txt", "/a_b/x.txt", "/axb/y.txt", "/p%/z.txt", "/pq/w.txt"):
        await state.write_file(path, "x")
    assert await state.list_files("/docs") == ["/docs/a.txt"]
    assert await state.list_files("/Docs") == []
    assert await state.list_files("/DOCS") == []
    assert await state.list_files("/a_b") == ["/a_b/x.txt"]
    assert await state.list_files("/p%") == ["/p%/z.txt"]
    assert await state.list_files("/") == sorted(
        ["/docs/a.txt", "/a_b/x.txt", "/axb/y.txt", "/p%/z.txt", "/pq/w.txt"]
    )
    code = """import { stat, readdir } from "fs";
      const tryit = async (f: () => Promise<unknown>) => {
        try { return await f() } catch (e) { return String(e) }
      };
      export default [await tryit(() => stat("/Docs")), await tryit(() => readdir("/Docs")),
                      (await stat("/docs") as any).type, await readdir("/docs")];"""
    with anyio.fail_after(60):
        result = await state.run_code(code, files=True, timeout=30)
    assert result.status == "success", result.error
    missing_stat, missing_dir, kind, listed = result.result
    assert "ENOENT" in missing_stat and "ENOENT" in missing_dir
    assert (kind, listed) == ("directory", ["a.txt"])


SECRET = "sk-thread-run-handle-SECRET-9"


async def test_a_thread_run_handle_redacts_secrets_in_everything_it_shows(
    rt: runtime.Runtime,
) -> None:
    state = (await rt.thread()).state
    await state.set_env("TOKEN", SECRET, type="secret")
    called: list[Any] = []
    streamed: list[Any] = []
    code = """import { token } from "env";
      report("first " + token); report({ [token]: [token] });
      export default { token };"""
    execution = state.run_code(
        code, imports={"env": {"token": SECRET}}, report=called.append, timeout=30
    )

    async def stream() -> None:
        async for value in execution.reports():
            streamed.append(value)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream)
            awaited = await execution
    seen = {
        "awaited": awaited,
        "result": execution.result,
        "reports_so_far": execution.reports_so_far,
        "reports()": streamed,
        "report=": called,
    }
    for where, value in seen.items():
        assert SECRET not in repr(value), where
    assert execution.result.result == {"token": "[REDACTED]"}
    expected = ["first [REDACTED]", {"[REDACTED]": ["[REDACTED]"]}]
    assert execution.reports_so_far == streamed == called == expected
    assert json.dumps(awaited.reports) == json.dumps(expected)


@pytest.mark.parametrize(
    "code",
    [
        pytest.param("export default new Set([token, 'x'])", id="set-result"),
        pytest.param("export default {m: new Map([[1, new Set([token])]])}", id="set-in-map"),
        pytest.param("report(new Set([token])); export default 1", id="set-report"),
        pytest.param("console.log(new Set([token])); export default 1", id="set-log"),
        pytest.param("const e = new Error('plain'); e.name = token; throw e", id="error-name"),
        pytest.param("throw new Set([token])", id="thrown-set"),
    ],
)
async def test_a_thread_run_redacts_secrets_in_sets_and_error_names(
    rt: runtime.Runtime, code: str
) -> None:
    # a JS Set arrives as a frozenset, and a program names its errors freely (issue 28, item 11)
    state = (await rt.thread()).state
    await state.set_env("TOKEN", SECRET, type="secret")
    source = 'import { token } from "env";\n' + code
    with anyio.fail_after(60):
        result = await state.run_code(
            source, imports={"env": {"token": SECRET}}, language="javascript", timeout=30
        )
    assert result.status in ("success", "error")
    shown = repr((result.result, result.error, result.reports, result.logs))
    assert "[REDACTED]" in shown
    assert SECRET not in shown
    if result.error is not None:
        assert SECRET not in str(result.error) and SECRET not in repr(result.error.value)
