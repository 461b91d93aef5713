"""Schema export: inline snapshots of every format, and validation against the official SDKs."""

from __future__ import annotations

import enum
import typing
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, TypeAdapter

from quickjail.runtime import ToolResult, define_tool, export_tools
from quickjail.runtime.errors import ProviderFormatError


class Unit(enum.Enum):
    C = "c"
    F = "f"


class Place(BaseModel):
    city: str = Field(description="City name")
    country: str | None = Field(None, description="ISO country code")


class WeatherArgs(BaseModel):
    place: Place
    unit: Unit = Unit.C
    days: int = Field(1, ge=1, le=7)
    mode: Literal["brief", "full"]
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, float] = Field(default_factory=dict)
    level: Literal[1, 2]


class Forecast(BaseModel):
    summary: str
    temps: list[float]


class SearchArgs(BaseModel):
    query: str
    limit: int | None


async def _run(state: Any, args: Any) -> ToolResult:
    return ToolResult.success()


async def _run0(state: Any) -> ToolResult:
    return ToolResult.success()


WEATHER = define_tool(
    description="Get the weather forecast.",
    args=WeatherArgs,
    returns=Forecast,
    execute=_run,
    name="get_weather",
)
SEARCH = define_tool(description="Search.", args=SearchArgs, execute=_run, name="search")
PING = define_tool(description="Ping.", execute=_run0, name="ping")
TOOLS = [WEATHER, SEARCH, PING]

# ----------------------------------------------------------------------------- snapshots

WEATHER_PARAMS = {
    "properties": {
        "place": {
            "properties": {
                "city": {"description": "City name", "type": "string"},
                "country": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "ISO country code",
                },
            },
            "required": ["city"],
            "type": "object",
            "additionalProperties": False,
        },
        "unit": {"enum": ["c", "f"], "type": "string", "default": "c"},
        "days": {"default": 1, "maximum": 7, "minimum": 1, "type": "integer"},
        "mode": {"enum": ["brief", "full"], "type": "string"},
        "tags": {"items": {"type": "string"}, "type": "array"},
        "extra": {"additionalProperties": {"type": "number"}, "type": "object"},
        "level": {"enum": [1, 2], "type": "integer"},
    },
    "required": ["place", "mode", "level"],
    "type": "object",
    "additionalProperties": False,
}
SEARCH_PARAMS = {
    "properties": {
        "query": {"type": "string"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
    "required": ["query", "limit"],
    "type": "object",
    "additionalProperties": False,
}
PING_PARAMS = {"type": "object", "properties": {}, "additionalProperties": False}
FORECAST_SCHEMA = {
    "properties": {
        "summary": {"type": "string"},
        "temps": {"items": {"type": "number"}, "type": "array"},
    },
    "required": ["summary", "temps"],
    "type": "object",
    "additionalProperties": False,
}
GEMINI = [
    {
        "name": "get_weather",
        "description": "Get the weather forecast.",
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "place": {
                    "type": "OBJECT",
                    "properties": {
                        "city": {"type": "STRING", "description": "City name"},
                        "country": {
                            "type": "STRING",
                            "description": "ISO country code",
                            "nullable": True,
                        },
                    },
                    "required": ["city"],
                    "propertyOrdering": ["city", "country"],
                },
                "unit": {"type": "STRING", "default": "c", "enum": ["c", "f"]},
                "days": {"type": "INTEGER", "default": 1, "minimum": 1, "maximum": 7},
                "mode": {"type": "STRING", "enum": ["brief", "full"]},
                "tags": {"type": "ARRAY", "items": {"type": "STRING"}},
                "extra": {
                    "type": "OBJECT",
                    "description": "An object mapping string keys to number values.",
                },
                "level": {"type": "INTEGER", "description": "One of: 1, 2"},
            },
            "required": ["place", "mode", "level"],
            "propertyOrdering": ["place", "unit", "days", "mode", "tags", "extra", "level"],
        },
    },
    {
        "name": "search",
        "description": "Search.",
        "parameters": {
            "type": "OBJECT",
            "properties": {
                "query": {"type": "STRING"},
                "limit": {"type": "INTEGER", "nullable": True},
            },
            "required": ["query", "limit"],
            "propertyOrdering": ["query", "limit"],
        },
    },
    {"name": "ping", "description": "Ping."},
]

_ROWS = [
    ("get_weather", "Get the weather forecast.", WEATHER_PARAMS, False),
    ("search", "Search.", SEARCH_PARAMS, True),
    ("ping", "Ping.", PING_PARAMS, True),
]


def test_canonical_schemas_snapshot() -> None:
    assert WEATHER.input_schema == WEATHER_PARAMS
    assert WEATHER.output_schema == FORECAST_SCHEMA
    assert SEARCH.input_schema == SEARCH_PARAMS
    assert PING.input_schema == PING_PARAMS


