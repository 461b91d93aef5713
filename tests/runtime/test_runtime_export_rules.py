"""Export rules as each provider writes them (issue 29 item 17): OpenAI strict schemas for
optional arguments (as OpenAI's SDK builds them), each format's own tool-name rule, and the
argument types ``define_tool`` refuses, with the reason."""

from __future__ import annotations

import datetime
import warnings
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field

from quickjail import runtime
from quickjail.runtime import ToolResult, define_tool, export_tools
from quickjail.runtime.errors import ProviderFormatError, ToolDefinitionError


class Filters(BaseModel):
    tag: str
    since_days: int = 7


class SearchArgs(BaseModel):
    query: str = Field(description="What to look for")
    limit: int = Field(10, ge=1, description="At most this many")
    lang: str | None = None
    filters: Filters | None = None


async def _echo(state: Any, args: SearchArgs) -> ToolResult:
    return ToolResult.success(args.model_dump())


FORMATS = ("openai-responses", "openai-chat", "anthropic", "gemini", "mcp", "standard")
SEARCH = define_tool(description="Search.", args=SearchArgs, execute=_echo, name="search")


def test_openai_exports_optional_arguments_as_strict_required_and_nullable() -> None:
    (chat,) = export_tools([SEARCH], "openai-chat")
    (responses,) = export_tools([SEARCH], "openai-responses")
    function = chat["function"]
    assert function["strict"] is True and responses["strict"] is True
    params = function["parameters"]
    assert params == responses["parameters"]
    assert params["required"] == ["query", "limit", "lang", "filters"]
    assert params["additionalProperties"] is False
    assert params["properties"]["limit"] == {
        "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
        "description": "At most this many",
    }
    nested = params["properties"]["filters"]["anyOf"][0]
    assert nested["required"] == ["tag", "since_days"]
    assert nested["properties"]["since_days"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert "default" not in str(params)
    # the other formats keep the exact canonical schema
    (anthropic,) = export_tools([SEARCH], "anthropic")
    assert anthropic["input_schema"] == SEARCH.input_schema


def test_openai_strict_schema_is_accepted_by_the_openai_sdks_own_strict_builder() -> None:
    pytest.importorskip("openai")
    from openai.lib._pydantic import to_strict_json_schema

    sdk = to_strict_json_schema(SearchArgs)
    (chat,) = export_tools([SEARCH], "openai-chat")
    ours = chat["function"]["parameters"]
    assert ours["required"] == sdk["required"]
    assert ours["additionalProperties"] is sdk["additionalProperties"] is False


def test_the_null_a_strict_model_sends_for_a_left_out_argument_means_its_default() -> None:
    async def main() -> Any:
        return await SEARCH.execute(
            {"query": "q", "limit": None, "lang": None, "filters": {"tag": "t", "since_days": None}}
        )

    assert anyio.run(main) == {
        "query": "q",
        "limit": 10,
        "lang": None,
        "filters": {"tag": "t", "since_days": 7},
    }


def test_a_schema_strict_mode_cannot_express_is_exported_as_is_and_not_strict() -> None:
    class Open(BaseModel):
        scores: dict[str, float] = Field(default_factory=dict)

    tool = define_tool(description="d", args=Open, execute=_echo, name="open_record")
    (chat,) = export_tools([tool], "openai-chat")
    assert chat["function"]["strict"] is False
    assert chat["function"]["parameters"] == tool.input_schema


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("get-weather", {"openai-chat", "openai-responses", "anthropic", "gemini", "mcp"}),
        ("files.read", {"gemini", "mcp"}),
        ("ns:tool", {"gemini"}),
        ("1st_tool", {"openai-chat", "openai-responses", "anthropic", "mcp", "standard"}),
        ("x" * 65, {"mcp"}),
        ("snake_case", set(FORMATS)),
    ],
    ids=["dash", "dot", "colon", "leading-digit", "65-chars", "snake"],
)
def test_each_format_holds_tool_names_to_its_own_rule(name: str, allowed: set[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", runtime.errors.ToolNameWarning)
        tool = define_tool(description="d", execute=_run0, name=name)
    for fmt in FORMATS:
        if fmt in allowed:
            assert export_tools([tool], fmt)  # type: ignore[arg-type]
        else:
            with pytest.raises(ProviderFormatError, match=f"{name!r}: name must match"):
                export_tools([tool], fmt)  # type: ignore[arg-type]


async def _run0(state: Any) -> ToolResult:
    return ToolResult.success()


class Node(BaseModel):
    label: str
    children: list[Node] = []


class When(BaseModel):
    at: datetime.datetime


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            When,
            r"When\.at: unsupported type datetime \(arguments are JSON: pass an ISO 8601 string",
        ),
        (Node, r"recursive model Node is not allowed; .*flatten it"),
    ],
    ids=["datetime", "recursive"],
)
def test_define_tool_refuses_datetime_and_recursive_models_saying_what_to_use(
    model: type[BaseModel], message: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        define_tool(description="d", args=model, execute=_echo, name="t")
