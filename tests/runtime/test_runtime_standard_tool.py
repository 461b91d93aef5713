"""The StandardTool shape: name/title/description/schemas, execute, formatted, adapters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import (
    ThreadState,
    Tool,
    ToolResult,
    Variable,
    define_tool,
    export_tools,
)
from quickjail.runtime.errors import ToolExecutionError, ToolValidationError

pytestmark = pytest.mark.anyio


class DivideArgs(BaseModel):
    a: float
    b: float


class Quotient(BaseModel):
    value: float


async def _divide(state: ThreadState | None, args: DivideArgs) -> ToolResult:
    if args.b == 0:
        return ToolResult.failure("division by zero")
    return ToolResult.success({"value": args.a / args.b})


DIVIDE = define_tool(
    description="Divide a by b.",
    title="Divide",
    args=DivideArgs,
    returns=Quotient,
    execute=_divide,
    name="divide",
)


async def _liar(state: ThreadState | None, args: DivideArgs) -> ToolResult:
    return ToolResult.success({"value": "not a number"})


LIAR = define_tool(
    description="Claims a float.", args=DivideArgs, returns=Quotient, execute=_liar, name="liar"
)


def test_every_tool_has_the_standard_tool_fields() -> None:
    assert DIVIDE.name == "divide" and DIVIDE.title == "Divide"
    assert DIVIDE.description == "Divide a by b."
    assert DIVIDE.input_schema["required"] == ["a", "b"]
    assert DIVIDE.output_schema is not None and DIVIDE.output_schema["required"] == ["value"]
    assert LIAR.title is None
    untyped = define_tool(description="x", execute=_noop, name="noop")
    assert untyped.output_schema is None


async def _noop(state: ThreadState | None) -> ToolResult:
    return ToolResult.success(None)


async def test_execute_runs_without_a_thread_and_returns_the_validated_output() -> None:
    assert await DIVIDE.execute({"a": 1, "b": 4}) == {"value": 0.25}
    assert await DIVIDE.execute(DivideArgs(a=9, b=3), None) == {"value": 3.0}


async def test_call_without_a_state_runs_a_tool_that_needs_none() -> None:
    result = await DIVIDE.call({"a": 1, "b": 2}, None)
    assert result.ok and result.result == {"value": 0.5}


async def test_execute_raises_an_input_validation_error_with_the_issues() -> None:
    with pytest.raises(ToolValidationError) as caught:
        await DIVIDE.execute({"a": "1", "b": 2, "c": 3})
    assert caught.value.target == "input"
    assert caught.value.issues == [
        {"path": "a", "message": 'expected a number (got a string "1")'},
        {"path": "c", "message": "unexpected key (allowed keys: a, b)"},
    ]
    with pytest.raises(ToolValidationError) as caught:
        await DIVIDE.execute({"a": 1, "b": 2, "c": 3})
    assert caught.value.issues == [{"path": "c", "message": "unexpected key (allowed keys: a, b)"}]


async def test_execute_raises_an_output_validation_error_for_a_result_off_its_schema() -> None:
    with pytest.raises(ToolValidationError) as caught:
        await LIAR.execute({"a": 1, "b": 2})
    assert caught.value.target == "output"
    assert caught.value.issues[0]["path"] == "value"
    assert "valid number" in caught.value.issues[0]["message"]


async def test_execute_raises_the_tools_own_failure() -> None:
    with pytest.raises(ToolExecutionError, match="division by zero") as caught:
        await DIVIDE.execute({"a": 1, "b": 0})
    assert isinstance(caught.value.result, ToolResult) and not caught.value.result.ok


async def test_a_required_variable_without_a_thread_is_a_failure_naming_it() -> None:
    needy = define_tool(
        description="needs a key",
        execute=_noop,
        name="needy",
        variables=[Variable("API_KEY", required=True)],
    )
    with pytest.raises(ToolExecutionError, match="'API_KEY'"):
        await needy.execute({})
    result = await needy.call({}, None)
    assert not result.ok and "API_KEY" in (result.error or "")


async def test_formatted_returns_failures_as_data_and_never_stacks() -> None:
    plain = DIVIDE.formatted()
    assert plain.is_formatted and not DIVIDE.is_formatted
    assert await plain.execute({"a": 1, "b": 2}) == {"value": 0.5}
    assert await plain.execute({"a": 1, "b": 0}) == {"error": "division by zero"}
    bad_input = await plain.execute({"a": "x", "b": 1})
    assert bad_input["error"].startswith("invalid arguments for tool 'divide': a:")

    def kind(exc: Exception) -> Any:
        return {"failed": type(exc).__name__}

    custom = plain.formatted(kind)
    assert await custom.execute({"a": 1, "b": 0}) == {"failed": "ToolExecutionError"}
    assert await custom.execute({"a": 1, "b": 2, "z": 0}) == {"failed": "ToolValidationError"}
    again = custom.formatted()  # back to the default: re-derived from the validated execute
    assert await again.execute({"a": 1, "b": 0}) == {"error": "division by zero"}
    # the formatted tool is still the same tool for a thread and for exports
    assert export_tools([custom], "mcp") == export_tools([DIVIDE], "mcp")
    assert (await custom.call({"a": 1, "b": 0}, None)).error == "division by zero"


async def test_execute_with_a_thread_in_meta_redacts_secrets(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def reveal(state: ThreadState | None) -> ToolResult:
        assert state is not None
        return ToolResult.success(f"the key is {await state.env('KEY')}")

    tool = define_tool(
        description="reveal",
        execute=reveal,
        name="reveal",
        variables=[Variable("KEY", type="secret")],
    )
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        await thread.state.set_env("KEY", "hunter2-very-secret", "secret")
        assert await tool.execute({}, thread.state) == "the key is [REDACTED]"
        shown = await tool.execute(None, {"state": thread.state, "call_id": "c1"})
        assert shown == "the key is [REDACTED]"
    with pytest.raises(TypeError, match="meta"):
        await tool.execute({}, 42)


async def test_tool_from_function_and_back() -> None:
    async def scale(values: list[float], factor: float = 2.0) -> list[float]:
        """Multiply every value by factor."""
        return [v * factor for v in values]

    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    tool = Tool.from_function(scale, title="Scale")
    assert isinstance(tool, Tool) and tool.name == "scale" and tool.title == "Scale"
    assert tool.description == "Multiply every value by factor."
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "values": {"type": "array", "items": {"type": "number"}},
            "factor": {"type": "number", "default": 2.0},
        },
        "required": ["values"],
        "additionalProperties": False,
    }
    assert await tool.execute({"values": [1, 2]}) == [2.0, 4.0]
    with pytest.raises(ToolValidationError):
        await tool.execute({"values": ["1"]})
    sync_tool = Tool.from_function(shout)
    assert await sync_tool.execute({"text": "hi"}) == "HI"
    fn = tool.as_function()
    assert fn.__name__ == "scale" and await fn(values=[3], factor=3) == [9.0]
    with pytest.raises(ToolValidationError):
        await fn(values=[3], nope=1)


async def test_tool_from_function_passes_the_thread_state(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def where(state: ThreadState, label: str) -> str:
        """Say which thread."""
        return f"{label}:{state.thread_id}"

    tool = Tool.from_function(where)
    assert "state" not in tool.input_schema["properties"]
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread("t-1")
        (result,) = await thread.execute_tool_calls(
            [{"id": "c", "name": "where", "arguments": {"label": "here"}}]
        )
    assert result.result == "here:t-1"


def test_tool_from_function_refuses_what_it_cannot_describe() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        """Untyped."""

    def varargs(*xs: int) -> None:
        """Varargs."""

    def undocumented(x: int) -> None:
        pass

    for fn, message in (
        (untyped, "needs a type"),
        (varargs, r"\*args"),
        (undocumented, "docstring"),
    ):
        with pytest.raises(runtime.errors.ToolDefinitionError, match=message):
            Tool.from_function(fn)


def test_to_mcp_is_a_valid_mcp_tool_descriptor() -> None:
    mcp_types = pytest.importorskip("mcp.types")
    descriptor = DIVIDE.to_mcp()
    assert descriptor == {
        "name": "divide",
        "title": "Divide",
        "description": "Divide a by b.",
        "inputSchema": DIVIDE.input_schema,
        "outputSchema": DIVIDE.output_schema,
    }
    parsed = mcp_types.Tool.model_validate(descriptor)
    assert parsed.title == "Divide" and parsed.input_schema == DIVIDE.input_schema
