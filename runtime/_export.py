"""Tool descriptions in each provider's format (:func:`export_tools`)."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Literal

from ._gemini import to_gemini
from ._schema import strict_compatible
from ._strict import strict_schema
from .errors import ProviderFormatError

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = ["APPROVAL_META", "EXPORT_FORMATS", "ExportFormat", "approval_meta", "export_tools"]

#: The MCP ``_meta`` key of a tool whose calls wait for approval.
APPROVAL_META: Final = "quickjail/requiresApproval"


def approval_meta(tool: Tool) -> bool | str:
    """``requires_approval`` as exported: ``True``, ``False`` or ``"per-call"`` (a rule)."""
    rule = _rule(tool)
    return rule if isinstance(rule, bool) else "per-call"


def _rule(tool: Tool) -> Any:
    """``requires_approval`` of a tool (``False`` for another library's tool object)."""
    return getattr(tool, "requires_approval", False)


ExportFormat = Literal["openai-responses", "openai-chat", "anthropic", "gemini", "mcp", "standard"]
EXPORT_FORMATS: Final[tuple[str, ...]] = typing.get_args(ExportFormat)

# each format's own rule for a tool name (the pattern as its documentation writes it)
_NAME_RULES: Final[dict[str, str]] = {
    "openai-responses": r"^[a-zA-Z0-9_-]{1,64}$",
    "openai-chat": r"^[a-zA-Z0-9_-]{1,64}$",
    "anthropic": r"^[a-zA-Z0-9_-]{1,64}$",
    "gemini": r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$",
    "mcp": r"^[a-zA-Z0-9_.-]{1,128}$",
    "standard": r"^[a-zA-Z0-9_]{1,64}$",
}
_NAME_RES: Final = {fmt: re.compile(rule) for fmt, rule in _NAME_RULES.items()}
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
        ProviderFormatError: Unknown format, a name outside the format's own rule (OpenAI
            and Anthropic ``^[a-zA-Z0-9_-]{1,64}$``, Gemini ``^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$``,
            MCP ``^[a-zA-Z0-9_.-]{1,128}$``, standard ``^[a-zA-Z0-9_]{1,64}$``), a
            description (the tool's or a parameter's) over 4096 characters, or a duplicate
            name; the message names the tool (and the parameter).

    The OpenAI formats send the schema OpenAI's SDK would (``strict: true``) wherever strict
    mode can express it: an optional argument becomes required and nullable, defaults go, and
    the ``null`` a model then sends for it counts as leaving it out. A schema strict mode
    cannot express (an open record such as ``dict[str, T]``, ``oneOf``) is sent as it is
    with ``strict: false``.

    The ``"standard"`` format writes ``integer`` as ``number`` with ``multipleOf: 1``: the
    schema document's list of parameter types has no ``integer``, and ``multipleOf: 1``
    keeps exactly the same values allowed.
    """
    if format not in EXPORT_FORMATS:
        raise ProviderFormatError(f"unknown format {format!r}; expected one of {EXPORT_FORMATS}")
    tools = list(tools)
    seen: set[str] = set()
    for tool in tools:
        if not _NAME_RES[format].fullmatch(tool.name):
            raise ProviderFormatError(
                f"tool {tool.name!r}: name must match {_NAME_RULES[format]} for {format}"
            )
        if len(tool.description) > _MAX_DESCRIPTION:
            raise ProviderFormatError(
                f"tool {tool.name!r}: description is {len(tool.description)} characters; "
                f"{format} accepts at most {_MAX_DESCRIPTION}"
            )
        if tool.name in seen:
            raise ProviderFormatError(f"tool {tool.name!r}: duplicate name")
        seen.add(tool.name)
        long = _long_description(tool.input_schema, ())
        if long is not None:
            where, size = long
            raise ProviderFormatError(
                f"tool {tool.name!r}: the description of parameter {where} is {size} "
                f"characters; {format} accepts at most {_MAX_DESCRIPTION}"
            )
    return [_export_one(tool, format) for tool in tools]


def _long_description(schema: Any, path: tuple[str, ...]) -> tuple[str, int] | None:
    """The first parameter (dotted path) whose description is over the limit, and its size."""
    if not isinstance(schema, dict):
        return None
    text = schema.get("description")
    if path and isinstance(text, str) and len(text) > _MAX_DESCRIPTION:
        return ".".join(path), len(text)
    props = schema.get("properties")
    children: list[tuple[Any, tuple[str, ...]]] = []
    if isinstance(props, dict):
        children += [(sub, (*path, str(name))) for name, sub in props.items()]
    for key in ("items", "additionalProperties"):
        children.append((schema.get(key), (*path, "[]" if key == "items" else "{}")))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        branches = schema.get(key)
        if isinstance(branches, list):
            children += [(sub, path) for sub in branches]
    for sub, where in children:
        found = _long_description(sub, where)
        if found is not None:
            return found
    return None


def _standard_parameters(schema: Any) -> Any:
    """The parameters in the schema document's types: ``integer`` becomes ``number`` with
    ``multipleOf: 1`` (the same set of values), the rest is unchanged."""
    if isinstance(schema, list):
        return [_standard_parameters(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _standard_parameters(sub) for name, sub in value.items()}
        elif key in ("const", "enum", "default", "examples", "required"):
            out[key] = value
        else:
            out[key] = _standard_parameters(value)
    kind = out.get("type")
    if kind == "integer":
        out["type"] = "number"
        out.setdefault("multipleOf", 1)
    elif isinstance(kind, list) and "integer" in kind:
        kinds = [k for k in kind if k != "integer"]
        if "number" not in kinds:
            kinds.append("number")
            out.setdefault("multipleOf", 1)
        out["type"] = kinds
    return out


def _export_one(tool: Tool, format: str) -> dict[str, Any]:
    params = json.loads(json.dumps(tool.input_schema))
    strict = strict_compatible(params)
    if format.startswith("openai-"):
        # as OpenAI's SDK: optional → required and nullable, where strict mode can say it all
        strict_params = strict_schema(params)
        if strict_params is not None:
            params, strict = strict_params, True
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
        if _rule(tool) is not False:
            # MCP has no annotation for it: the tool's _meta, under our own prefix
            descriptor["_meta"] = {APPROVAL_META: approval_meta(tool)}
        return descriptor
    schema = {
        "name": tool.name,
        "description": tool.description,
        "parameters": _standard_parameters(params),
        "strict": strict,
    }
    exported: dict[str, Any] = {"type": "function", "definition": {"schema": schema}}
    if _rule(tool) is not False:
        exported["requires_approval"] = approval_meta(tool)
    return exported
