"""execute_tool_calls: order, persistence, error results, call shapes, rendering, cancellation."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, TypeAdapter

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolResult, define_tool

pytestmark = pytest.mark.anyio


class AddArgs(BaseModel):
    a: int
    b: int


async def _add(state: ThreadState, args: Any) -> ToolResult:
    return ToolResult.success(args.a + args.b)


async def _explode(state: ThreadState) -> ToolResult:
    raise ValueError("kaboom")


async def _hello(state: ThreadState) -> ToolResult:
    return ToolResult.success("hello")


ADD = define_tool(description="Add two integers.", args=AddArgs, execute=_add, name="add")
EXPLODE = define_tool(description="Always raises.", execute=_explode, name="explode")
HELLO = define_tool(description="Says hello.", execute=_hello, name="hello")
TOOLS = [ADD, EXPLODE, HELLO]


def _tool_results(messages: list[runtime.Message]) -> list[runtime.Message]:
    return [m for m in messages if m.kind == "tool_result"]


async def test_batch_of_three_with_a_raising_second_persists_three_results_in_order(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    calls = [
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":1,"b":2}'},
        {"type": "function_call", "call_id": "c2", "name": "explode", "arguments": "{}"},
        {"type": "function_call", "call_id": "c3", "name": "hello", "arguments": ""},
    ]
    async with open_runtime(tools=TOOLS) as rt:
        results = await (await rt.thread("batch")).execute_tool_calls(calls)
    assert [(r.call_id, r.tool_name, r.status) for r in results] == [
        ("c1", "add", "success"),
        ("c2", "explode", "error"),
        ("c3", "hello", "success"),
    ]
    assert results[1].error == "ValueError: kaboom"
    async with open_runtime(tools=TOOLS) as rt:  # read back from the file, not from memory
        messages = await runtime.helpers.get_messages((await rt.thread("batch")).state)
    assert [(m.kind, m.tool_call_id) for m in messages] == [
        ("tool_call", "c1"),
        ("tool_result", "c1"),
        ("tool_call", "c2"),
        ("tool_result", "c2"),
        ("tool_call", "c3"),
        ("tool_result", "c3"),
    ]
    stored = [m.content for m in _tool_results(messages)]
    assert [c["status"] for c in stored] == ["success", "error", "success"]
    assert stored[0] == {
        "status": "success",
        "result": 3,
        "error": None,
        "stack": None,
        "attachments": [],
    }
    assert stored[1]["error"] == "ValueError: kaboom" and "Traceback" in stored[1]["stack"]
    assert messages[0].content == {"name": "add", "arguments": {"a": 1, "b": 2}}


async def test_each_result_is_persisted_before_the_next_call_starts(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    seen: list[list[str | None]] = []

    async def look(state: ThreadState) -> ToolResult:
        messages = await runtime.helpers.get_messages(state)
        seen.append([m.tool_call_id for m in messages if m.kind == "tool_result"])
        return ToolResult.success()

    tool = define_tool(description="look", execute=look, name="look")
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        await thread.execute_tool_calls(
            [{"type": "tool_use", "id": f"l{i}", "name": "look", "input": {}} for i in range(3)]
        )
    assert seen == [[], ["l0"], ["l0", "l1"]]


@pytest.mark.parametrize(
    "call",
    [
        {"type": "function_call", "call_id": "x", "name": "add", "arguments": '{"a":2,"b":3}'},
        {"id": "x", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":3}'}},
        {"type": "tool_use", "id": "x", "name": "add", "input": {"a": 2, "b": 3}},
    ],
    ids=["openai-responses", "openai-chat", "anthropic"],
)
async def test_calls_are_accepted_in_every_provider_shape(
    call: dict[str, Any], open_runtime: Callable[..., runtime.Runtime]
) -> None:
    async with open_runtime(tools=TOOLS) as with_tools:
        (result,) = await (await with_tools.thread()).execute_tool_calls([call])
    assert (result.status, result.result, result.call_id) == ("success", 5, "x")


async def test_sdk_objects_are_accepted_as_calls(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    from anthropic.types import ToolUseBlock
    from openai.types.chat import ChatCompletionMessageFunctionToolCall
    from openai.types.responses import ResponseFunctionToolCall

    calls = [
        ResponseFunctionToolCall(
            type="function_call", call_id="r", name="add", arguments='{"a":1,"b":1}'
        ),
        ChatCompletionMessageFunctionToolCall.model_validate(
            {
                "id": "c",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a":2,"b":2}'},
            }
        ),
        ToolUseBlock(type="tool_use", id="a", name="add", input={"a": 3, "b": 3}),
    ]
    async with open_runtime(tools=TOOLS) as rt:
        results = await (await rt.thread()).execute_tool_calls(calls)
    assert [(r.call_id, r.result) for r in results] == [("r", 2), ("c", 4), ("a", 6)]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            {"type": "function_call", "call_id": "1", "name": "nope", "arguments": "{}"},
            "unknown tool 'nope'; available: add, explode, hello",
        ),
        (
            {"type": "function_call", "call_id": "1", "name": "add", "arguments": '{"a": 1,'},
            "invalid JSON arguments for tool 'add'",
        ),
        (
            {"type": "function_call", "call_id": "1", "name": "add", "arguments": "[1, 2]"},
            "arguments for tool 'add' must be an object, got list",
        ),
        (
            {"type": "function_call", "call_id": "1", "name": "add", "arguments": '{"a": "x"}'},
            "invalid arguments for tool 'add': a: expected an integer (got a string \"x\")",
        ),
        ({"weird": True}, "unrecognized tool call shape"),
        ({"type": "tool_use", "id": "1", "input": {}}, "names no tool"),
    ],
    ids=["unknown-tool", "invalid-json", "not-object", "invalid-args", "bad-shape", "no-name"],
)
async def test_bad_calls_become_error_results_without_halting_the_batch(
    open_runtime: Callable[..., runtime.Runtime], call: dict[str, Any], message: str
) -> None:
    ok = {"type": "tool_use", "id": "after", "name": "hello", "input": {}}
    async with open_runtime(tools=TOOLS) as rt:
        thread = await rt.thread()
        bad, after = await thread.execute_tool_calls([call, ok])
        stored = _tool_results(await runtime.helpers.get_messages(thread.state))
    assert bad.status == "error" and message in (bad.error or "")
    assert after.status == "success" and len(stored) == 2


async def test_queued_tools_run_after_the_given_calls(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def plan(state: ThreadState) -> ToolResult:
        runtime.helpers.queue_tool(state.root_state, "add", {"a": 10, "b": 5})
        return ToolResult.success("planned")

    tools = [*TOOLS, define_tool(description="plan", execute=plan, name="plan")]
    async with open_runtime(tools=tools) as rt:
        results = await (await rt.thread()).execute_tool_calls(
            [
                {"type": "tool_use", "id": "p", "name": "plan", "input": {}},
                {"type": "tool_use", "id": "h", "name": "hello", "input": {}},
            ]
        )
    assert [(r.tool_name, r.result) for r in results] == [
        ("plan", "planned"),
        ("hello", "hello"),
        ("add", 15),
    ]
    assert results[2].call_id is not None and results[2].call_id.startswith("queued_")


async def test_provider_executed_calls_are_left_to_the_provider(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    web = define_tool(
        description="web", name="web_search", execution_mode="provider", execution_provider="x"
    )
    async with open_runtime(tools=[*TOOLS, web]) as rt:
        thread = await rt.thread()
        results = await thread.execute_tool_calls(
            [
                {"type": "tool_use", "id": "w", "name": "web_search", "input": {"q": "x"}},
                {"type": "tool_use", "id": "h", "name": "hello", "input": {}},
            ]
        )
        messages = await runtime.helpers.get_messages(thread.state)
    assert [r.call_id for r in results] == ["h"]
    assert {m.tool_call_id for m in messages} == {"h"}


async def test_cancellation_sets_the_abort_signal_records_the_call_and_propagates(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    started = anyio.Event()
    signals: list[runtime.helpers.AbortSignal] = []

    async def slow(state: ThreadState) -> ToolResult:
        signals.append(state.execution.abort_signal)
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    tool = define_tool(description="slow", execute=slow, name="slow")
    calls = [
        {"type": "tool_use", "id": i, "name": n, "input": {}}
        for i, n in [("s", "slow"), ("h", "hello")]
    ]
    async with open_runtime(tools=[tool, HELLO]) as rt:
        thread = await rt.thread()
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(thread.execute_tool_calls, calls)
                await started.wait()
                tg.cancel_scope.cancel()
        messages = await runtime.helpers.get_messages(thread.state)
        assert signals[0].aborted and signals[0].reason == "cancelled"
        assert [(m.kind, m.tool_call_id) for m in messages] == [
            ("tool_call", "s"),
            ("tool_result", "s"),
        ]
        assert messages[1].content["error"] == "cancelled while running"
        (again,) = await thread.execute_tool_calls([calls[1]])  # nothing left over
        assert again.call_id == "h" and not thread.state.execution.abort_signal.aborted


async def test_an_aborted_batch_does_not_start_the_remaining_calls(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def stop(state: ThreadState) -> ToolResult:
        state.execution.abort_signal.abort("user pressed stop")
        return ToolResult.success("stopping")

    tools = [*TOOLS, define_tool(description="stop", execute=stop, name="stop")]
    async with open_runtime(tools=tools) as rt:
        results = await (await rt.thread()).execute_tool_calls(
            [
                {"type": "tool_use", "id": "1", "name": "stop", "input": {}},
                {"type": "tool_use", "id": "2", "name": "hello", "input": {}},
            ]
        )
    assert results[1].status == "error"
    assert results[1].error == "not run: execution aborted (user pressed stop)"


# ----------------------------------------------------------------------------- rendering


async def _three_results(open_runtime: Callable[..., runtime.Runtime]) -> list[ToolResult]:
    async with open_runtime(tools=TOOLS) as rt:
        return await (await rt.thread()).execute_tool_calls(
            [
                {"type": "tool_use", "id": "a1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "a2", "name": "explode", "input": {}},
                {"type": "tool_use", "id": "a3", "name": "hello", "input": {}},
            ]
        )


async def test_results_render_as_openai_responses_items(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    rendered = runtime.helpers.render_results(
        await _three_results(open_runtime), "openai-responses"
    )
    assert rendered == [
        {"type": "function_call_output", "call_id": "a1", "output": "3"},
        {"type": "function_call_output", "call_id": "a2", "output": "Error: ValueError: kaboom"},
        {"type": "function_call_output", "call_id": "a3", "output": "hello"},
    ]
    for item in rendered:
        TypeAdapter(FunctionCallOutput).validate_python(item)


async def test_results_render_as_openai_chat_messages(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    from openai.types.chat import ChatCompletionToolMessageParam

    rendered = runtime.helpers.render_results(await _three_results(open_runtime), "openai-chat")
    assert rendered == [
        {"role": "tool", "tool_call_id": "a1", "content": "3"},
        {"role": "tool", "tool_call_id": "a2", "content": "Error: ValueError: kaboom"},
        {"role": "tool", "tool_call_id": "a3", "content": "hello"},
    ]
    for item in rendered:
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(item)


async def test_results_render_as_anthropic_tool_result_blocks(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    from anthropic.types import ToolResultBlockParam

    rendered = runtime.helpers.render_results(await _three_results(open_runtime), "anthropic")
    assert rendered == [
        {"type": "tool_result", "tool_use_id": "a1", "content": "3", "is_error": False},
        {
            "type": "tool_result",
            "tool_use_id": "a2",
            "content": "Error: ValueError: kaboom",
            "is_error": True,
        },
        {"type": "tool_result", "tool_use_id": "a3", "content": "hello", "is_error": False},
    ]
    for item in rendered:
        TypeAdapter(ToolResultBlockParam).validate_python(item)


async def test_rendering_a_result_without_call_id_is_refused() -> None:
    with pytest.raises(runtime.ToolRuntimeError, match="no call_id"):
        runtime.helpers.render_results([ToolResult.success(1)], "openai-chat")


async def test_structured_results_render_as_json(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def structured(state: ThreadState) -> ToolResult:
        return ToolResult.success({"ok": True, "items": ["é"]})

    tool = define_tool(description="s", execute=structured, name="structured")
    async with open_runtime(tools=[tool]) as rt:
        (result,) = await (await rt.thread()).execute_tool_calls(
            [{"type": "tool_use", "id": "s", "name": "structured", "input": {}}]
        )
    (item,) = runtime.helpers.render_results([result], "openai-chat")
    assert json.loads(item["content"]) == {"ok": True, "items": ["é"]}
