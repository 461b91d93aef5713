"""Argument types, JSON Schema, provider formats and TypeScript declarations for tools.

One canonical JSON Schema is built per tool from its pydantic model (``$ref`` inlined, pydantic's
``title`` noise removed, ``additionalProperties: false`` on model objects); every provider format
is derived from it, so all providers see the same contract.
"""

from __future__ import annotations

import enum
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, get_args, get_origin

from pydantic import BaseModel

from .errors import ProviderFormatError, ToolDefinitionError

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = [
    "EXPORT_FORMATS",
    "ExportFormat",
    "build_schema",
    "check_model",
    "export_tools",
    "is_export_name",
    "to_gemini",
    "ts_declaration",
    "ts_module_declaration",
    "ts_type",
]

JsonSchema = dict[str, Any]
ExportFormat = Literal["openai-responses", "openai-chat", "anthropic", "gemini", "mcp", "standard"]
EXPORT_FORMATS: Final[tuple[str, ...]] = typing.get_args(ExportFormat)

_PROVIDER_NAME_RE: Final = re.compile(r"^[a-zA-Z0-9_]{1,64}$")
_MAX_DESCRIPTION: Final = 4096
_SCALARS: Final = (str, int, float, bool, type(None))
_ALLOWED: Final = (
    "str, int, float, bool, None, Literal, Enum, Optional, list[T], dict[str, T], "
    "unions and nested pydantic models"
)

# --------------------------------------------------------------------------- argument types


def check_model(model: type[BaseModel], what: str) -> None:
    """Refuse a model using an argument type outside the supported set.

    Args:
        model: The pydantic model of a tool's arguments or return value.
        what: ``"args"`` or ``"returns"``, for the message.

    Raises:
        ToolDefinitionError: Naming the offending field and its type.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ToolDefinitionError(f"{what} must be a pydantic BaseModel subclass, got {model!r}")
    _check_fields(model, model.__name__, (model,))


def _check_fields(model: type[BaseModel], path: str, stack: tuple[type[BaseModel], ...]) -> None:
    for name, field in model.model_fields.items():
        _check_type(field.annotation, f"{path}.{name}", stack)


def _check_type(tp: Any, path: str, stack: tuple[type[BaseModel], ...]) -> None:
    origin, args = get_origin(tp), get_args(tp)
    if tp is None or tp in _SCALARS:
        return
    if origin is typing.Annotated:
        _check_type(args[0], path, stack)
    elif origin is Literal:
        bad = [a for a in args if not isinstance(a, (str, int, bool, type(None)))]
        if bad:
            raise ToolDefinitionError(f"field {path}: Literal values must be str/int/bool/None")
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        if not all(isinstance(m.value, (str, int)) for m in tp):
            raise ToolDefinitionError(f"field {path}: Enum {tp.__name__} needs str or int values")
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            _check_type(arg, path, stack)
    elif origin is list:
        _check_type(args[0], f"{path}[]", stack)
    elif origin is dict:
        if args[0] is not str:
            raise ToolDefinitionError(f"field {path}: dict keys must be str, got {args[0]!r}")
        _check_type(args[1], f"{path}{{}}", stack)
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in stack:
            raise ToolDefinitionError(f"field {path}: recursive model {tp.__name__} is not allowed")
        _check_fields(tp, path, (*stack, tp))
    else:
        shown = getattr(tp, "__name__", None) or repr(tp)
        if tp in (list, dict):
            shown += " (give the item type, e.g. list[str])"
        raise ToolDefinitionError(f"field {path}: unsupported type {shown}; allowed: {_ALLOWED}")


# --------------------------------------------------------------------------- canonical schema

_EMPTY_OBJECT: Final[JsonSchema] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}


def build_schema(
    model: type[BaseModel] | None, mode: Literal["validation", "serialization"]
) -> JsonSchema:
    """Return the canonical JSON Schema of a model (or of "no arguments" for ``None``)."""
    if model is None:
        return json.loads(json.dumps(_EMPTY_OBJECT))  # type: ignore[no-any-return]
    raw = model.model_json_schema(mode=mode)
    cleaned: JsonSchema = _clean(raw, raw.get("$defs", {}))
    return cleaned


def _clean(node: Any, defs: Mapping[str, Any]) -> Any:
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = _clean(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        siblings = _clean({k: v for k, v in node.items() if k != "$ref"}, defs)
        return {**target, **siblings}
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        inner = _clean(node["allOf"][0], defs)
        return {**inner, **_clean({k: v for k, v in node.items() if k != "allOf"}, defs)}
    out: JsonSchema = {}
    for key, value in node.items():
        if key in ("title", "$defs", "discriminator"):
            continue
        if key == "properties":
            out[key] = {name: _clean(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = _clean(value, defs)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [_clean(sub, defs) for sub in value]
        else:
            out[key] = value
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def strict_compatible(schema: JsonSchema) -> bool:
    """Whether OpenAI's strict mode accepts the schema (all required, closed, no defaults)."""
    if "default" in schema or "oneOf" in schema:
        return False
    if schema.get("type") == "object" or "properties" in schema:
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required", [])) != set(props):
            return False
        if not all(strict_compatible(sub) for sub in props.values()):
            return False
    for key in ("anyOf", "allOf", "prefixItems"):
        if not all(strict_compatible(sub) for sub in schema.get(key, [])):
            return False
    items = schema.get("items")
    return not (isinstance(items, dict) and not strict_compatible(items))


