"""OpenAI's strict mode: the schema OpenAI's own SDK would send for a tool, and the null it then
sends for an argument the caller left out.

Strict mode wants every property required and every object closed. As OpenAI's SDK does
(``openai.pydantic_function_tool``), an optional property becomes a required one that also
accepts ``null``, and ``default`` goes; a model that omits the argument sends ``null``, which
:func:`drop_absent_nulls` turns back into "absent" (so the tool sees its default) before the
arguments are validated. A schema strict mode cannot express (an open record, ``oneOf``) keeps
its exact form and is exported with ``strict: false``.
"""

from __future__ import annotations

import copy
from typing import Any

from ._schema import JsonSchema, strict_compatible

__all__ = ["admits_null", "drop_absent_nulls", "strict_schema"]

_NULL: dict[str, Any] = {"type": "null"}


def strict_schema(schema: JsonSchema) -> JsonSchema | None:
    """The strict-mode form of a canonical input schema, or ``None`` when strict mode cannot
    express it.

    Args:
        schema: A tool's canonical input schema (``$ref`` inlined, objects closed).
    """
    strict = _strict(copy.deepcopy(schema))
    return strict if isinstance(strict, dict) and strict_compatible(strict) else None


def _strict(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    node.pop("default", None)
    props = node.get("properties")
    if isinstance(props, dict):
        required = set(node.get("required", []))
        for name, sub in list(props.items()):
            sub = _strict(sub)
            if name not in required and isinstance(sub, dict) and not admits_null(sub):
                sub = _nullable(sub)
            props[name] = sub
        if props or "required" in node:
            node["required"] = list(props)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = _strict(node[key])
    for key in ("anyOf", "allOf", "prefixItems"):
        if isinstance(node.get(key), list):
            node[key] = [_strict(sub) for sub in node[key]]
    return node


def _nullable(schema: JsonSchema) -> JsonSchema:
    """``schema`` that also accepts ``null`` (its description kept on the outside)."""
    if isinstance(schema.get("anyOf"), list):
        return {**schema, "anyOf": [*schema["anyOf"], dict(_NULL)]}
    outer = {k: schema[k] for k in ("description",) if k in schema}
    inner = {k: v for k, v in schema.items() if k not in outer}
    return {"anyOf": [inner, dict(_NULL)], **outer}


def admits_null(schema: Any) -> bool:
    """Whether ``null`` can be valid under ``schema`` (by its type, enum, const or a branch)."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    branches = schema.get("anyOf", schema.get("oneOf"))
    return isinstance(branches, list) and any(admits_null(b) for b in branches)


def drop_absent_nulls(data: Any, schema: Any) -> Any:
    """``data`` without the ``null`` of each optional property whose schema refuses ``null``
    (what a strict-mode model sends for an argument it leaves out), at every depth."""
    if not isinstance(schema, dict):
        return data
    if isinstance(data, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            required = set(schema.get("required", []))
            return {
                key: drop_absent_nulls(value, props.get(key))
                for key, value in data.items()
                if not (
                    value is None
                    and key not in required
                    and key in props
                    and not admits_null(props[key])
                )
            }
        branches = [b for b in schema.get("anyOf", []) if isinstance(b, dict) and "properties" in b]
        if len(branches) == 1:
            return drop_absent_nulls(data, branches[0])
        return data
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        return [drop_absent_nulls(item, schema["items"]) for item in data]
    return data
