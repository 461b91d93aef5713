"""Defining and collecting tools: :func:`define_tool`, :func:`unique_tools`, discovery."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from ._argtypes import check_model
from ._standard import as_tool
from ._tenvs import tenv_variables
from ._tool import SNAKE_RE, ApprovalRule, Execute, Revert, Tool, Variable
from .errors import ToolDefinitionError, ToolNameWarning

__all__ = ["define_tool", "discover_tools", "unique_tools"]


def define_tool(
    *,
    description: str,
    execute: Execute | None = None,
    args: type[BaseModel] | None = None,
    returns: type[BaseModel] | None = None,
    variables: Sequence[Variable] = (),
    tenvs: type[BaseModel] | None = None,
    name: str | None = None,
    title: str | None = None,
    execution_mode: Literal["local", "provider"] = "local",
    execution_provider: str | None = None,
    requires_approval: ApprovalRule = False,
    revert: Revert | None = None,
) -> Tool:
    """Define a tool.

    Args:
        description: What the tool does, for the model (non-empty).
        execute: ``async def fn(state, args)`` (or ``async def fn(state)`` without ``args``)
            returning a :class:`ToolResult`. Optional for provider-executed tools.
        args: Pydantic model of the arguments; ``None`` for a tool without arguments.
        returns: Pydantic model the successful result must match.
        variables: Variables the tool reads through ``await state.env(name)``.
        tenvs: Pydantic model of the tool's variables (see :mod:`quickjail.runtime._tenvs`):
            each field is a variable; the tool reads the parsed instance as ``state.tenvs``.
        name: The tool's name; by default the stem of the file that defines it.
        title: A human-readable title (shown by UIs and MCP clients).
        execution_mode: ``"provider"`` for tools the model provider runs; they are described
            in exports but never executed locally.
        execution_provider: Which provider executes a ``"provider"`` tool.
        requires_approval: ``True`` when every call waits for a person's approval before it
            runs (``thread.approve`` / ``thread.reject``), or a callable ``(args, state) ->
            bool`` (sync or async; ``args`` the validated arguments as ``execute`` gets them)
            deciding per call. A callable that raises counts as "needs approval".
        revert: ``async def fn(state, args, result)`` undoing a successful call (``args``
            as ``execute`` got them, ``result`` the success's value): ``thread.abandon``
            calls it, in reverse order, for the calls an abandoned code-mode program made.

    Returns:
        The tool.

    Raises:
        ToolDefinitionError: Empty description, unsupported argument type (naming the field),
            a sync or mis-shaped ``execute``, or duplicate variable names.

    Warns:
        ToolNameWarning: If the name is not snake_case of 1–64 characters.
    """
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError("a tool needs a non-empty description string")
    if name is None:
        source = sys._getframe(1).f_globals.get("__file__")
        if not source:
            raise ToolDefinitionError("name= is required for a tool not defined in a file")
        name = Path(source).stem
    if not isinstance(name, str) or not name:
        raise ToolDefinitionError("a tool name must be a non-empty string")
    if not SNAKE_RE.match(name):
        warnings.warn(
            f"tool name {name!r} is not snake_case of 1-64 characters", ToolNameWarning, 2
        )
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise ToolDefinitionError(f"tool {name!r}: title must be a non-empty string or None")
    if execution_mode not in ("local", "provider"):
        raise ToolDefinitionError(f"tool {name!r}: execution_mode must be 'local' or 'provider'")
    for model, what in ((args, "args"), (returns, "returns")):
        if model is not None:
            try:
                check_model(model, what)
            except ToolDefinitionError as exc:
                raise ToolDefinitionError(f"tool {name!r}: {exc}") from None
    if not isinstance(requires_approval, bool) and not callable(requires_approval):
        raise ToolDefinitionError(
            f"tool {name!r}: requires_approval must be a bool or a callable (args, state) -> bool"
        )
    if revert is not None and not inspect.iscoroutinefunction(revert):
        raise ToolDefinitionError(f"tool {name!r}: revert must be an async function or None")
    if execution_mode == "local":
        _check_execute(name, execute, with_args=args is not None)
    declared = tuple(variables)
    if any(not isinstance(v, Variable) for v in declared):
        raise ToolDefinitionError(f"tool {name!r}: variables must be Variable instances")
    if tenvs is not None:
        declared += tenv_variables(name, tenvs)
    names = [v.name for v in declared]
    if len(set(names)) != len(names):
        raise ToolDefinitionError(f"tool {name!r}: duplicate variable names in {names}")
    return Tool(
        name=name,
        description=description,
        args=args,
        execute=execute,
        variables=declared,
        returns=returns,
        execution_mode=execution_mode,
        execution_provider=execution_provider,
        tenvs=tenvs,
        title=title,
        requires_approval=requires_approval,
        revert=revert,
    )


def _check_execute(name: str, execute: object, *, with_args: bool) -> None:
    if execute is None:
        raise ToolDefinitionError(f"tool {name!r}: execute= is required for a local tool")
    if not callable(execute):
        raise ToolDefinitionError(f"tool {name!r}: execute must be an async function")
    dunder_call = getattr(type(execute), "__call__", None)  # noqa: B004 - async def __call__
    if not (inspect.iscoroutinefunction(execute) or inspect.iscoroutinefunction(dunder_call)):
        raise ToolDefinitionError(f"tool {name!r}: execute must be an async function")
    try:
        signature = inspect.signature(execute)
    except (TypeError, ValueError):
        return
    meta = {"meta": None} if "meta" in signature.parameters else {}
    try:
        signature.bind(None, None, **meta) if with_args else signature.bind(None, **meta)
    except TypeError:
        shape = "async fn(state, args)" if with_args else "async fn(state)"
        raise ToolDefinitionError(
            f"tool {name!r}: execute must look like {shape} (optionally with a meta parameter)"
        ) from None


def unique_tools(tools: Iterable[Tool], where: str) -> dict[str, Tool]:
    """Index tools by name, refusing duplicates and non-tools.

    Raises:
        ToolDefinitionError: Naming the duplicate.
    """
    index: dict[str, Tool] = {}
    for item in tools:
        tool = as_tool(item, where)
        if tool.name in index:
            raise ToolDefinitionError(f"{where}: two tools are named {tool.name!r}")
        index[tool.name] = tool
    return index


def discover_tools(path: str | Path) -> list[Tool]:
    """Load every ``*.py`` file of a ``tools/`` directory and collect the tools it defines.

    Files whose names start with ``_`` are skipped; a file defining no tool is ignored. A tool
    defined without ``name=`` is named after its file.

    Args:
        path: The directory.

    Returns:
        The tools, ordered by file name.

    Raises:
        ToolDefinitionError: The directory is missing, or two tools share a name.
    """
    root = Path(path)
    if not root.is_dir():
        raise ToolDefinitionError(f"tools directory {str(root)!r} does not exist")
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:12]
    found: list[Tool] = []
    for file in sorted(root.glob("*.py")):
        if file.name.startswith("_"):
            continue
        module_name = f"_quickjail_tools_{digest}_{file.stem}"
        spec = importlib.util.spec_from_file_location(module_name, file)
        if spec is None or spec.loader is None:  # pragma: no cover - .py files always load
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        found.extend(v for v in vars(module).values() if isinstance(v, Tool) and v not in found)
    unique_tools(found, f"tools in {root.name}/")
    return found