# --------------------------------------------------------------------------- Gemini (OpenAPI 3.0)

_GEMINI_TYPES: Final = {
    "string": "STRING",
    "integer": "INTEGER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
    "null": "NULL",
}
_GEMINI_FORMATS: Final = {
    "STRING": {"date-time", "enum"},
    "INTEGER": {"int32", "int64"},
    "NUMBER": {"float", "double"},
}
_GEMINI_COPY: Final = (
    "description",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
)


def to_gemini(schema: JsonSchema) -> JsonSchema:
    """Convert a canonical schema to Gemini's OpenAPI 3.0 subset.

    No ``$ref``/``additionalProperties``/``const``/``title``; a union with ``null`` becomes
    ``nullable: true``; non-string enums are described in words (Gemini enums are strings).
    """
    variants = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(schema.get("type"), list):
        variants = [{"type": t} for t in schema["type"]]
    if variants is not None:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf", "type")}
        non_null = [v for v in variants if v.get("type") != "null"]
        nullable = len(non_null) < len(variants)
        if len(non_null) == 1:
            out = to_gemini({**non_null[0], **rest})
        else:
            out = {k: v for k, v in to_gemini(rest).items() if k in ("description", "default")}
            out["anyOf"] = [to_gemini(v) for v in non_null]
        if nullable:
            out["nullable"] = True
        return out
    out = {}
    kind = _GEMINI_TYPES.get(schema.get("type", ""))
    if kind is None and "properties" in schema:
        kind = "OBJECT"
    if kind is not None:
        out["type"] = kind
    for key in _GEMINI_COPY:
        if schema.get(key) is not None:
            out[key] = schema[key]
    fmt = schema.get("format")
    if fmt is not None and kind is not None and fmt in _GEMINI_FORMATS.get(kind, set()):
        out["format"] = fmt
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if values is not None:
        if all(isinstance(v, str) for v in values):
            out["enum"] = list(values)
        else:
            allowed = ", ".join(json.dumps(v) for v in values)
            text = out.get("description")
            out["description"] = f"{text} (one of: {allowed})" if text else f"One of: {allowed}"
    if "properties" in schema:
        out["properties"] = {k: to_gemini(v) for k, v in schema["properties"].items()}
        if schema.get("required"):
            out["required"] = list(schema["required"])
        if len(schema["properties"]) > 1:
            out["propertyOrdering"] = list(schema["properties"])
    if isinstance(schema.get("items"), dict):
        out["items"] = to_gemini(schema["items"])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and "properties" not in schema:
        value = _GEMINI_TYPES.get(extra.get("type", ""), "any").lower()
        note = f"An object mapping string keys to {value} values."
        text = out.get("description")
        out["description"] = f"{text} ({note})" if text else note
    return out


# --------------------------------------------------------------------------- TypeScript

_IDENT_RE: Final = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_RESERVED: Final = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends "
    "false finally for function if import in instanceof new null return super switch this throw "
    "true try typeof var void while with yield let static implements interface package private "
    "protected public await".split()
)


