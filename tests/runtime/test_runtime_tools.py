"""define_tool: definition-time rules, standalone calls, discovery."""

from __future__ import annotations

import enum
import re
import textwrap
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

from quickjail import runtime
from quickjail.runtime import ToolResult, Variable, define_tool
from quickjail.runtime.errors import ToolDefinitionError


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Inner(BaseModel):
    label: str
    weight: float = 1.0


class AllAllowed(BaseModel):
    text: str
    count: int
    ratio: float
    flag: bool
    nothing: None = None
    mode: Literal["fast", "slow"] = "fast"
    color: Color = Color.RED
    maybe: Optional[int] = None  # noqa: UP045 - the typing spelling must be accepted too
    maybe_new: int | None = None
    items: list[str] = Field(default_factory=list)
    inner: Inner | None = None
    inners: list[Inner] = Field(default_factory=list)
    record: dict[str, int] = Field(default_factory=dict)
    either: Union[int, str] = 0  # noqa: UP007
    described: str = Field("x", description="has a description")


async def _echo(state: runtime.ThreadState, args: BaseModel) -> ToolResult:
    return ToolResult.success(args.model_dump(mode="json"))


async def _no_args(state: runtime.ThreadState) -> ToolResult:
    return ToolResult.success("done")


def test_every_allowed_argument_type_is_accepted() -> None:
    tool = define_tool(description="all types", args=AllAllowed, execute=_echo, name="all_types")
    assert set(tool.input_schema["properties"]) == set(AllAllowed.model_fields)


class WithDatetime(BaseModel):
    when: datetime


class WithTuple(BaseModel):
    pair: tuple[int, int]


class WithIntKeys(BaseModel):
    table: dict[int, str]


class WithAny(BaseModel):
    blob: Any


class WithBareList(BaseModel):
    things: list  # type: ignore[type-arg]


class Nested(BaseModel):
    when: list[WithDatetime]


class Recursive(BaseModel):
    children: list[Recursive] = Field(default_factory=list)


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (WithDatetime, "WithDatetime.when"),
        (WithTuple, "WithTuple.pair"),
        (WithIntKeys, "WithIntKeys.table"),
        (WithAny, "WithAny.blob"),
        (WithBareList, "WithBareList.things"),
        (Nested, "Nested.when[].when"),
        (Recursive, "Recursive.children[]"),
    ],
    ids=["datetime", "tuple", "int-keys", "any", "bare-list", "nested-datetime", "recursive"],
)
def test_unsupported_argument_type_is_refused_naming_the_field(
    model: type[BaseModel], field: str
) -> None:
    with pytest.raises(ToolDefinitionError, match="field " + re.escape(field)):
        define_tool(description="bad", args=model, execute=_echo, name="bad_tool")


def _nested_model(depth: int) -> type[BaseModel]:
    model: type[BaseModel] = type(
        "Level0", (BaseModel,), {"__annotations__": {"value": int}, "__module__": __name__}
    )
    for level in range(1, depth):
        model = type(
            f"Level{level}",
            (BaseModel,),
            {"__annotations__": {"child": model}, "__module__": __name__},
        )
    return model


def test_seven_levels_of_nesting_define_validate_and_export() -> None:
    model = _nested_model(7)
    tool = define_tool(description="deep", args=model, execute=_echo, name="deep")
    schema = tool.input_schema
    depth = 0
    while "child" in schema.get("properties", {}):
        schema = schema["properties"]["child"]
        depth += 1
    assert depth == 6 and schema["properties"]["value"] == {"type": "integer"}
    assert "$defs" not in str(tool.input_schema)
    runtime.export_tools([tool], "gemini")


def test_empty_description_is_refused_at_definition() -> None:
    for bad in ("", "   ", None):
        with pytest.raises(ToolDefinitionError, match="description"):
            define_tool(description=bad, execute=_no_args, name="x")  # type: ignore[arg-type]


def test_tool_without_args_has_an_empty_object_schema() -> None:
    tool = define_tool(description="no args", execute=_no_args, name="ping")
    assert tool.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert tool.args_model is None


def test_name_defaults_to_the_defining_files_stem() -> None:
    tool = define_tool(description="named by file", execute=_no_args)
    assert tool.name == Path(__file__).stem


@pytest.mark.parametrize("name", ["CamelCase", "has-dash", "x" * 65, "1starts_with_digit"])
def test_non_snake_case_name_warns_but_is_accepted(name: str) -> None:
    with pytest.warns(runtime.errors.ToolNameWarning, match="snake_case"):
        tool = define_tool(description="odd name", execute=_no_args, name=name)
    assert tool.name == name


def test_sync_execute_is_refused() -> None:
    def sync(state: Any) -> ToolResult:
        return ToolResult.success()

    with pytest.raises(ToolDefinitionError, match="async"):
        define_tool(description="sync", execute=sync, name="sync_tool")  # type: ignore[arg-type]


def test_execute_signature_must_match_args() -> None:
    with pytest.raises(ToolDefinitionError, match=r"fn\(state, args\)"):
        define_tool(description="x", args=Inner, execute=_no_args, name="mismatch")


def test_duplicate_names_are_refused_by_the_runtime(db_path: Path) -> None:
    a = define_tool(description="a", execute=_no_args, name="same")
    b = define_tool(description="b", execute=_no_args, name="same")
    with pytest.raises(ToolDefinitionError, match="'same'"):
        runtime.Runtime(db_path, tools=[a, b])


def test_duplicate_variable_declarations_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="duplicate variable"):
        define_tool(
            description="x",
            execute=_no_args,
            name="dup_vars",
            variables=[Variable("A"), Variable("A")],
        )


