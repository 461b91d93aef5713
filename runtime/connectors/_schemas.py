"""Foreign JSON Schemas (an MCP server's, an OpenAPI document's) made safe to keep and use.

A schema from a source is hostile data: deep, huge, recursive through ``$ref``, or full of
keywords nothing here reads. :func:`bounded_schema` copies what the runtime uses (types,
properties, required, items, enums, consts, unions, descriptions, defaults) into a fresh
tree, resolving ``$ref`` only inside the given document (``#/...``), and stops at fixed
limits: a reference met again on its own path (recursion), a nesting depth, a node count and
a text size. Past a limit the part becomes ``{}`` (any value), so the work is bounded by the
limits, not by the input, and a call's arguments are still checked where the schema is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from quickjail.runtime._schema import JsonSchema

__all__ = ["MAX_DEPTH", "MAX_NODES", "bounded_schema", "resolve_pointer"]

MAX_DEPTH: Final = 16
MAX_NODES: Final = 2_000
MAX_TEXT: Final = 400  # characters of one description or title kept
MAX_ENUM: Final = 200
MAX_REF_HOPS: Final = 32  # a $ref chain longer than this is given up on
_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_SCALARS: Final = (str, int, float, bool, type(None))


def resolve_pointer(root: Any, ref: str) -> Any:
    """The value at a local JSON Pointer (``#/components/schemas/Pet``), or None.

    Only references into ``root`` resolve: another document (``other.json#/x``, a URL) gives
    None, so nothing is ever fetched or read from disk.
    """
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    if ref in ("#", "#/"):
        return root
    if not ref.startswith("#/"):
        return None
    node = root
    for raw in ref[2:].split("/")[: MAX_DEPTH * 2]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


class _Budget:
    __slots__ = ("nodes",)

    def __init__(self) -> None:
        self.nodes = 0


def bounded_schema(schema: Any, root: Any = None) -> JsonSchema:
    """A bounded copy of ``schema`` with local ``$ref``s resolved against ``root``.

    Args:
        schema: The schema as the source gave it (any JSON value).
        root: The document ``#/...`` references resolve in (default: ``schema`` itself).

    Returns:
        A new schema of plain dicts, lists and scalars using only the keywords the runtime
        reads; ``{}`` for what is not a schema, or lies past a limit.
    """
    return _copy(schema, schema if root is None else root, 0, (), _Budget())


def _copy(node: Any, root: Any, depth: int, refs: tuple[str, ...], budget: _Budget) -> JsonSchema:
    budget.nodes += 1
    if not isinstance(node, Mapping) or depth > MAX_DEPTH or budget.nodes > MAX_NODES:
        return {}
    hops = 0
    while isinstance(node, Mapping) and "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or ref in refs or hops >= MAX_REF_HOPS:
            return {}  # not local, recursive, or a chain too long: any value
        refs = (*refs, ref)
        hops += 1
        found = resolve_pointer(root, ref)
        if not isinstance(found, Mapping):
            return {}
        node = found
    out: dict[str, Any] = {}
    kind = node.get("type")
    if isinstance(kind, str) and kind in _TYPES:
        out["type"] = kind
    elif isinstance(kind, list):
        kinds = [k for k in kind[:8] if isinstance(k, str) and k in _TYPES]
        if kinds:
            out["type"] = kinds if len(kinds) > 1 else kinds[0]
    if node.get("nullable") is True and "type" in out:  # OpenAPI 3.0
        kinds = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*kinds, "null"] if "null" not in kinds else kinds
    for key in ("description", "title", "format"):
        text = node.get(key)
        if isinstance(text, str) and text:
            out[key] = text[:MAX_TEXT]
    if "const" in node and _small_scalar(node["const"]):
        out["const"] = node["const"]
    enum = node.get("enum")
    if isinstance(enum, list) and enum and len(enum) <= MAX_ENUM:
        values = [v for v in enum if _small_scalar(v)]
        if len(values) == len(enum):
            out["enum"] = values
    if "default" in node and _small_scalar(node["default"]):
        out["default"] = node["default"]
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list) and branches:
            kept = [_copy(b, root, depth + 1, refs, budget) for b in branches[:32]]
            if any(not b for b in kept):
                break  # a branch that takes any value makes the union any value
            out["anyOf"] = kept
            break
    props = node.get("properties")
    if isinstance(props, Mapping):
        kept_props: dict[str, Any] = {}
        for name, value in props.items():
            if budget.nodes > MAX_NODES:
                break  # past the budget every further property would be any value
            if isinstance(name, str):
                kept_props[name[:MAX_TEXT]] = _copy(value, root, depth + 1, refs, budget)
        out["properties"] = kept_props
        out.setdefault("type", "object")
    required = node.get("required")
    if isinstance(required, list):
        names = [n for n in required[:MAX_NODES] if isinstance(n, str)]
        if names:
            out["required"] = names
    extra = node.get("additionalProperties")
    if extra is False:
        out["additionalProperties"] = False
    elif isinstance(extra, Mapping):
        out["additionalProperties"] = _copy(extra, root, depth + 1, refs, budget)
    items = node.get("items")
    if isinstance(items, Mapping):
        out["items"] = _copy(items, root, depth + 1, refs, budget)
    all_of = node.get("allOf")
    if isinstance(all_of, list):
        for part in all_of[:16]:
            merged = _copy(part, root, depth + 1, refs, budget)
            _merge(out, merged)
    return out


def _merge(into: dict[str, Any], part: JsonSchema) -> None:
    """Fold an ``allOf`` member into ``into`` (properties and required add up)."""
    for key, value in part.items():
        if key == "properties" and isinstance(value, dict):
            into.setdefault("properties", {}).update(value)
            into.setdefault("type", "object")
        elif key == "required" and isinstance(value, list):
            into["required"] = list(dict.fromkeys([*into.get("required", []), *value]))
        else:
            into.setdefault(key, value)


def _small_scalar(value: Any) -> bool:
    if not isinstance(value, _SCALARS):
        return False
    return not isinstance(value, str) or len(value) <= MAX_TEXT


def schema_size(schema: JsonSchema) -> int:
    """The characters of a schema as JSON (for caps on what a source may declare)."""
    return len(json.dumps(schema, separators=(",", ":")))
