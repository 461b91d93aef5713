"""An OpenAPI 3.0/3.1 document read into the operations the OpenAPI connector serves.

The document is hostile data like any foreign schema: it is read with size and node caps, a
``$ref`` resolves only inside it (an external one refuses the document, naming it), and each
operation's schemas are bounded copies (:func:`~._schemas.bounded_schema`) whose total size is
capped too, so loading costs at most the caps, not what the document asks for.

An operation's arguments are one object: its path, query and header parameters by name, and
``body`` for an ``application/json`` request body. Names that collide are told apart by where
they go: the path parameter keeps its name, a query or header parameter of the same name (or
one named ``body``) gets ``_query`` / ``_header`` after it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, cast

from quickjail.runtime._schema import JsonSchema
from quickjail.runtime.errors import ToolDefinitionError

from ._schemas import MAX_TEXT, bounded_schema, resolve_pointer

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_OPERATIONS",
    "Operation",
    "Parameter",
    "document_summary",
    "load_document",
    "read_operations",
]

log = logging.getLogger("quickjail.runtime.connectors")

MAX_DOCUMENT_BYTES: Final = 10 * 1024 * 1024
MAX_DOCUMENT_NODES: Final = 2_000_000  # JSON values walked in a document given as a dict
MAX_OPERATIONS: Final = 2_000
MAX_SCHEMA_NODES: Final = 400_000  # schema nodes kept over all of a document's operations
MAX_DESCRIPTION: Final = 1_000
METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
# the specification ignores these header parameters; the others are the transport's own
_IGNORED_HEADERS: Final = frozenset(
    {"accept", "content-type", "authorization", "content-length", "host", "connection",
     "transfer-encoding", "cookie", "accept-encoding"}
)  # fmt: skip
MAX_NAME: Final = 200  # characters of a parameter's name
_TOKEN_RE: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name
_TEMPLATE_RE: Final = re.compile(r"\{([^{}/]+)\}")
_JSON_TYPE_RE: Final = re.compile(r"^application/(?:[\w.+-]+\+)?json\s*(?:;.*)?$", re.I)

Location = Literal["path", "query", "header"]


@dataclass(frozen=True, slots=True)
class Parameter:
    """One argument property and where it goes: ``name`` in the ``location`` of the request."""

    key: str  # the property of the arguments object
    name: str  # the name in the request
    location: Location
    explode: bool  # a query array as repeated keys (the default) or comma-joined
    as_json: bool  # declared with ``content`` (a JSON text) rather than ``schema``


@dataclass(frozen=True, slots=True)
class Operation:
    """An operation the connector turns into one tool."""

    name: str  # operationId, else method_path
    method: str  # upper case
    path: str  # the path template, as in the document
    description: str
    parameters: tuple[Parameter, ...]
    body: Literal["none", "optional", "required"]
    input_schema: JsonSchema
    output_schema: JsonSchema | None


def load_document(spec: Mapping[str, Any] | str | os.PathLike[str]) -> Mapping[str, Any]:
    """The document ``spec`` names (a dict as it is, a JSON or YAML file read), checked.

    Raises:
        ToolDefinitionError: The file is missing, too large or not JSON/YAML; the document is
            not OpenAPI 3.0/3.1 (Swagger 2.0 included), is too large, or has an external
            ``$ref`` (named, with where it is).
    """
    if isinstance(spec, Mapping):
        doc: Any = spec
        where = "the OpenAPI document"
    elif isinstance(spec, str | os.PathLike):
        doc = _read_file(Path(spec))
        where = f"OpenAPI document {os.fspath(spec)!r}"
    else:
        raise ToolDefinitionError(
            f"spec must be an OpenAPI document (a dict) or a path, not {type(spec).__name__}"
        )
    if not isinstance(doc, Mapping):
        raise ToolDefinitionError(f"{where} is not an object")
    if "swagger" in doc:
        raise ToolDefinitionError(
            f"{where} is Swagger {str(doc['swagger'])[:20]}: only OpenAPI 3.0 and 3.1 are "
            "supported (convert it to OpenAPI 3 first)"
        )
    version = doc.get("openapi")
    if not isinstance(version, str) or not re.match(r"^3\.[01](\.\d+)?(-[\w.]+)?$", version):
        raise ToolDefinitionError(
            f"{where} declares openapi {str(version)[:20]!r}: only OpenAPI 3.0 and 3.1 "
            "are supported"
        )
    if not isinstance(doc.get("paths", {}), Mapping):
        raise ToolDefinitionError(f"{where}: 'paths' is not an object")
    _check_refs(doc, where)
    return doc


def document_summary(doc: Mapping[str, Any]) -> str:
    """``info.title: info.summary`` (else the description's first line), at most 200
    characters: what a connector made without a description says of itself."""
    info = doc.get("info")
    if not isinstance(info, Mapping):
        return ""
    title, summary = info.get("title"), info.get("summary") or info.get("description")
    line = summary.strip().splitlines()[0] if isinstance(summary, str) and summary.strip() else ""
    text = _text(title if isinstance(title, str) else "", limit=200)
    if line:
        text = f"{text}: {line}" if text else line
    return text if len(text) <= 200 else text[:199] + "…"


def _read_file(path: Path) -> Any:
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise ToolDefinitionError(f"cannot read OpenAPI document {str(path)!r}: {exc}") from exc
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ToolDefinitionError(
            f"OpenAPI document {str(path)!r} is over {MAX_DOCUMENT_BYTES:,} bytes"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ToolDefinitionError(f"OpenAPI document {str(path)!r} is not UTF-8") from exc
    try:
        if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
            return json.loads(text)
        return _load_yaml(text)
    except RecursionError as exc:
        raise ToolDefinitionError(f"OpenAPI document {str(path)!r} is nested too deeply") from exc
    except ValueError as exc:
        raise ToolDefinitionError(
            f"OpenAPI document {str(path)!r} is not valid JSON or YAML: {str(exc)[:300]}"
        ) from exc


def _load_yaml(text: str) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]  # no stubs in the dev tools
    except ImportError as exc:  # pragma: no cover - the 'connectors' extra brings it
        raise ToolDefinitionError(
            "reading a YAML OpenAPI document needs PyYAML: install quickjail[connectors]"
        ) from exc
    # the C loader when built (the pure Python one is slow on megabytes); both are "safe"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)  # a safe loader (see above)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def _check_refs(doc: Mapping[str, Any], where: str) -> None:
    """Refuse a ``$ref`` to anything outside ``doc``; walk each value once (YAML anchors
    share them, and may even make cycles), at most :data:`MAX_DOCUMENT_NODES` of them."""
    seen: set[int] = set()
    stack: list[tuple[Any, str]] = [(doc, "#")]
    count = 0
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, Mapping):
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        count += 1
        if count > MAX_DOCUMENT_NODES:
            raise ToolDefinitionError(f"{where} has over {MAX_DOCUMENT_NODES:,} values")
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                raise ToolDefinitionError(
                    f"{where} has an external $ref {ref[:200]!r} at {pointer[:200]}: only "
                    "references inside the document (#/...) are resolved; nothing is fetched"
                )
        for key, value in items:
            if isinstance(value, Mapping | list):
                part = str(key).replace("~", "~0").replace("/", "~1")
                stack.append((value, f"{pointer}/{part}" if len(pointer) < 300 else pointer))


def _deref(doc: Mapping[str, Any], node: Any) -> Any:
    """``node``, or what its local ``$ref`` (a chain of them, at most 32) points to."""
    for _ in range(32):
        if not isinstance(node, Mapping) or "$ref" not in node:
            return node
        node = resolve_pointer(doc, node["$ref"])
    return None


def _text(*parts: Any, limit: int = MAX_DESCRIPTION) -> str:
    kept = [p.strip() for p in parts if isinstance(p, str) and p.strip()]
    text = "\n\n".join(dict.fromkeys(kept))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _headline(label: str, summary: Any) -> str:
    return f"{label}: {summary.strip()}" if isinstance(summary, str) and summary.strip() else label


def _count_nodes(schema: Any) -> int:
    count, stack = 0, [schema]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


class _SchemaBudget:
    """The schema nodes a document's operations may keep in all (:data:`MAX_SCHEMA_NODES`)."""

    def __init__(self, doc: Mapping[str, Any], where: str) -> None:
        self.doc, self.where, self.left = doc, where, MAX_SCHEMA_NODES

    def copy(self, schema: Any) -> JsonSchema:
        kept = bounded_schema(schema, root=self.doc)
        self.left -= _count_nodes(kept)
        if self.left < 0:
            raise ToolDefinitionError(
                f"{self.where}: its operations' schemas add up to over {MAX_SCHEMA_NODES:,} "
                "nodes (after bounding each); load a smaller document"
            )
        return kept


def read_operations(
    doc: Mapping[str, Any],
    where: str = "the OpenAPI document",
    reserved_headers: Collection[str] = (),
    reserved_query: Collection[str] = (),
) -> list[Operation]:
    """Every operation of ``doc`` (as :func:`load_document` returned it), in document order.

    An operation whose required request body is not JSON is left out, with a warning logged;
    an optional non-JSON body is not offered. Header parameters named in
    ``reserved_headers`` (lower case: the connector's fixed and auth headers) and query
    parameters in ``reserved_query`` (its auth parameter) are not offered either.

    Raises:
        ToolDefinitionError: Over :data:`MAX_OPERATIONS` operations, or schemas past the
            document's budget.
    """
    paths = doc.get("paths") or {}
    found: list[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]] = []
    for path, item in paths.items():
        item = _deref(doc, item)
        if not isinstance(path, str) or not path.startswith("/") or not isinstance(item, Mapping):
            continue
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, Mapping):
                found.append((path, method, item, op))
                if len(found) > MAX_OPERATIONS:
                    raise ToolDefinitionError(
                        f"{where} has over {MAX_OPERATIONS:,} operations; split it or load "
                        "the part you need"
                    )
    budget = _SchemaBudget(doc, where)
    reserved = {("header", h.lower()) for h in reserved_headers}
    reserved |= {("query", q) for q in reserved_query}
    out: list[Operation] = []
    names: set[str] = set()
    for path, method, item, op in found:
        operation = _operation(doc, budget, path, method, item, op, names, reserved)
        if operation is not None:
            names.add(operation.name)
            out.append(operation)
    return out


