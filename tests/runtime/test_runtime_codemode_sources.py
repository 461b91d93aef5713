"""Code mode over any tool source: values, connector namespaces, discovery, snippets (issue 30)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import (
    ThreadState,
    Tool,
    ToolResult,
    code_mode_tool,
    define_tool,
)
from quickjail.runtime.connectors import Connector
from quickjail.runtime.errors import ConnectorError, ToolDefinitionError
from quickjail.runtime.helpers import discovery_tools

pytestmark = pytest.mark.anyio


class AddArgs(BaseModel):
    a: int
    b: int


async def _add(state: ThreadState, args: AddArgs) -> ToolResult:
    return ToolResult.success(args.a + args.b)


async def _explode(state: ThreadState) -> ToolResult:
    return ToolResult.failure("the reactor is offline")


ADD = define_tool(name="add", description="Add two integers.", args=AddArgs, execute=_add)
EXPLODE = define_tool(name="explode", description="Always fails.", execute=_explode)


def _call(code: str, call_id: str = "outer", name: str = "run_code") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {"code": code}}


async def _run(
    open_runtime: Callable[..., runtime.Runtime], tools: list[Any], code: str, **kwargs: Any
) -> ToolResult:
    tool = code_mode_tool(tools, timeout=30, **kwargs)
    async with open_runtime(tools=[tool, *discovery_tools(tool)]) as rt:
        thread = await rt.thread("t")
        with anyio.fail_after(120):
            (result,) = await thread.execute_tool_calls([_call(code)])
    return result


# ------------------------------------------------------------------ item 1: results as values


async def test_a_tool_resolves_to_its_value_and_rejects_with_its_message(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    const sum = await codemode.add({a: 2, b: 3});
    let caught;
    try { await codemode.explode({}); } catch (e) {
      caught = {isError: e instanceof Error, name: e.name, message: e.message};
    }
    return {sum, type: typeof sum, caught};
    """
    result = await _run(open_runtime, [ADD, EXPLODE], code, namespace="codemode")
    assert result.status == "success", result.error
    assert result.result["result"] == {
        "sum": 5,
        "type": "number",
        "caught": {"isError": True, "name": "Error", "message": "the reactor is offline"},
    }