def is_export_name(name: str) -> bool:
    """Whether a tool can also be a named export of the ``tools`` module (an identifier)."""
    return bool(_IDENT_RE.match(name)) and name not in _RESERVED


def _ts_key(name: str) -> str:
    return name if _IDENT_RE.match(name) else json.dumps(name)


def _ts_doc(text: str | None, indent: str) -> str:
    if not text:
        return ""
    lines = text.replace("*/", "*\\/").splitlines() or [""]
    if len(lines) == 1:
        return f"{indent}/** {lines[0]} */\n"
    body = "".join(f"{indent} * {line}".rstrip() + "\n" for line in lines)
    return f"{indent}/**\n{body}{indent} */\n"


def ts_type(schema: JsonSchema, indent: str = "") -> str:
    """Render a canonical JSON Schema as a TypeScript type expression."""
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants:
        return " | ".join(_ts_paren(ts_type(v, indent)) for v in variants)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(ts_type({**schema, "type": k}, indent) for k in kind)
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        items = schema.get("items")
        return f"Array<{ts_type(items, indent) if isinstance(items, dict) else 'unknown'}>"
    if "properties" in schema:
        props: Mapping[str, JsonSchema] = schema["properties"]
        if not props:
            return "{}"
        required = set(schema.get("required", []))
        inner = indent + "  "
        lines = ["{"]
        for name, sub in props.items():
            text = sub.get("description") or ""
            if "default" in sub:
                text = f"{text}\n@default {json.dumps(sub['default'])}".strip()
            doc = _ts_doc(text, inner).rstrip("\n")
            if doc:
                lines.append(doc)
            optional = "" if name in required else "?"
            lines.append(f"{inner}{_ts_key(name)}{optional}: {ts_type(sub, inner)};")
        lines.append(f"{indent}}}")
        return "\n".join(lines)
    extra = schema.get("additionalProperties")
    if kind == "object":
        value = ts_type(extra, indent) if isinstance(extra, dict) else "unknown"
        return f"Record<string, {value}>"
    return "unknown"


def _ts_paren(text: str) -> str:
    return f"({text})" if " | " in text else text


def ts_declaration(tool: Tool, indent: str = "", *, in_module: bool = False) -> str:
    """Declare one tool as an async TypeScript function returning a ``ToolResult``.

    ``in_module`` gives the ``export function`` form used inside ``declare module``.
    """
    params = tool.input_schema
    result = ts_type(tool.output_schema, indent) if tool.output_schema is not None else "unknown"
    optional = "?" if not params.get("required") else ""
    args = ts_type(params, indent)
    doc = _ts_doc(tool.description, indent)
    signature = f"args{optional}: {args}): Promise<ToolResult<{result}>>;"
    keyword = "export function" if in_module else "declare function"
    return f"{doc}{indent}{keyword} {tool.name}({signature}"


def ts_module_declaration(tools: Sequence[Tool], module: str = "tools") -> str:
    """Declare the ``tools`` module of code mode: one function per tool plus a ``tools`` object.

    Tools whose names are not JavaScript identifiers are reachable only through ``tools[...]``.
    """
    indent = "  "
    lines = [
        f"declare module {json.dumps(module)} {{",
        f"{indent}export type ToolResult<T = unknown> =",
        f'{indent}  | {{ status: "success"; result: T; error: null; attachments?: unknown[] }}',
        f'{indent}  | {{ status: "error"; result: unknown; error: string }};',
    ]
    members = []
    for tool in tools:
        if is_export_name(tool.name) and tool.name != "tools":
            lines.append(ts_declaration(tool, indent, in_module=True))
            members.append(f"{tool.name}: typeof {tool.name}")
        else:
            params = ts_type(tool.input_schema, indent + "  ")
            result = "unknown"
            if tool.output_schema is not None:
                result = ts_type(tool.output_schema, indent + "  ")
            members.append(
                f"{json.dumps(tool.name)}: (args: {params}) => Promise<ToolResult<{result}>>"
            )
    lines.append(f"{indent}export const tools: {{")
    lines.extend(f"{indent}  {member};" for member in members)
    lines.append(f"{indent}}};")
    lines.append("}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- export


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
        descriptor: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": params,
        }
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