def test_provider_tool_needs_no_execute_and_is_never_run_locally() -> None:
    tool = define_tool(
        description="web search run by the provider",
        args=Inner,
        name="web_search",
        execution_mode="provider",
        execution_provider="openai",
    )
    assert tool.execution_mode == "provider" and tool.execution_provider == "openai"


@pytest.mark.anyio
async def test_provider_tool_call_is_an_error_result(rt: runtime.Runtime) -> None:
    tool = define_tool(
        description="d", name="web", execution_mode="provider", execution_provider="openai"
    )
    thread = await rt.thread()
    result = await tool.call({}, thread.state)
    assert result.status == "error" and "executed by openai" in (result.error or "")


@pytest.mark.anyio
async def test_standalone_call_validates_input(rt: runtime.Runtime) -> None:
    tool = define_tool(description="echo", args=Inner, execute=_echo, name="echo")
    state = (await rt.thread()).state
    ok = await tool.call({"label": "a"}, state)
    assert ok.status == "success" and ok.result == {"label": "a", "weight": 1.0}
    bad = await tool.call({"weight": "heavy"}, state)
    assert bad.status == "error"
    assert bad.error is not None and "invalid arguments for tool 'echo'" in bad.error
    assert "label" in bad.error and "weight" in bad.error


class Out(BaseModel):
    total: int


@pytest.mark.anyio
async def test_standalone_call_validates_output_when_returns_is_set(rt: runtime.Runtime) -> None:
    async def good(state: Any) -> ToolResult:
        return ToolResult.success(Out(total=3))

    async def wrong(state: Any) -> ToolResult:
        return ToolResult.success({"total": "many"})

    state = (await rt.thread()).state
    ok = await define_tool(description="g", execute=good, returns=Out, name="g").call({}, state)
    assert ok.result == {"total": 3}
    bad = await define_tool(description="w", execute=wrong, returns=Out, name="w").call({}, state)
    assert bad.status == "error" and "does not match Out" in (bad.error or "")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("returned", "mistake"),
    [("plain text", "returned str"), ({"a": 1}, "returned dict"), (None, "returned NoneType")],
    ids=["str", "dict", "none"],
)
async def test_tool_returning_something_else_is_an_error_naming_the_mistake(
    rt: runtime.Runtime, returned: object, mistake: str
) -> None:
    async def sloppy(state: Any) -> Any:
        return returned

    tool = define_tool(description="sloppy", execute=sloppy, name="sloppy")
    result = await tool.call({}, (await rt.thread()).state)
    assert result.status == "error"
    assert result.error is not None and mistake in result.error and "ToolResult" in result.error


@pytest.mark.anyio
async def test_tool_that_raises_becomes_an_error_with_its_stack(rt: runtime.Runtime) -> None:
    async def boom(state: Any) -> ToolResult:
        raise KeyError("missing thing")

    result = await define_tool(description="b", execute=boom, name="boom").call(
        {}, (await rt.thread()).state
    )
    assert result.status == "error" and result.error == "KeyError: 'missing thing'"
    assert result.stack is not None and "Traceback" in result.stack and "boom" in result.stack


@pytest.mark.anyio
async def test_non_json_result_is_an_error(rt: runtime.Runtime) -> None:
    async def nan(state: Any) -> ToolResult:
        return ToolResult.success(float("nan"))

    result = await define_tool(description="n", execute=nan, name="nan").call(
        {}, (await rt.thread()).state
    )
    assert result.status == "error" and "not JSON-compatible" in (result.error or "")


def test_tool_result_shapes() -> None:
    assert ToolResult.success(1).model_dump(exclude={"attachments"}) == {
        "status": "success",
        "result": 1,
        "error": None,
        "stack": None,
        "call_id": None,
        "tool_name": None,
    }
    with pytest.raises(ValueError, match="error message"):
        ToolResult(status="error")
    with pytest.raises(ValueError, match="base64"):
        runtime.ToolAttachment(name="a", mime_type="image/png", data="not base64!")


def test_discover_tools_loads_each_file_that_defines_a_tool(tmp_path: Path) -> None:
    tools_dir = tmp_path / "tools"
    tools_dir.mkdir()
    header = (
        "from __future__ import annotations\n"
        "from pydantic import BaseModel\n"
        "from quickjail.runtime import ToolResult, define_tool\n"
    )
    (tools_dir / "get_weather.py").write_text(
        header
        + textwrap.dedent(
            """\
        class Args(BaseModel):
            city: str

        async def execute(state, args: Args) -> ToolResult:
            return ToolResult.success(args.city)

        tool = define_tool(description="Weather for a city", args=Args, execute=execute)
        """
        )
    )
    (tools_dir / "ping.py").write_text(
        header
        + textwrap.dedent(
            """\
        async def execute(state) -> ToolResult:
            return ToolResult.success("pong")

        ping = define_tool(description="Ping", execute=execute)
        """
        )
    )
    (tools_dir / "helpers.py").write_text("VALUE = 1\n")
    (tools_dir / "_private.py").write_text("raise RuntimeError('never imported')\n")
    tools = runtime.discover_tools(tools_dir)
    assert [t.name for t in tools] == ["get_weather", "ping"]
    assert tools[0].input_schema["required"] == ["city"]


def test_discover_tools_refuses_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ToolDefinitionError, match="does not exist"):
        runtime.discover_tools(tmp_path / "nope")


@pytest.mark.anyio
async def test_an_object_with_async_call_is_a_valid_execute(rt: runtime.Runtime) -> None:
    class Counter:
        def __init__(self) -> None:
            self.calls = 0

        async def __call__(self, state: Any) -> ToolResult:
            self.calls += 1
            return ToolResult.success(self.calls)

    tool = define_tool(description="counts", execute=Counter(), name="counter")
    assert (await tool.call({}, (await rt.thread()).state)).result == 1
