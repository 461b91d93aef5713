"""Tools from plain callables: :func:`tool_from_function`, public as ``Tool.from_function``.

The other directions live on :class:`Tool` too (``tool.as_function()``, ``tool.to_mcp()``).
A function's parameters become the argument model (closed: unknown keys are refused, and
validated as strictly as every tool's arguments), its docstring the description, and a return
annotation that is a pydantic model the output schema. A parameter annotated
:class:`ThreadState` receives the thread's state (``None`` when the tool runs without one).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

import anyio
from pydantic import BaseModel, ConfigDict, create_model

from ._define import define_tool
from ._result import ToolResult
from ._state import ThreadState
from ._tool import Tool
from .errors import ToolDefinitionError

__all__ = ["tool_from_function"]


def tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
) -> Tool:
    """Wrap a plain function (sync or async) as a :class:`Tool`.

    Args:
        fn: The function. Every parameter needs a type annotation of an allowed argument type,
            except one annotated ``ThreadState`` (it gets the state). A sync function runs in a
            worker thread and cannot take the state. It returns the result value or a
            :class:`ToolResult`.
        name: The tool's name; by default the function's ``__name__``.
        title: A human-readable title.
        description: What it does; by default the function's docstring.

    Raises:
        ToolDefinitionError: A parameter without annotation, ``*args``/``**kwargs``, an
            unsupported type (naming it), or no description.
    """
    if not callable(fn):
        raise ToolDefinitionError(f"tool_from_function needs a callable, got {fn!r}")
    tool_name: str = name or str(getattr(fn, "__name__", "") or "")
    text = description if description is not None else inspect.getdoc(fn)
    if not text:
        raise ToolDefinitionError(f"tool {tool_name!r}: give a docstring or description=")
    is_async = inspect.iscoroutinefunction(fn)
    try:
        hints = get_type_hints(fn)
    except Exception as exc:
        raise ToolDefinitionError(f"tool {tool_name!r}: cannot read annotations: {exc}") from None
    fields: dict[str, Any] = {}
    state_param: str | None = None
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {tool_name!r}: *args/**kwargs cannot be described")
        hint = hints.get(param.name, inspect.Parameter.empty)
        if hint is ThreadState or hint == ThreadState | None:
            if not is_async:
                raise ToolDefinitionError(f"tool {tool_name!r}: only an async function gets state")
            state_param = param.name
            continue
        if hint is inspect.Parameter.empty:
            raise ToolDefinitionError(f"tool {tool_name!r}: parameter {param.name!r} needs a type")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (hint, default)
    model_name = "".join(part.title() for part in tool_name.split("_")) + "Args"
    args = (
        create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)
        if fields
        else None
    )
    returned = hints.get("return")
    returns = returned if isinstance(returned, type) and issubclass(returned, BaseModel) else None

    async def call_fn(state: ThreadState | None, parsed: BaseModel | None) -> Any:
        kwargs = {k: getattr(parsed, k) for k in fields} if parsed is not None else {}
        if state_param is not None:
            kwargs[state_param] = state
        if is_async:
            return await fn(**kwargs)
        return await anyio.to_thread.run_sync(lambda: fn(**kwargs))

    async def execute(state: ThreadState | None, parsed: BaseModel) -> ToolResult:
        value = await call_fn(state, parsed)
        return value if isinstance(value, ToolResult) else ToolResult.success(value)

    async def execute_no_args(state: ThreadState | None) -> ToolResult:
        value = await call_fn(state, None)
        return value if isinstance(value, ToolResult) else ToolResult.success(value)

    return define_tool(
        description=text,
        execute=execute if args is not None else execute_no_args,
        args=args,
        returns=returns,
        name=tool_name,
        title=title,
    )
