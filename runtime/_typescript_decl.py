"""TypeScript declarations of tools, for code-mode prompts and the ``tools`` module."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

from ._schema import JsonSchema

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = ["is_export_name", "ts_declaration", "ts_module_declaration", "ts_type"]

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
    lines = text.replace("*/", "*\\/").splitlines()
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
    """Declare one tool as an async TypeScript function resolving to its value (code mode's
    form: a failure rejects).

    ``in_module`` gives the ``export function`` form used inside ``declare module``.
    """
    params = tool.input_schema
    result = ts_type(tool.output_schema, indent) if tool.output_schema is not None else "unknown"
    optional = "?" if not params.get("required") else ""
    args = ts_type(params, indent)
    doc = _ts_doc(tool.description, indent)
    signature = f"args{optional}: {args}): Promise<{result}>;"
    keyword = "export function" if in_module else "declare function"
    return f"{doc}{indent}{keyword} {tool.name}({signature}"


def ts_module_declaration(tools: Sequence[Tool], module: str = "tools") -> str:
    """Declare the ``tools`` module of code mode: one function per tool plus a ``tools`` object.

    Tools whose names are not JavaScript identifiers are reachable only through ``tools[...]``.
    """
    indent = "  "
    lines = [f"declare module {json.dumps(module)} {{"]
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
            members.append(f"{json.dumps(tool.name)}: (args: {params}) => Promise<{result}>")
    lines.append(f"{indent}export const tools: {{")
    lines.extend(f"{indent}  {member};" for member in members)
    lines.append(f"{indent}}};")
    lines.append("}")
    return "\n".join(lines)
