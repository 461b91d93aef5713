"""Tool descriptions in each provider's format (:func:`export_tools`)."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Literal

from ._gemini import to_gemini
from ._schema import strict_compatible
from .errors import ProviderFormatError

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = ["EXPORT_FORMATS", "ExportFormat", "export_tools"]

ExportFormat = Literal["openai-responses", "openai-chat", "anthropic", "gemini", "mcp", "standard"]
EXPORT_FORMATS: Final[tuple[str, ...]] = typing.get_args(ExportFormat)

_PROVIDER_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_]{1,64}$")
_MAX_DESCRIPTION: Final = 4096


def export_tools(tools: Iterable[Tool], format: ExportFormat) -> list[dict[str, Any]]:
    """Describe tools in one provider's format.

    Args:
        tools: The tools to describe (names must be unique).
        format: ``"openai-responses"``, ``"openai-chat"``, ``"anthropic"``, ``"gemini"``
            (a list of ``FunctionDeclaration`` s), ``"mcp"`` or ``"standard"``.

    Returns:
        One JSON-compatible dict per tool, in the order given.

    Raises:
        ProviderFormatError: Unknown format, a name outside ``^[a-zA-Z0-9_]{1,64}$``, a
            description over 4096 characters, or a duplicate name; the message names the tool.
    """
    if format not in EXPORT_FORMATS:
        raise ProviderFormatError(f"unknown format {format!r}; expected one of {EXPORT_FORMATS}")
    tools = list(tools)
    seen: set[str] = set()
    for tool in tools:
        if not _PROVIDER_NAME_RE.match(tool.name):
            raise ProviderFormatError(
                f"tool {tool.name!r}: name must match ^[a-zA-Z0-9_]{{1,64}}$ for {format}"
            )
        if len(tool.description) > _MAX_DESCRIPTION:
            raise ProviderFormatError(
                f"tool {tool.name!r}: description is {len(tool.description)} characters; "
                f"{format} accepts at most {_MAX_DESCRIPTION}"
            )
        if tool.name in seen:
            raise ProviderFormatError(f"tool {tool.name!r}: duplicate name")
        seen.add(tool.name)
    return [_export_one(tool, format) for tool in tools]


def _export_one(tool: Tool, format: str) -> dict[str, Any]:
    params = json.loads(json.dumps(tool.input_schema))
    strict = strict_compatible(params)
    if format == "openai-responses":
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
            "strict": strict,
        }
    if format == "openai-chat":
        function = {
            "name": tool.name,
            "description": tool.description,
            "parameters": params,
            "strict": strict,
        }
        return {"type": "function", "function": function}
    if format == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": params}
    if format == "gemini":
        declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if params.get("properties"):
            declaration["parameters"] = to_gemini(params)
        return declaration
    if format == "mcp":
        descriptor: dict[str, Any] = {"name": tool.name}
        if tool.title is not None:
            descriptor["title"] = tool.title
        descriptor["description"] = tool.description
        descriptor["inputSchema"] = params
        if tool.output_schema is not None and tool.output_schema.get("type") == "object":
            descriptor["outputSchema"] = json.loads(json.dumps(tool.output_schema))
        return descriptor
    schema = {
        "name": tool.name,
        "description": tool.description,
        "parameters": params,
        "strict": strict,
    }
    return {"type": "function", "definition": {"schema": schema}}
