"""StandardTool objects of other libraries as :class:`Tool` s (public as ``Tool.from_standard``).

A StandardTool is any object with a ``name``, a ``description``, an ``input_schema`` (a JSON
Schema of an object), optionally a ``title`` and an ``output_schema``, and an
``execute(input, meta)`` method (sync or async) that returns the output value or raises. The
adapter publishes its schemas as they are and holds what crosses to them: a model's arguments
are checked against ``input_schema`` (JSON types, enums, closed and required keys, as for
every tool; constraints such as ``minimum`` are the tool's own to check), the output against
``output_schema``. ``execute`` gets the input as a dict and the ``meta`` the caller gave (a
thread's own calls give ``{"state": state, "call_id": id}``); a sync ``execute`` runs in a
worker thread, so it never blocks the event loop.
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread

from ._result import ToolResult
from ._schema import JsonSchema
from ._tool import SNAKE_RE, Tool, schema_tool
from .errors import ToolDefinitionError, ToolNameWarning

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = ["as_tool", "is_standard_tool", "tool_from_standard"]

_REQUIRED: Final = ("name", "description", "input_schema", "execute")


def is_standard_tool(obj: object) -> bool:
    """Whether ``obj`` has the StandardTool shape (a :class:`Tool` or another library's)."""
    if isinstance(obj, Tool):
        return True
    try:
        return all(hasattr(obj, attr) for attr in _REQUIRED) and callable(
            getattr(obj, "execute", None)
        )
    except Exception:  # a property that raises is not a tool
        return False


def as_tool(obj: object, where: str) -> Tool:
    """``obj`` itself when it is a :class:`Tool`, else its adapter.

    Raises:
        ToolDefinitionError: ``obj`` is neither (naming ``where`` and what it is).
    """
    if isinstance(obj, Tool):
        return obj
    if not is_standard_tool(obj):
        raise ToolDefinitionError(
            f"{where}: expected Tool objects or StandardTool objects (name, description, "
            f"input_schema, execute(input, meta)), got {type(obj).__name__}"
        )
    return tool_from_standard(obj)


def tool_from_standard(obj: Any) -> Tool:
    """Wrap another library's StandardTool object as a :class:`Tool`.

    Raises:
        ToolDefinitionError: A missing or empty name or description, a schema that is not a
            JSON object schema, or no callable ``execute``.

    Warns:
        ToolNameWarning: If the name is not snake_case of 1–64 characters.
    """
    if isinstance(obj, Tool):
        return obj
    try:
        name, description = obj.name, obj.description
        input_schema, execute = obj.input_schema, obj.execute
        title = getattr(obj, "title", None)
        output_schema = getattr(obj, "output_schema", None)
    except Exception as exc:
        raise ToolDefinitionError(f"a StandardTool object cannot be read: {exc!r}") from None
    if not isinstance(name, str) or not name:
        raise ToolDefinitionError("a StandardTool needs a non-empty string name")
    if not SNAKE_RE.match(name):
        warnings.warn(
            f"tool name {name!r} is not snake_case of 1-64 characters", ToolNameWarning, 3
        )
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"tool {name!r}: a StandardTool needs a non-empty description")
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ToolDefinitionError(f"tool {name!r}: title must be a non-empty string or None")
    if not callable(execute):
        raise ToolDefinitionError(f"tool {name!r}: execute must be callable")
    schemas = (
        _json_schema(name, "input_schema", input_schema),
        None if output_schema is None else _json_schema(name, "output_schema", output_schema),
    )
    if schemas[0].get("type", "object") != "object":
        raise ToolDefinitionError(f"tool {name!r}: input_schema must describe an object")
    run_sync = not (
        inspect.iscoroutinefunction(execute)
        or inspect.iscoroutinefunction(getattr(type(execute), "__call__", None))  # noqa: B004
    )

    async def run(state: ThreadState | None, args: dict[str, Any], meta: Any) -> ToolResult:
        if run_sync:
            out = await anyio.to_thread.run_sync(lambda: execute(args, meta))
        else:
            out = execute(args, meta)
        if inspect.isawaitable(out):
            out = await out
        return out if isinstance(out, ToolResult) else ToolResult.success(out)

    return schema_tool(
        name=name, description=description, execute=run, title=title, schemas=schemas
    )


def _json_schema(name: str, what: str, schema: object) -> JsonSchema:
    """A private JSON copy of a published schema (an object of JSON data)."""
    if not isinstance(schema, Mapping):
        raise ToolDefinitionError(
            f"tool {name!r}: {what} must be a JSON Schema object, got {type(schema).__name__}"
        )
    try:
        copied = json.loads(json.dumps(dict(schema), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise ToolDefinitionError(f"tool {name!r}: {what} is not JSON: {exc}") from None
    assert isinstance(copied, dict)
    return copied