def test_openai_responses_snapshot() -> None:
    assert export_tools(TOOLS, "openai-responses") == [
        {"type": "function", "name": n, "description": d, "parameters": p, "strict": s}
        for n, d, p, s in _ROWS
    ]


def test_openai_chat_snapshot() -> None:
    assert export_tools(TOOLS, "openai-chat") == [
        {
            "type": "function",
            "function": {"name": n, "description": d, "parameters": p, "strict": s},
        }
        for n, d, p, s in _ROWS
    ]


def test_anthropic_snapshot() -> None:
    assert export_tools(TOOLS, "anthropic") == [
        {"name": n, "description": d, "input_schema": p} for n, d, p, _ in _ROWS
    ]


def test_gemini_snapshot() -> None:
    assert export_tools(TOOLS, "gemini") == GEMINI


def test_mcp_snapshot() -> None:
    assert export_tools(TOOLS, "mcp") == [
        {
            "name": "get_weather",
            "description": "Get the weather forecast.",
            "inputSchema": WEATHER_PARAMS,
            "outputSchema": FORECAST_SCHEMA,
        },
        {"name": "search", "description": "Search.", "inputSchema": SEARCH_PARAMS},
        {"name": "ping", "description": "Ping.", "inputSchema": PING_PARAMS},
    ]


# the schema document's parameter types have no "integer": the standard format writes it as
# a number that is a multiple of 1 (the same values); every other node is the canonical one
STANDARD_WEATHER_PARAMS = {
    **WEATHER_PARAMS,
    "properties": {
        **WEATHER_PARAMS["properties"],
        "days": {"default": 1, "maximum": 7, "minimum": 1, "type": "number", "multipleOf": 1},
        "level": {"enum": [1, 2], "type": "number", "multipleOf": 1},
    },
}
STANDARD_SEARCH_PARAMS = {
    **SEARCH_PARAMS,
    "properties": {
        **SEARCH_PARAMS["properties"],
        "limit": {"anyOf": [{"type": "number", "multipleOf": 1}, {"type": "null"}]},
    },
}
_STANDARD_ROWS = [
    ("get_weather", "Get the weather forecast.", STANDARD_WEATHER_PARAMS, False),
    ("search", "Search.", STANDARD_SEARCH_PARAMS, True),
    ("ping", "Ping.", PING_PARAMS, True),
]


def test_standard_snapshot() -> None:
    assert export_tools(TOOLS, "standard") == [
        {
            "type": "function",
            "definition": {"schema": {"name": n, "description": d, "parameters": p, "strict": s}},
        }
        for n, d, p, s in _STANDARD_ROWS
    ]


