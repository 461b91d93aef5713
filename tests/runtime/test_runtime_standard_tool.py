"""The StandardTool shape: name/title/description/schemas, execute, formatted, adapters."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, ClassVar

import anyio.lowlevel
import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from quickjail import runtime
from quickjail.runtime import (
    ThreadState,
    Tool,
    ToolResult,
    Variable,
    define_tool,
    export_tools,
    helpers,
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
        {"path": ["a"], "message": 'expected a number (got a string "1")'},
        {"path": ["c"], "message": "unexpected key (allowed keys: a, b)"},
    ]
    with pytest.raises(ToolValidationError) as caught:
        await DIVIDE.execute({"a": 1, "b": 2, "c": 3})
    assert caught.value.issues == [
        {"path": ["c"], "message": "unexpected key (allowed keys: a, b)"}
    ]


async def test_execute_raises_an_output_validation_error_for_a_result_off_its_schema() -> None:
    with pytest.raises(ToolValidationError) as caught:
        await LIAR.execute({"a": 1, "b": 2})
    assert caught.value.target == "output"
    assert caught.value.issues == [
        {"path": ["value"], "message": 'expected a number (got a string "not a number")'}
    ]


class Reading(BaseModel):
    label: str
    values: list[float]


@pytest.mark.parametrize(
    ("returned", "issues"),
    [
        (
            {"label": "t", "values": ["21"]},
            [{"path": ["values", 0], "message": 'expected a number (got a string "21")'}],
        ),
        (
            {"label": "t", "values": [], "unit": "C"},
            [{"path": ["unit"], "message": "unexpected key (allowed keys: label, values)"}],
        ),
        (
            {"label": 7, "values": [True]},
            [
                {"path": ["label"], "message": "expected a string (got a number 7)"},
                {"path": ["values", 0], "message": "expected a number (got a boolean true)"},
            ],
        ),
        ({"values": []}, [{"path": ["label"], "message": "Field required"}]),
        ("21", [{"path": [], "message": 'expected an object (got a string "21")'}]),
    ],
    ids=["string-for-number", "unlisted-key", "wrong-types", "missing", "not-an-object"],
)
async def test_output_is_validated_exactly_as_its_published_schema(
    returned: Any, issues: list[dict[str, Any]]
) -> None:
    async def measure(state: ThreadState | None) -> ToolResult:
        return ToolResult.success(returned)

    tool = define_tool(description="Measure.", returns=Reading, execute=measure, name="measure")
    assert tool.output_schema is not None
    assert tool.output_schema["additionalProperties"] is False
    with pytest.raises(ToolValidationError) as caught:
        await tool.execute({})
    assert caught.value.target == "output"
    assert caught.value.issues == issues
    result = await tool.call({})
    assert not result.ok and (result.error or "").startswith(
        "tool 'measure' returned a result that does not match Reading: "
    )


async def test_output_that_matches_its_schema_comes_back_as_json() -> None:
    async def measure(state: ThreadState | None) -> ToolResult:
        return ToolResult.success({"label": "t", "values": [1, 2.5]})

    async def as_model(state: ThreadState | None) -> ToolResult:
        return ToolResult.success(Reading(label="m", values=[3]))

    tool = define_tool(description="Measure.", returns=Reading, execute=measure, name="measure")
    assert await tool.execute({}) == {"label": "t", "values": [1.0, 2.5]}
    model = define_tool(description="Model.", returns=Reading, execute=as_model, name="model")
    assert await model.execute({}) == {"label": "m", "values": [3.0]}


async def test_validation_issues_carry_the_path_as_a_list_of_keys() -> None:
    class Inner(BaseModel):
        n: int

    class Outer(BaseModel):
        rows: list[dict[str, Inner]]

    async def run(state: ThreadState | None, args: Outer) -> ToolResult:
        return ToolResult.success(None)

    tool = define_tool(description="Rows.", args=Outer, execute=run, name="rows")
    with pytest.raises(ToolValidationError) as caught:
        await tool.execute({"rows": [{"a.b": {"n": 1}}, {"0": {"n": "1"}}]})
    # keys stay keys (a dotted key is one key; an index is an int, a key "0" a str)
    assert caught.value.issues == [
        {"path": ["rows", 1, "0", "n"], "message": 'expected an integer (got a string "1")'}
    ]
    assert str(caught.value).endswith('rows.1.0.n: expected an integer (got a string "1")')
    with pytest.raises(ToolValidationError) as caught:
        await tool.execute({"rows": [{"a.b": {"m": 1}}]})
    assert [i["path"] for i in caught.value.issues] == [
        ["rows", 0, "a.b", "m"],
        ["rows", 0, "a.b", "n"],
    ]


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

    def kind(result: Any) -> Any:
        return {"failed": str(result)} if isinstance(result, Exception) else {"ok": result}

    custom = plain.formatted(kind)
    assert await custom.execute({"a": 1, "b": 0}) == {"failed": "division by zero"}
    failed = await custom.execute({"a": 1, "b": 2, "z": 0})
    assert failed["failed"].startswith("invalid arguments for tool 'divide': z:")
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
        # a Thread is as good as its state
        assert await tool.execute({}, {"state": thread}) == "the key is [REDACTED]"


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


async def test_formatted_applies_the_formatter_to_every_result_success_included() -> None:
    # as the reference's formatOutput(result: Output | Error): the value, or the error
    def tagged(result: Any) -> Any:
        if isinstance(result, Exception):
            return ["failed", type(result).__name__, str(result)]
        return ["ok", result]

    tool = DIVIDE.formatted(tagged)
    assert await tool.execute({"a": 1, "b": 4}) == ["ok", {"value": 0.25}]
    assert await tool.execute({"a": 1, "b": 0}) == [
        "failed",
        "ToolExecutionError",
        "division by zero",
    ]
    failed, name, message = await tool.execute({"a": "x", "b": 1})
    assert (failed, name) == ("failed", "ToolValidationError") and message.startswith(
        "invalid arguments for tool 'divide'"
    )
    # the default formatter keeps a success's value and turns a failure into data
    assert await DIVIDE.formatted().execute({"a": 1, "b": 4}) == {"value": 0.25}
    with pytest.raises(TypeError, match="fmt must be callable"):
        DIVIDE.formatted("json")  # type: ignore[arg-type]


async def test_formatted_awaits_an_async_formatter() -> None:
    async def as_text(result: Any) -> str:
        await anyio.lowlevel.checkpoint()
        return f"error: {result}" if isinstance(result, Exception) else f"success: {result}"

    tool = DIVIDE.formatted(as_text)
    assert await tool.execute({"a": 1, "b": 4}) == "success: {'value': 0.25}"
    assert await tool.execute({"a": 1, "b": 0}) == "error: division by zero"


async def test_execute_hands_any_meta_to_a_handler_that_declares_it() -> None:
    seen: list[Any] = []

    async def remember(state: ThreadState | None, args: DivideArgs, meta: Any) -> ToolResult:
        seen.append((state, meta))
        return ToolResult.success(args.a / args.b)

    tool = define_tool(description="Divide.", args=DivideArgs, execute=remember, name="remember")
    caller = object()
    for meta in (None, 42, "trace-7", {"user": "ada"}, [1, 2], caller):
        assert await tool.execute({"a": 1, "b": 2}, meta) == 0.5
    assert seen == [
        (None, None),
        (None, 42),
        (None, "trace-7"),
        (None, {"user": "ada"}),
        (None, [1, 2]),
        (None, caller),
    ]
    # a handler without a meta parameter runs with any meta too
    for meta in (42, "x", {"state": "not a thread"}):
        assert await DIVIDE.execute({"a": 1, "b": 2}, meta) == {"value": 0.5}


async def test_a_thread_call_gives_the_handler_its_state_and_call_id_as_meta(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def who(state: ThreadState | None, meta: Any) -> ToolResult:
        assert state is not None and meta["state"] is state
        return ToolResult.success(meta["call_id"])

    tool = define_tool(description="Who calls.", execute=who, name="who")
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls([{"id": "c9", "name": "who", "arguments": {}}])
    assert result.result == "c9"


def test_tool_content_is_a_public_union_that_tells_text_from_images() -> None:
    adapter = TypeAdapter(list[helpers.ToolContent])
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    items = adapter.validate_python(
        [{"type": "text", "text": "hi"}, {"type": "image", "data": png, "mime_type": "image/png"}]
    )
    assert items == [
        helpers.TextContent(text="hi"),
        helpers.ImageContent(data=png, mime_type="image/png"),
    ]
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        adapter.validate_python([{"type": "audio", "data": ""}])


class ForeignAdd:
    """A StandardTool as another library defines one: plain attributes and execute."""

    name = "add"
    title = "Add"
    description = "Add two integers."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    output_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
    }

    def __init__(self, *, lie: bool = False) -> None:
        self.metas: list[Any] = []
        self.lie = lie

    async def execute(self, input: dict[str, Any], meta: Any = None) -> dict[str, Any]:
        self.metas.append(meta)
        total = input["a"] + input["b"]
        return {"sum": str(total)} if self.lie else {"sum": total}


class ForeignShout:
    name = "shout"
    description = "Upper-case a text."
    input_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"text": {"type": "string"}},
    }

    def execute(self, input: dict[str, Any], meta: Any) -> str:
        return str(input["text"]).upper()


async def test_a_foreign_standard_tool_runs_in_a_thread_held_to_its_schemas(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    add, liar = ForeignAdd(), ForeignAdd(lie=True)
    liar.name = "add_badly"
    async with open_runtime(tools=[add, liar, ForeignShout()]) as rt:
        assert [t.name for t in rt.tools] == ["add", "add_badly", "shout"]
        thread = await rt.thread()
        results = await thread.execute_tool_calls(
            [
                {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}},
                {"id": "c2", "name": "add", "arguments": {"a": "1", "b": 2, "c": 0}},
                {"id": "c3", "name": "add", "arguments": {"a": 1}},
                {"id": "c4", "name": "add_badly", "arguments": {"a": 1, "b": 2}},
                {"id": "c5", "name": "shout", "arguments": {"text": "hi"}},
            ]
        )
        child = await thread.child(tools=[ForeignShout()])
        (shouted,) = await child.execute_tool_calls(
            [{"id": "c6", "name": "shout", "arguments": {"text": "yo"}}]
        )
    assert [r.status for r in results] == ["success", "error", "error", "error", "success"]
    assert results[0].result == {"sum": 3} and results[4].result == "HI"
    assert results[1].error == (
        "invalid arguments for tool 'add': a: expected an integer (got a string \"1\"); "
        "c: unexpected key (allowed keys: a, b)"
    )
    assert results[2].error == "invalid arguments for tool 'add': b: Field required"
    assert results[3].error == (
        "tool 'add_badly' returned a result that does not match its output schema: "
        'sum: expected an integer (got a string "3")'
    )
    assert add.metas == [{"state": add.metas[0]["state"], "call_id": "c1"}]
    assert isinstance(add.metas[0]["state"], ThreadState)
    assert shouted.result == "YO"
    assert export_tools([Tool.from_standard(add)], "mcp") == export_tools([add], "mcp")


async def test_code_mode_calls_a_foreign_standard_tool(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = runtime.code_mode_tool([ForeignAdd()], timeout=30)
    assert "export function add(" in code.description
    async with open_runtime(tools=[code]) as rt:
        thread = await rt.thread()
        program = "const r = await tools.add({a: 20, b: 22}); return r.sum;"
        (result,) = await thread.execute_tool_calls(
            [{"id": "c", "name": "run_code", "arguments": {"code": program}}]
        )
    assert result.ok, result.error
    assert result.result["result"] == 42


async def test_a_foreign_standard_tool_runs_without_a_thread() -> None:
    tool = Tool.from_standard(ForeignAdd())
    assert tool.title == "Add" and tool.input_schema == ForeignAdd.input_schema
    assert Tool.from_standard(tool) is tool and Tool.from_standard(DIVIDE) is DIVIDE
    assert await tool.execute({"a": 2, "b": 3}, "ctx") == {"sum": 5}
    with pytest.raises(ToolValidationError) as caught:
        await tool.execute({"a": 2})
    assert caught.value.issues == [{"path": ["b"], "message": "Field required"}]


@pytest.mark.parametrize(
    ("thing", "message"),
    [
        (object(), "expected Tool objects or StandardTool objects"),
        (lambda x: x, "expected Tool objects or StandardTool objects"),
        (
            type("T", (), {"name": "t", "description": "", "input_schema": {}, "execute": print}),
            "needs a non-empty description",
        ),
        (
            type("T", (), {"name": "t", "description": "d", "input_schema": 3, "execute": print}),
            "input_schema must be a JSON Schema object, got int",
        ),
        (
            type(
                "T",
                (),
                {
                    "name": "t",
                    "description": "d",
                    "input_schema": {"type": "string"},
                    "execute": print,
                },
            ),
            "input_schema must describe an object",
        ),
    ],
    ids=["object", "function", "empty-description", "schema-not-a-mapping", "schema-not-an-object"],
)
def test_what_is_no_tool_is_refused_with_a_clear_message(thing: Any, message: str) -> None:
    with pytest.raises(runtime.errors.ToolDefinitionError, match=message):
        runtime.Runtime(":memory:", tools=[thing])
    with pytest.raises(runtime.errors.ToolDefinitionError, match=message):
        runtime.code_mode_tool([thing])