def _operation(
    doc: Mapping[str, Any],
    budget: _SchemaBudget,
    path: str,
    method: str,
    item: Mapping[str, Any],
    op: Mapping[str, Any],
    taken: set[str],
    reserved: set[tuple[str, str]],
) -> Operation | None:
    label = f"{method.upper()} {path[:200]}"
    name = op.get("operationId")
    if not isinstance(name, str) or not name.strip():
        name = f"{method}_{path}"
    name = name[:200]
    base, n = name, 2
    while name in taken:  # operationIds must be unique; a document that repeats one still loads
        name, n = f"{base}_{n}", n + 1
    # operation parameters override the path item's of the same name and location
    declared: dict[tuple[Location, str], Mapping[str, Any]] = {}
    for source in (item.get("parameters"), op.get("parameters")):
        if isinstance(source, list):
            for raw in source[:200]:
                param = _deref(doc, raw)
                if not isinstance(param, Mapping):
                    continue
                pname, where = param.get("name"), param.get("in")
                if not isinstance(pname, str) or where not in ("path", "query", "header"):
                    continue
                if (
                    not pname
                    or len(pname) > MAX_NAME
                    or (where == "header" and not _TOKEN_RE.match(pname))
                ):
                    log.warning("OpenAPI operation %s: parameter %.60r left out", label, pname)
                    continue
                declared[(cast(Location, where), pname)] = param
    template = _TEMPLATE_RE.findall(path)
    for var in template:  # a template variable the document forgot: a required string
        declared.setdefault(
            ("path", var), {"name": var, "in": "path", "schema": {"type": "string"}}
        )
    props: dict[str, Any] = {}
    required: list[str] = []
    params: list[Parameter] = []
    ordered = sorted(declared.items(), key=lambda kv: ("path", "query", "header").index(kv[0][0]))
    for (where, pname), param in ordered:
        if where == "path" and pname not in template:
            continue  # declared but not in the path: nowhere to put it
        if where == "header" and (
            pname.lower() in _IGNORED_HEADERS or ("header", pname.lower()) in reserved
        ):
            continue
        if where == "query" and ("query", pname) in reserved:
            continue
        key = pname
        if key in props or key == "body":
            key = f"{pname}_{where}"
        m = 2
        while key in props:
            key, m = f"{pname}_{where}_{m}", m + 1
        schema_src, as_json = param.get("schema"), False
        content = param.get("content")
        if schema_src is None and isinstance(content, Mapping):
            media = _json_media(content)
            schema_src, as_json = (media or {}).get("schema", {}), True
        schema = dict(budget.copy(schema_src if schema_src is not None else {}))
        text = _text(param.get("description"), limit=MAX_TEXT)
        if text and "description" not in schema:
            schema["description"] = text
        props[key] = schema
        if where == "path" or param.get("required") is True:
            required.append(key)
        style_explode = param.get("explode")
        explode = (
            style_explode
            if isinstance(style_explode, bool)
            else param.get("style")
            in (
                None,
                "form",
            )
        )
        params.append(Parameter(key, pname, where, explode, as_json))
    body: Literal["none", "optional", "required"] = "none"
    request = _deref(doc, op.get("requestBody"))
    if isinstance(request, Mapping):
        content = request.get("content")
        media = _json_media(content) if isinstance(content, Mapping) else None
        is_required = request.get("required") is True
        if media is None:
            if is_required:
                log.warning("OpenAPI operation %s left out: its request body is not JSON", label)
                return None
        else:
            schema = dict(budget.copy(media.get("schema", {})))
            text = _text(request.get("description"), limit=MAX_TEXT)
            if text and "description" not in schema:
                schema["description"] = text
            props["body"] = schema
            body = "required" if is_required else "optional"
            if is_required:
                required.append("body")
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        input_schema["required"] = required
    return Operation(
        name=name,
        method=method.upper(),
        path=path,
        description=_text(_headline(label, op.get("summary")), op.get("description")),
        parameters=tuple(params),
        body=body,
        input_schema=input_schema,
        output_schema=_output_schema(doc, budget, op),
    )


def _json_media(content: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for media_type, media in list(content.items())[:50]:
        if isinstance(media_type, str) and _JSON_TYPE_RE.match(media_type):
            return media if isinstance(media, Mapping) else {}
    return None


def _output_schema(
    doc: Mapping[str, Any], budget: _SchemaBudget, op: Mapping[str, Any]
) -> JsonSchema | None:
    """The first 2xx response's JSON schema; ``null`` joins it when another 2xx response has
    no content (a 204 beside a 200)."""
    responses = op.get("responses")
    if not isinstance(responses, Mapping):
        return None
    schema: JsonSchema | None = None
    empty = False
    codes = sorted(str(c) for c in list(responses)[:100] if str(c)[:1] == "2")
    for code in codes:
        response = _deref(
            doc, responses.get(code, responses.get(int(code) if code.isdigit() else code))
        )
        if not isinstance(response, Mapping):
            continue
        content = response.get("content")
        media = _json_media(content) if isinstance(content, Mapping) else None
        if media is None:
            empty = empty or not content
        elif schema is None and "schema" in media:
            schema = budget.copy(media["schema"])
    if not schema:
        return None
    return {"anyOf": [schema, {"type": "null"}]} if empty else schema