def test_the_standard_export_uses_only_the_schema_documents_parameter_types() -> None:
    allowed = {"string", "number", "boolean", "array", "object", "null"}

    def types(node: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            kind = node.get("type")
            found |= set(kind) if isinstance(kind, list) else {kind} if kind else set()
            for key, value in node.items():
                if key not in ("enum", "const", "default", "required"):
                    found |= types(value)
        elif isinstance(node, list):
            for value in node:
                found |= types(value)
        return found

    class Mixed(BaseModel):
        n: int
        ns: list[int | None]
        table: dict[str, int]

    mixed = define_tool(description="Mixed.", args=Mixed, execute=_run, name="mixed")
    for tool in [*TOOLS, mixed]:
        (exported,) = export_tools([tool], "standard")
        assert types(exported["definition"]["schema"]["parameters"]) <= allowed
    # the tool itself still validates (and publishes) integers as integers
    assert mixed.input_schema["properties"]["n"] == {"type": "integer"}


@pytest.mark.parametrize(
    "format", ["openai-responses", "openai-chat", "anthropic", "gemini", "mcp", "standard"]
)
def test_a_parameter_description_over_4096_characters_is_refused_on_export(format: str) -> None:
    class Inner(BaseModel):
        note: str = Field(description="x" * 4097)

    class Outer(BaseModel):
        rows: list[Inner] = Field(description="y" * 4096)

    tool = define_tool(description="Rows.", args=Outer, execute=_run, name="rows")
    with pytest.raises(ProviderFormatError, match=r"parameter rows\.\[\]\.note is 4097 characters"):
        export_tools([tool], format)  # type: ignore[arg-type]

    class Fine(BaseModel):
        rows: list[str] = Field(description="y" * 4096)

    fine = define_tool(description="Rows.", args=Fine, execute=_run, name="fine")
    assert export_tools([fine], format)  # type: ignore[arg-type]


def test_typescript_declaration_snapshot() -> None:
    assert SEARCH.typescript_declaration == (
        "/** Search. */\n"
        "declare function search(args: {\n"
        "  query: string;\n"
        "  limit: number | null;\n"
        "}): Promise<unknown>;"
    )
    assert PING.typescript_declaration == (
        "/** Ping. */\ndeclare function ping(args?: {}): Promise<unknown>;"
    )


# ----------------------------------------------------------------------------- official SDKs


def _assert_typed_dict_keys(value: Any, typed_dict: Any, where: str = "") -> None:
    """TypedDict validation ignores unknown keys; refuse them here, recursively."""
    hints = typing.get_type_hints(typed_dict)
    assert isinstance(value, dict)
    unknown = set(value) - set(hints)
    assert not unknown, f"{where or typed_dict.__name__}: keys {unknown} not in the SDK type"
    for key, hint in hints.items():
        while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        if key in value and typing.is_typeddict(hint):
            _assert_typed_dict_keys(value[key], hint, f"{where}.{key}")


def test_openai_chat_export_validates_against_the_sdk_type() -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam

    adapter = TypeAdapter(ChatCompletionFunctionToolParam)
    for exported in export_tools(TOOLS, "openai-chat"):
        assert adapter.validate_python(exported) == exported
        _assert_typed_dict_keys(exported, ChatCompletionFunctionToolParam)


def test_openai_responses_export_validates_against_the_sdk_type() -> None:
    from openai.types.responses import FunctionToolParam

    adapter = TypeAdapter(FunctionToolParam)
    for exported in export_tools(TOOLS, "openai-responses"):
        assert adapter.validate_python(exported) == exported
        _assert_typed_dict_keys(exported, FunctionToolParam)


def test_anthropic_export_validates_against_the_sdk_type() -> None:
    from anthropic.types import ToolParam

    adapter = TypeAdapter(ToolParam)
    for exported in export_tools(TOOLS, "anthropic"):
        assert adapter.validate_python(exported) == exported
        _assert_typed_dict_keys(exported, ToolParam)


def _walk_keys(node: Any) -> set[str]:
    keys: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            keys.add(key)
            keys |= _walk_keys(value)
    elif isinstance(node, list):
        for item in node:
            keys |= _walk_keys(item)
    return keys


def test_gemini_export_validates_against_the_sdk_and_uses_only_the_openapi_subset() -> None:
    from google.genai import types

    for exported in export_tools(TOOLS, "gemini"):
        declaration = types.FunctionDeclaration.model_validate(exported)
        assert declaration.name == exported["name"]
        assert declaration.model_dump(mode="json", by_alias=True, exclude_none=True) == exported
        forbidden = {"$ref", "$defs", "additionalProperties", "anyOf", "const", "title"}
        assert not (_walk_keys(exported) & forbidden)


def test_mcp_export_validates_against_the_sdk_type() -> None:
    import mcp.types

    for exported in export_tools(TOOLS, "mcp"):
        tool = mcp.types.Tool.model_validate(exported)
        assert tool.name == exported["name"]
        assert tool.input_schema == exported["inputSchema"]


def test_strict_flag_is_only_set_when_openai_strict_mode_accepts_the_schema() -> None:
    from quickjail.runtime._schema import strict_compatible

    assert not strict_compatible(WEATHER_PARAMS)  # defaults and an open record
    assert strict_compatible(SEARCH_PARAMS)


# ----------------------------------------------------------------------------- gemini details


class Choice(BaseModel):
    value: int | str | None


def test_gemini_keeps_multi_type_unions_as_any_of_with_nullable() -> None:
    tool = define_tool(description="choice", args=Choice, execute=_run, name="choice")
    (exported,) = export_tools([tool], "gemini")
    assert exported["parameters"]["properties"]["value"] == {
        "anyOf": [{"type": "INTEGER"}, {"type": "STRING"}],
        "nullable": True,
    }
    from google.genai import types

    types.FunctionDeclaration.model_validate(exported)


# ----------------------------------------------------------------------------- refusals


def test_description_over_4096_characters_is_an_error_naming_the_tool() -> None:
    long = define_tool(description="x" * 4097, execute=_run0, name="long_one")
    with pytest.raises(ProviderFormatError, match=r"'long_one'.*4097"):
        export_tools([long], "anthropic")
    export_tools([define_tool(description="x" * 4096, execute=_run0, name="ok")], "anthropic")


def test_duplicate_names_and_unknown_formats_are_refused() -> None:
    with pytest.raises(ProviderFormatError, match="duplicate"):
        export_tools([PING, PING], "mcp")
    with pytest.raises(ProviderFormatError, match="unknown format"):
        export_tools([PING], "cohere")  # type: ignore[arg-type]


def test_provider_executed_tools_are_described_like_any_other() -> None:
    web = define_tool(
        description="Search the web.",
        args=SearchArgs,
        name="web_search",
        execution_mode="provider",
        execution_provider="openai",
    )
    (exported,) = export_tools([web], "anthropic")
    assert exported == {
        "name": "web_search",
        "description": "Search the web.",
        "input_schema": SEARCH_PARAMS,
    }
