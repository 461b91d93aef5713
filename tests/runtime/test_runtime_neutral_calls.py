"""The neutral tool-call shape ``{id, name, arguments}`` runs next to the provider shapes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolResult, define_tool
from quickjail.runtime._arguments import MAX_ARGUMENT_DEPTH, MAX_INT_DIGITS

pytestmark = pytest.mark.anyio


class AddArgs(BaseModel):
    a: int
    b: int


async def _add(state: ThreadState, args: Any) -> ToolResult:
    return ToolResult.success(args.a + args.b)


ADD = define_tool(description="Add two integers.", args=AddArgs, execute=_add, name="add")


async def test_neutral_calls_with_object_or_json_text_arguments_run_like_provider_calls(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    calls = [
        {"id": "n1", "name": "add", "arguments": {"a": 1, "b": 2}},
        {"id": "n2", "name": "add", "arguments": json.dumps({"a": 3, "b": 4})},
        {"type": "tool_use", "id": "a1", "name": "add", "input": {"a": 5, "b": 6}},
        {"id": "c1", "function": {"name": "add", "arguments": '{"a": 7, "b": 8}'}},
    ]
    async with open_runtime(tools=[ADD]) as rt:
        thread = await rt.thread()
        results = await thread.execute_tool_calls(calls)
    assert [(r.call_id, r.status, r.result) for r in results] == [
        ("n1", "success", 3),
        ("n2", "success", 7),
        ("a1", "success", 11),
        ("c1", "success", 15),
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"id": "x", "name": "add", "arguments": '{"a": 1,'}, "invalid JSON arguments"),
        ({"id": "x", "name": "add", "arguments": "[1, 2]"}, "must be an object, got list"),
        ({"id": "x", "name": "add", "arguments": {"a": 1, "b": 2, "c": 3}}, "c: unexpected key"),
        ({"id": "x", "name": "", "arguments": {}}, "names no tool"),
        ({"id": "x", "name": "add", "arguments": '{"a": NaN, "b": 1}'}, "NaN is not a JSON"),
        ({"id": "x", "name": "add"}, "unrecognized tool call shape"),
    ],
    ids=["bad-json", "not-object", "extra-key", "no-name", "nan", "no-arguments-key"],
)
async def test_bad_neutral_calls_are_error_results_and_the_batch_goes_on(
    open_runtime: Callable[..., runtime.Runtime], call: dict[str, Any], message: str
) -> None:
    ok = {"id": "after", "name": "add", "arguments": {"a": 1, "b": 1}}
    async with open_runtime(tools=[ADD]) as rt:
        thread = await rt.thread()
        bad, after = await thread.execute_tool_calls([call, ok])
    assert bad.status == "error" and message in (bad.error or ""), bad.error
    assert after.ok and after.result == 2


async def test_neutral_call_arguments_keep_the_hostile_input_bounds(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    deep: Any = 1
    for _ in range(MAX_ARGUMENT_DEPTH + 5):
        deep = [deep]
    huge = "1" * (MAX_INT_DIGITS + 1)
    calls = [
        {"id": "d1", "name": "add", "arguments": {"a": deep, "b": 1}},
        {"id": "d2", "name": "add", "arguments": json.dumps({"a": deep, "b": 1})},
        {"id": "i1", "name": "add", "arguments": f'{{"a": {huge}, "b": 1}}'},
        {"id": 10**5000, "name": "add", "arguments": {"a": 1, "b": 1}},
    ]
    async with open_runtime(tools=[ADD]) as rt:
        thread = await rt.thread()
        results = await thread.execute_tool_calls(calls)
    assert [r.status for r in results] == ["error", "error", "error", "success"]
    assert "nested deeper than" in (results[0].error or "")
    assert "nested deeper than" in (results[1].error or "")
    assert "digits" in (results[2].error or "")
    assert results[3].call_id and results[3].call_id.startswith("call_")
