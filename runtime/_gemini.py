"""Gemini's tool-parameter format: the OpenAPI 3.0 subset, derived from the canonical schema."""

from __future__ import annotations

import json
from typing import Final

from ._schema import JsonSchema

__all__ = ["to_gemini"]

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
