"""Validation of a tool's input and output exactly as strict as the JSON Schemas it publishes.

A model reads the published schema, so the runtime enforces that and nothing looser; a caller
reads the published output schema, so a result is held to it the same way. The value
is first walked along the published schema: every value must have a JSON type (and enum or
const value) the schema allows there, so nothing is coerced (``"5"`` is not an integer, ``1``
is not a boolean, ``true`` is not an integer enum member), and a key the schema does not list is
refused wherever it says ``additionalProperties: false``. For ``anyOf``/``oneOf`` a value is
fine when one branch fits. Only then does the tool's pydantic model parse it (required fields,
constraints, building the instance). Each (value, schema node) pair is visited at most once, so
the walk is linear in the size of the value times the size of the schema, whatever the nesting
of unions, and its depth is bounded by the argument depth cap.

An issue is ``{"path": [...], "message": ...}``: ``path`` lists the keys from the value's root
to the offending value (strings for object keys, integers for array indices; ``[]`` for the
value itself), as the StandardTool RFC's issues carry it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ._arguments import ArgumentsError, plain_arguments
from ._schema import JsonSchema
from ._strict import drop_absent_nulls
from .errors import ToolValidationError, ValidationIssue

__all__ = [
    "MAX_ISSUES",
    "dotted",
    "issue",
    "issues_of",
    "summarize",
    "validate_input",
    "validate_json_input",
    "validate_output",
]

MAX_ISSUES: Final = 5
_MAX_SHOWN: Final = 40

Path = tuple[str | int, ...]
Issue = ValidationIssue


def issue(path: Path | list[str | int], message: str) -> Issue:
    """One issue: where (a list of keys from the root) and what."""
    return {"path": list(path), "message": message}


def validate_input(
    model: type[BaseModel] | None, schema: JsonSchema, args: object, what: str
) -> BaseModel | None:
    """Return the tool's parsed arguments, or raise naming every problem (up to a bound).

    Args:
        model: The tool's argument model (``None``: the tool takes no arguments).
        schema: The tool's published input schema (the object the exports show).
        args: A mapping of JSON data, an instance of ``model`` (trusted as is), another
            pydantic model (dumped to JSON first) or ``None`` for no arguments.
        what: Start of the error message, e.g. ``"invalid arguments for tool 'x'"``.

    Raises:
        ToolValidationError: ``target="input"``, with the issues.
    """
    if model is not None and isinstance(args, model):
        return args
    data = _plain_input(args, what)
    if model is None:
        if data:
            _fail("input", what, [_unexpected(k, ()) for k in sorted(data)[:MAX_ISSUES]])
        return None
    data = drop_absent_nulls(data, schema)  # OpenAI strict mode's null for "left out"
    parsed, refused = _check(model, schema, data)
    if refused:
        _fail("input", what, refused[:MAX_ISSUES], len(refused))
    # every value has the JSON type the schema names, so the model coerced nothing
    return parsed


def validate_json_input(schema: JsonSchema, args: object, what: str) -> dict[str, Any]:
    """Return the arguments of a tool no pydantic model backs (a foreign StandardTool), held
    to its published input schema: JSON types, enums and consts, closed keys, required keys.

    Constraints (``minimum``, ``pattern``, ...) are left to the tool, which validates its
    own input as a StandardTool does.

    Raises:
        ToolValidationError: ``target="input"``, with the issues.
    """
    data: dict[str, Any] = drop_absent_nulls(_plain_input(args, what), schema)
    refused = _walk(data, schema, (), {}, required=True)
    if refused:
        _fail("input", what, refused[:MAX_ISSUES], len(refused))
    return data


def _plain_input(args: object, what: str) -> dict[str, Any]:
    """A call's arguments as plain JSON data (a model dumped, ``None`` as ``{}``).

    Raises:
        ToolValidationError: ``target="input"``: not an object, or not JSON data.
    """
    if isinstance(args, BaseModel):
        args = args.model_dump(mode="json")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        _fail("input", what, [issue((), f"expected an object, got {_json_type(args)}")])
    try:
        data: dict[str, Any] = plain_arguments(dict(args))
    except ArgumentsError as exc:
        _fail("input", what, [issue((), str(exc))])
    return data


def validate_output(
    model: type[BaseModel] | None, schema: JsonSchema | None, value: object, what: str
) -> Any:
    """Return a tool's result as JSON data held to its published output schema.

    The value is first given its JSON form (a model instance is dumped, a tuple becomes a
    list); then, when the tool publishes an output schema, it is checked exactly like input:
    ``"21"`` is no number and a key the schema does not list is refused.

    Args:
        model: The tool's ``returns`` model, if any.
        schema: The tool's published output schema (``None``: any JSON value).
        value: What the tool returned as its result.
        what: Start of the error message, e.g. ``"tool 'x' returned a result that..."``.

    Raises:
        ToolValidationError: ``target="output"``, with the issues.
    """
    if model is not None and isinstance(value, model):
        return value.model_dump(mode="json")
    try:
        data = to_jsonable_python(value, bytes_mode="base64")
        json.dumps(data, allow_nan=False)
    except (PydanticSerializationError, TypeError, ValueError, RecursionError) as exc:
        _fail("output", f"{what} is not JSON-compatible", [issue((), str(exc))])
    if schema is None:
        return data
    if model is None:
        refused = _walk(data, schema, (), {}, required=True)
        if refused:
            _fail("output", f"{what} does not match its output schema", refused[:MAX_ISSUES])
        return data
    parsed, refused = _check(model, schema, data)
    if refused or parsed is None:
        _fail(
            "output", f"{what} does not match {model.__name__}", refused[:MAX_ISSUES], len(refused)
        )
    return parsed.model_dump(mode="json")


def _check(
    model: type[BaseModel], schema: JsonSchema, data: Any
) -> tuple[BaseModel | None, list[Issue]]:
    """Walk ``data`` along ``schema``, then parse it with ``model``; every issue of both."""
    refused = _walk(data, schema, (), {})
    parsed = None
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        # also name what the model misses (a required field), not only what the walk refused
        seen = {tuple(i["path"]) for i in refused}
        refused += [i for i in issues_of(exc) if tuple(i["path"]) not in seen]
    return parsed, refused


def issues_of(exc: ValidationError) -> list[Issue]:
    """The first :data:`MAX_ISSUES` errors of a pydantic failure, as path and message."""
    issues = []
    for error in exc.errors(include_url=False)[:MAX_ISSUES]:
        message = error["msg"]
        if error["type"] not in ("missing", "extra_forbidden") and "input" in error:
            message = f"{message} (got {_shown(error['input'])})"
        issues.append(issue(error["loc"], message))
    return issues


def summarize(issues: list[Issue], total: int | None = None) -> str:
    """``a.0.b: message; ...`` with ``and N more`` past the shown issues."""
    parts = [f"{dotted(i['path'])}: {i['message']}" for i in issues]
    extra = (total if total is not None else len(issues)) - len(issues)
    if extra > 0:
        parts.append(f"and {extra} more")
    return "; ".join(parts)


def dotted(path: list[str | int]) -> str:
    """A path as text for messages: ``a.0.b`` (long keys cut), ``(root)`` for ``[]``."""
    if not path:
        return "(root)"
    return ".".join(
        str(k) if len(str(k)) <= _MAX_SHOWN else str(k)[:_MAX_SHOWN] + "..." for k in path
    )


def _fail(target: str, what: str, issues: list[Issue], total: int | None = None) -> NoReturn:
    raise ToolValidationError(target, issues, f"{what}: {summarize(issues, total)}")


def _unexpected(key: str, path: Path, expected: Any = ()) -> Issue:
    names = ", ".join(sorted(str(n) for n in expected)) or "none"
    return issue((*path, key), f"unexpected key (allowed keys: {names})")


def _walk(
    value: Any,
    schema: Any,
    path: Path,
    seen: dict[tuple[int, int, Path], list[Issue]],
    required: bool = False,
) -> list[Issue]:
    """The issues of ``value`` against ``schema``: types, enums, closed keys, and with
    ``required`` (a schema no pydantic model backs) the ``required`` keys too."""
    if not isinstance(schema, dict):
        return []
    key = (id(value), id(schema), path)  # the path too: equal scalars share one object
    if key in seen:
        return seen[key]
    seen[key] = []
    issues: list[Issue] = []
    if not _fits(value, schema):
        issues = [issue(path, f"expected {_expected(schema)} (got {_shown(value)})")]
        seen[key] = issues
        return issues
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list):
        fitting = [b for b in branches if _fits(value, b)]
        found = [_walk(value, b, path, seen, required) for b in fitting]
        if found and all(found):
            issues = found[0]
    elif isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            where = (*path, name)
            if name in props:
                issues.extend(_walk(item, props[name], where, seen, required))
            elif extra is False:
                issues.append(_unexpected(name, path, props))
            else:
                issues.extend(_walk(item, extra, where, seen, required))
            if len(issues) > MAX_ISSUES:
                break
        names = schema.get("required") if required else None
        if isinstance(names, list):
            missing = [n for n in names if isinstance(n, str) and n not in value]
            issues.extend(issue((*path, n), "Field required") for n in missing[:MAX_ISSUES])
    elif isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            issues.extend(_walk(item, items, (*path, index), seen, required))
            if len(issues) > MAX_ISSUES:
                break
    seen[key] = issues
    return issues


_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "null": (type(None),),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list,),
    "object": (dict,),
}


def _fits(value: Any, schema: Any) -> bool:
    """Whether ``value`` has one of the JSON types (or the enum/const value) a branch allows."""
    if not isinstance(schema, dict):
        return True
    if "const" in schema:
        return _same(value, schema["const"])
    if isinstance(schema.get("enum"), list):
        return any(_same(value, member) for member in schema["enum"])
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list):
        return any(_fits(value, b) for b in branches)
    kinds = schema.get("type")
    if kinds is None:
        return True
    names = kinds if isinstance(kinds, list) else [kinds]
    for name in names:
        allowed = _TYPES.get(name, ()) if isinstance(name, str) else ()
        if isinstance(value, allowed) and not (isinstance(value, bool) and name != "boolean"):
            return True
    return False


def _expected(schema: Any, depth: int = 0) -> str:
    """What a schema node allows, in words (``an integer``, ``one of "a", "b"``)."""
    if not isinstance(schema, dict):
        return "a value"
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        return "one of " + ", ".join(json.dumps(m) for m in schema["enum"][:10])
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list) and depth < 3:
        return " or ".join(_expected(b, depth + 1) for b in branches[:10])
    kinds = schema.get("type")
    names = kinds if isinstance(kinds, list) else [kinds] if isinstance(kinds, str) else []
    words = [_ARTICLED.get(n, n) for n in names]
    return " or ".join(words) or "a value"


_ARTICLED: Final = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def _same(value: Any, member: Any) -> bool:
    """JSON equality: ``true`` is not ``1``."""
    return isinstance(value, bool) == isinstance(member, bool) and bool(value == member)


def _json_type(value: Any) -> str:
    for name, kinds in _TYPES.items():
        if isinstance(value, kinds) and not (isinstance(value, bool) and name != "boolean"):
            return (
                "a number" if name == "integer" else f"{'an' if name[0] in 'aeio' else 'a'} {name}"
            )
    return f"a value of type {type(value).__name__}"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = type(value).__name__
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN] + "..."
    return f"{_json_type(value)} {text}"
