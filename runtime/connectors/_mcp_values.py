"""What an MCP tool's answer and listing become on this side: values, tools, bounded text.

The value of a ``tools/call`` result: its ``structuredContent`` when present; else its text
blocks, joined with newlines, parsed as JSON when they are JSON (``NaN``, ``Infinity`` and
numbers past a double's range are not, here), else the text itself; else (only images, audio,
resources) the list of its content blocks as JSON data, each as MCP sends it (``{"type":
"image", "data": <base64>, "mimeType": ...}``); ``None`` for an empty answer. ``isError``
makes it a failure whose message is the text. Images, audio and binary resources are also the
call's attachments (:func:`result_attachments`), so they stay reachable beside a text value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
import pydantic

from quickjail.runtime._result import ToolAttachment, ToolResult
from quickjail.runtime._schema import JsonSchema
from quickjail.runtime._tool import Tool, schema_tool
from quickjail.runtime.errors import ConnectorError, ToolExecutionError

from ._base import identifier_names
from ._schemas import bounded_schema, schema_size

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_LISTING_CHARS",
    "MAX_NAME",
    "MAX_SCHEMA_CHARS",
    "Listed",
    "bound_listed",
    "build_tools",
    "result_attachments",
    "result_value",
]

MAX_DESCRIPTION: Final = 2_000  # characters of a tool's description kept
MAX_NAME: Final = 256  # a tool named longer is left out of the namespace
MAX_SCHEMA_CHARS: Final = 32_000  # a bounded schema larger than this is kept as "any object"
MAX_LISTING_CHARS: Final = 16_000_000  # all the kept schemas and descriptions together
MAX_ERROR: Final = 4_000  # characters of an isError text kept in the message
_JSON_START: Final = frozenset('{["-0123456789tfn')

Caller = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]


def result_value(server: str, tool: str, result: types.CallToolResult, max_chars: int) -> Any:
    """The value of a successful ``tools/call`` result (see the module's rules).

    Raises:
        ToolExecutionError: ``isError`` was set (the message is the tool's text).
        ConnectorError: The value is over ``max_chars`` characters as JSON.
    """
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if result.is_error:
        message = "\n".join(texts).strip() or f"tool {tool!r} of MCP server {server!r} failed"
        if len(message) > MAX_ERROR:
            message = message[:MAX_ERROR] + f"... [{len(message) - MAX_ERROR:,} characters cut]"
        raise ToolExecutionError(ToolResult.failure(message), message)
    value: Any
    if result.structured_content is not None:
        value = result.structured_content
        size = len(json.dumps(value, separators=(",", ":"), default=str))
    elif texts:
        text = "\n".join(texts)
        size = len(text)
        if size > max_chars:
            raise _too_long(server, tool, size, max_chars)
        value = _json_or_text(text)
    elif result.content:
        value = [
            block.model_dump(mode="json", by_alias=True, exclude_none=True)
            for block in result.content
        ]
        size = len(json.dumps(value, separators=(",", ":")))
    else:
        return None
    if size > max_chars:
        raise _too_long(server, tool, size, max_chars)
    return value


def result_attachments(tool: str, result: types.CallToolResult) -> list[ToolAttachment]:
    """The answer's images, audio and binary resources, as the call's attachments.

    So they stay reachable when the value is the text beside them (a thread stores them as
    its files). A block whose MIME type or base64 data does not check out is left out.
    """
    out: list[ToolAttachment] = []
    for i, block in enumerate(result.content):
        mime: str | None = None
        data: str | None = None
        if isinstance(block, types.ImageContent | types.AudioContent):
            mime, data = block.mime_type, block.data
        elif isinstance(block, types.EmbeddedResource) and isinstance(
            block.resource, types.BlobResourceContents
        ):
            mime = block.resource.mime_type or "application/octet-stream"
            data = block.resource.blob
        if mime is None or data is None:
            continue
        subtype = re.sub(r"[^a-z0-9]", "", mime.split("/", 1)[-1].split(";", 1)[0].lower())
        extension = "bin" if subtype in ("", "octetstream") else subtype[:8]
        name = f"{tool[:64]}-{i + 1}.{extension}"
        try:
            out.append(ToolAttachment(name=name, mime_type=mime, data=data))
        except pydantic.ValidationError:
            continue
    return out


def _too_long(server: str, tool: str, size: int, max_chars: int) -> ConnectorError:
    return ConnectorError(
        f"tool {tool!r} of MCP server {server!r} answered {size:,} characters; the connector "
        f"takes at most {max_chars:,} (max_result_chars)"
    )


def _json_or_text(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in _JSON_START:
        return text
    try:
        return json.loads(stripped, parse_constant=_refuse, parse_float=_finite)
    except (ValueError, RecursionError):
        return text


def _refuse(word: str) -> Any:
    raise ValueError(f"{word} is not JSON")


def _finite(digits: str) -> float:
    number = float(digits)
    if not math.isfinite(number):
        raise ValueError(f"{digits} is out of a double's range")
    return number


@dataclass(frozen=True, slots=True)
class Listed:
    """One listed MCP tool, its parts bounded: all the listing keeps of it."""

    name: str
    title: str | None
    text: str
    input_schema: JsonSchema
    output_schema: JsonSchema | None
    notes: tuple[str, ...]

    @property
    def size(self) -> int:
        """Characters kept (schemas as JSON, text), for the listing's budget."""
        out = schema_size(self.output_schema) if self.output_schema is not None else 0
        return schema_size(self.input_schema) + out + len(self.text) + len(self.name)


def bound_listed(listed: types.Tool) -> Listed | None:
    """The bounded parts of one listed tool; ``None`` for a name that is empty or longer
    than :data:`MAX_NAME` characters (the tool is left out).

    Descriptions are cut to :data:`MAX_DESCRIPTION` characters; schemas are
    :func:`bounded_schema` copies, kept only under :data:`MAX_SCHEMA_CHARS` (else "any
    object" for the input, none for the output).
    """
    if not 0 < len(listed.name) <= MAX_NAME:
        return None
    notes: list[str] = []
    input_schema = bounded_schema(listed.input_schema)
    if input_schema.get("type") != "object":
        input_schema = {"type": "object"}
    if schema_size(input_schema) > MAX_SCHEMA_CHARS:
        input_schema = {"type": "object"}
        notes.append("its input schema was too large to keep: any object is sent as given")
    output_schema: JsonSchema | None = None
    if isinstance(listed.output_schema, dict):
        output_schema = bounded_schema(listed.output_schema) or None
        if output_schema is not None and schema_size(output_schema) > MAX_SCHEMA_CHARS:
            output_schema = None
    text = (listed.description or "").strip()
    if len(text) > MAX_DESCRIPTION:
        text = text[:MAX_DESCRIPTION] + f"... [{len(text) - MAX_DESCRIPTION:,} characters cut]"
    return Listed(
        listed.name, _title(listed.title), text, input_schema, output_schema, tuple(notes)
    )


def build_tools(server: str, listed: list[Listed], call: Caller) -> list[Tool]:
    """One :class:`Tool` per listed MCP tool, named by :func:`identifier_names` (the original
    name is then the tool's title and is named in its description)."""
    names = identifier_names(t.name for t in listed)
    return [_tool(server, t, names[t.name], call) for t in listed]


def _tool(server: str, listed: Listed, ident: str, call: Caller) -> Tool:
    original = listed.name
    notes = list(listed.notes)
    if ident != original:
        notes.append(f"MCP tool name: {original!r}")
    description = "\n\n".join(
        p for p in (listed.text or f"Tool {original!r} of MCP server {server!r}.", *notes) if p
    )
    title = original if ident != original else listed.title

    async def execute(state: Any, args: dict[str, Any]) -> ToolResult:
        return await call(original, args)

    return schema_tool(
        name=ident,
        title=title,
        description=description,
        execute=execute,
        schemas=(listed.input_schema, listed.output_schema),
    )


def _title(title: str | None) -> str | None:
    if not isinstance(title, str) or not title.strip():
        return None
    return title.strip()[:MAX_NAME]
