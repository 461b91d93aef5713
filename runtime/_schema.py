"""The canonical JSON Schema of a tool, built once from its pydantic model.

``$ref`` is inlined, pydantic's ``title`` noise removed and ``additionalProperties: false`` set on
model objects; every provider format (:mod:`._export`, :mod:`._gemini`) and the TypeScript
declarations (:mod:`._typescript_decl`) are derived from it, so all see the same contract.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import BaseModel

__all__ = ["JsonSchema", "build_schema", "strict_compatible"]

JsonSchema = dict[str, Any]

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