async def test_an_uncaught_tool_failure_fails_the_program_with_the_tools_message(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    result = await _run(open_runtime, [EXPLODE], "return await tools.explode({});")
    assert result.status == "error"
    assert result.error is not None and "the reactor is offline" in result.error


async def test_call_options_other_than_raw_are_a_type_error(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    const out = [];
    for (const options of [{rawr: true}, {raw: "yes"}, 7]) {
      try { await tools.add({a: 1, b: 1}, options as any); out.push("ran"); }
      catch (e) { out.push(e.name); }
    }
    out.push(await tools.add({a: 1, b: 1}, {raw: false}));
    return out;
    """
    result = await _run(open_runtime, [ADD], code)
    assert result.result["result"] == ["TypeError", "TypeError", "TypeError", 2]


# ------------------------------------------------------------------ connectors as namespaces


class _Echo(Connector):
    """A connector whose tools run in its own loop, as a real one's do."""

    def __init__(self, name: str = "echoes", fail: bool = False) -> None:
        super().__init__(name, description="Echo things back.")
        self.fail = fail
        self.listed = 0
        self.closed_in_loop = False

    async def _list_tools(self) -> list[Tool]:
        self.listed += 1
        if self.fail:
            raise ConnectorError("the echo server is down")
        return [self._tool("echo", "Echo the arguments."), self._tool("shout", "Upper-case.")]

    def _tool(self, name: str, description: str) -> Tool:
        async def execute(state: Any, args: dict[str, Any]) -> Any:
            async def remote() -> ToolResult:
                if name == "shout":
                    if not isinstance(args.get("text"), str):
                        return ToolResult.failure("shout needs text")
                    return ToolResult.success(args["text"].upper())
                return ToolResult.success(args)

            return await self.in_loop(remote)

        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        return Tool(
            name=name,
            description=description,
            args=None,
            execute=execute,
            variables=(),
            returns=None,
            execution_mode="local",
            execution_provider=None,
            schemas=(schema, None),
        )

    async def _shutdown(self) -> None:
        self.closed_in_loop = True


async def test_a_connectors_tools_are_a_namespace_and_persist_under_their_full_name(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    echo = _Echo()
    tool = code_mode_tool([ADD, echo], timeout=30)
    code = """
    const a = await echoes.echo({text: "hi"});
    const b = await echoes.shout({text: "hi"});
    let missing;
    try { await echoes.nope({}); } catch (e) { missing = e.message; }
    let failed;
    try { await echoes.shout({}); } catch (e) { failed = e.message; }
    return {a, b, missing, failed, sum: await tools.add({a: 1, b: 2})};
    """
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread("t")
        with anyio.fail_after(120):
            (result,) = await thread.execute_tool_calls([_call(code)])
        messages = await runtime.helpers.get_messages(thread.state)
        assert rt.connectors == (echo,)
    assert result.status == "success", result.error
    value = result.result["result"]
    assert value["a"] == {"text": "hi"} and value["b"] == "HI" and value["sum"] == 3
    assert (
        "echoes has no tool named 'nope'" in value["missing"] and "echo, shout" in value["missing"]
    )
    assert "shout needs text" in value["failed"]
    names = [m.tool_name for m in messages if m.parent_call_id == "outer" and m.kind == "tool_call"]
    assert names == ["echoes.echo", "echoes.shout", "echoes.shout", "add"]
    assert echo.listed == 1  # listed once, on first use
    assert echo.closed and echo.closed_in_loop  # the runtime closed it


async def test_a_connector_that_cannot_list_rejects_its_calls_and_the_rest_still_work(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    let down;
    try { await broken.anything({}); } catch (e) { down = e.message; }
    const found = await search("add");
    return {down, found, sum: await tools.add({a: 2, b: 2})};
    """
    result = await _run(open_runtime, [ADD, _Echo("broken", fail=True)], code)
    value = result.result["result"]
    assert value["down"] == "broken: the echo server is down"
    assert value["sum"] == 4
    assert value["found"][0]["name"] == "tools.add"
    assert any(f["name"] == "broken" and "unavailable" in f["description"] for f in value["found"])


def test_connector_names_must_be_identifiers_and_not_code_modes_own() -> None:
    for bad in ("", "two words", "search", "snippets", "tools", "class", 7):
        with pytest.raises(ToolDefinitionError):
            _Echo(bad)  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="share a name"):
        code_mode_tool([_Echo("x"), _Echo("x")])
    with pytest.raises(ToolDefinitionError, match="globals must not define"):
        code_mode_tool([_Echo("x")], globals={"x": 1})


# ------------------------------------------------------------------ item 4: discovery


def _many_tools(n: int) -> list[Tool]:
    topics = ["weather", "invoice", "calendar", "email", "ticket"]
    tools = []
    for i in range(n):
        topic = topics[i % len(topics)]
        tools.append(
            define_tool(
                name=f"{topic}_tool_{i}",
                description=f"Handle {topic} records, variant {i}: a longish description "
                "that a model would read if it were listed in full.",
                args=AddArgs,
                execute=_add,
            )
        )
    return tools


async def test_with_500_tools_the_description_stays_short_and_search_finds_them(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    tools = _many_tools(500)
    code_tool = code_mode_tool(tools, timeout=60)
    assert len(code_tool.description) <= 4096
    assert "search(query)" in code_tool.description and "500 tools" in code_tool.description
    assert "invoice_tool_7" not in code_tool.description
    code_tool.to_mcp()  # MCP accepts it (it refused descriptions past 4,096 characters)
    program = """
    const hits = await search("calendar 12");
    const decl = await describe("tools.calendar_tool_12");
    const sum = await tools.calendar_tool_12({a: 20, b: 22});
    let unknown;
    try { await describe("tools.nope"); } catch (e) { unknown = e.message; }
    return {top: hits[0].name, count: hits.length, decl, sum, unknown};
    """
    async with open_runtime(tools=[code_tool, *discovery_tools(code_tool)]) as rt:
        thread = await rt.thread("t")
        with anyio.fail_after(120):
            (result,) = await thread.execute_tool_calls([_call(program)])
            searched, described = await thread.execute_tool_calls(
                [
                    {"id": "s", "name": "search", "arguments": {"query": "email", "limit": 3}},
                    {"id": "d", "name": "describe", "arguments": {"name": "email_tool_3"}},
                ]
            )
    assert result.status == "success", result.error
    value = result.result["result"]
    assert value["top"] == "tools.calendar_tool_12" and value["count"] == 10
    assert "function calendar_tool_12(args: {" in value["decl"] and "a: number;" in value["decl"]
    assert value["sum"] == 42
    assert "nothing is named 'tools.nope'" in value["unknown"]
    assert [r["name"].split("_")[0] for r in searched.result] == ["tools.email"] * 3
    assert "Handle email records, variant 3" in described.result


async def test_a_small_tool_set_keeps_its_declarations_in_the_description() -> None:
    text = code_mode_tool([ADD]).description
    assert "export function add(args: {" in text and len(text) <= 4096


async def test_describe_a_namespace_declares_every_tool_of_it(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    result = await _run(open_runtime, [ADD, _Echo()], 'return await describe("echoes");')
    text = result.result["result"]
    assert "declare namespace echoes {" in text
    assert "function echo(" in text and "function shout(" in text


async def test_search_and_describe_refuse_what_is_not_a_string(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    code = """
    const out = [];
    for (const f of [() => search(7 as any), () => describe({} as any)]) {
      try { await f(); out.push("ran"); } catch (e) { out.push(e.name); }
    }
    return out;
    """
    result = await _run(open_runtime, [ADD], code)
    assert result.result["result"] == ["TypeError", "TypeError"]


# ------------------------------------------------------------------ item 6: snippets


def _save(name: str, code: str, description: str = "A saved program.") -> dict[str, Any]:
    arguments = {"name": name, "description": description, "code": code}
    return {"id": f"save_{name}", "name": "save_snippet", "arguments": arguments}


async def test_a_saved_snippet_is_called_by_name_listed_and_kept_across_restarts(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    tool = code_mode_tool([ADD], timeout=30)
    async with open_runtime(tools=[tool, *discovery_tools(tool)]) as rt:
        thread = await rt.thread("t")
        (saved,) = await thread.execute_tool_calls(
            [_save("double_sum", "return 2 * await tools.add(args);", "Twice a + b.")]
        )
        assert saved.status == "success" and saved.result == {"saved": "snippets.double_sum"}
    tool = code_mode_tool([ADD], timeout=30)
    program = """
    const value = await snippets.double_sum({a: 20, b: 1});
    const found = await search("twice");
    const decl = await describe("snippets.double_sum");
    let missing;
    try { await snippets.nope({}); } catch (e) { missing = e.message; }
    return {value, found: found.map((f) => f.name), decl, missing};
    """
    async with open_runtime(tools=[tool, *discovery_tools(tool)]) as rt:
        thread = await rt.thread("t")
        with anyio.fail_after(120):
            (result,) = await thread.execute_tool_calls([_call(program)])
        other = await rt.thread("other")
        (elsewhere,) = await other.execute_tool_calls(
            [_call("return await snippets.double_sum({a: 1, b: 1});")]
        )
    assert result.status == "success", result.error
    value = result.result["result"]
    assert value["value"] == 42
    assert value["found"] == ["snippets.double_sum"]
    assert (
        "function double_sum(args?: unknown)" in value["decl"]
        and "tools.add(args)" in value["decl"]
    )
    assert "no snippet named 'nope'" in value["missing"]
    # snippets belong to their thread
    assert elsewhere.status == "error" and "no snippet named 'double_sum'" in (
        elsewhere.error or ""
    )


async def test_a_failing_snippet_rejects_and_snippets_nest_only_so_deep(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    tool = code_mode_tool([ADD], timeout=60)
    async with open_runtime(tools=[tool, *discovery_tools(tool)]) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls(
            [
                _save("boom", 'throw new RangeError("no " + args.what);'),
                _save("forever", "return await snippets.forever(args);"),
            ]
        )
        program = """
        const out = [];
        for (const run of [() => snippets.boom({what: "way"}), () => snippets.forever({})]) {
          try { await run(); out.push("ran"); } catch (e) { out.push(e.message); }
        }
        return out;
        """
        with anyio.fail_after(120):
            (result,) = await thread.execute_tool_calls([_call(program)])
    boom, forever = result.result["result"]
    assert boom.startswith("snippet boom failed: uncaught RangeError: no way at line 1")
    assert "snippets nest at most 3 deep" in forever


async def test_a_snippet_name_must_be_an_identifier(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    tool = code_mode_tool([ADD], timeout=30)
    async with open_runtime(tools=[tool, *discovery_tools(tool)]) as rt:
        thread = await rt.thread("t")
        (bad,) = await thread.execute_tool_calls([_save("no-dashes", "return 1")])
    assert bad.status == "error" and "must be an identifier" in (bad.error or "")
