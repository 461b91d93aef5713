"""Tool definitions: :func:`define_tool`, :class:`Tool`, :class:`Variable`, discovery."""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import inspect
import json
import re
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from ._argtypes import check_model
from ._result import ToolResult
from ._schema import JsonSchema, build_schema
from ._tenvs import tenv_variables
from ._typescript_decl import ts_declaration
from .errors import ToolDefinitionError, ToolNameWarning

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = ["Tool", "Variable", "define_tool", "discover_tools", "unique_tools"]

_SNAKE_RE: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_MAX_ERRORS_SHOWN: Final = 5

Execute = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Variable:
    """A variable (tenv) a tool needs, merged prompt → agent → thread (later layers win).

    Attributes:
        name: Variable name, as passed to ``state.env(name)``.
        type: ``"text"`` or ``"secret"``; secret values are redacted from everything stored or
            returned, wherever they come from.
        required: When true, creating or opening a thread whose layers lack it fails (listing
            every missing one), and so does a call, before the tool runs.
        scoped: When true, a thread whose tools declare it does not inherit it from its parent
            thread; its own value still flows down to its descendants.
        description: What the variable is for (for people configuring the agent).
    """

    name: str
    type: Literal["text", "secret"] = "text"
    required: bool = False
    scoped: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ToolDefinitionError("a variable needs a non-empty string name")
        if self.type not in ("text", "secret"):
            raise ToolDefinitionError(f"variable {self.name!r}: type must be 'text' or 'secret'")


class Tool:
    """A tool the model can call: its name, description, JSON Schema and implementation.

    Built by :func:`define_tool`; immutable. ``await tool.call(args, state)`` runs it standalone
    with full validation and never raises for a tool failure (it returns an error result).
    """

    __slots__ = (
        "_args",
        "_description",
        "_execute",
        "_execution_mode",
        "_execution_provider",
        "_input_schema",
        "_name",
        "_output_schema",
        "_returns",
        "_tenvs",
        "_variables",
    )

    def __init__(
        self,
        *,
        name: str,
        description: str,
        args: type[BaseModel] | None,
        execute: Execute | None,
        variables: tuple[Variable, ...],
        returns: type[BaseModel] | None,
        execution_mode: Literal["local", "provider"],
        execution_provider: str | None,
        tenvs: type[BaseModel] | None = None,
    ) -> None:
        """Store an already validated definition; use :func:`define_tool` instead."""
        self._tenvs = tenvs
        self._name = name
        self._description = description
        self._args = args
        self._execute = execute
        self._variables = variables
        self._returns = returns
        self._execution_mode = execution_mode
        self._execution_provider = execution_provider
        self._input_schema = build_schema(args, "validation")
        self._output_schema = build_schema(returns, "serialization") if returns else None

    @property
    def name(self) -> str:
        """The tool's name, unique within a runtime."""
        return self._name

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        return self._description

    @property
    def args_model(self) -> type[BaseModel] | None:
        """Pydantic model of the arguments (``None``: no arguments)."""
        return self._args

    @property
    def returns_model(self) -> type[BaseModel] | None:
        """Pydantic model a successful result must match, if any."""
        return self._returns

    @property
    def variables(self) -> tuple[Variable, ...]:
        """Variables the tool declares (``variables=`` then the fields of ``tenvs=``)."""
        return self._variables

    @property
    def tenvs_model(self) -> type[BaseModel] | None:
        """The pydantic model of ``tenvs=``, parsed into ``state.tenvs`` when the tool runs."""
        return self._tenvs

    @property
    def execution_mode(self) -> Literal["local", "provider"]:
        """``"local"``, or ``"provider"`` for tools the model provider executes."""
        return self._execution_mode

    @property
    def execution_provider(self) -> str | None:
        """Which provider executes a ``"provider"`` tool."""
        return self._execution_provider

    @property
    def input_schema(self) -> JsonSchema:
        """JSON Schema of the arguments (a fresh copy)."""
        return copy.deepcopy(self._input_schema)

    @property
    def output_schema(self) -> JsonSchema | None:
        """JSON Schema of the result when ``returns`` was given (a fresh copy)."""
        return copy.deepcopy(self._output_schema)

    @property
    def typescript_declaration(self) -> str:
        """TypeScript declaration of the tool as an async function (for code-mode prompts)."""
        return ts_declaration(self)

    def __repr__(self) -> str:
        return f"<Tool {self._name!r} ({self._execution_mode})>"

    async def call(
        self, args: Mapping[str, Any] | BaseModel | None, state: ThreadState
    ) -> ToolResult:
        """Validate ``args``, check required variables, run the tool and check its result.

        Args:
            args: The arguments (a mapping, a model instance, or ``None`` for no arguments).
            state: The thread state the tool runs against.

        Returns:
            The tool's result with secrets redacted; an error result when the arguments are
            invalid, a required variable is missing, the tool raised or returned the wrong
            thing. Cancellation propagates.
        """
        bound = state._bind(self)
        return bound._redact_result(await self._run(args, bound))

    async def _run(
        self, args: Mapping[str, Any] | BaseModel | None, state: ThreadState
    ) -> ToolResult:
        if self._execution_mode == "provider" or self._execute is None:
            return ToolResult.failure(
                f"tool {self._name!r} is executed by {self._execution_provider or 'the provider'},"
                " not locally"
            )
        try:
            parsed = self._parse_args(args)
        except ValidationError as exc:
            return ToolResult.failure(
                f"invalid arguments for tool {self._name!r}: {_summarize(exc)}"
            )
        except TypeError as exc:
            return ToolResult.failure(f"invalid arguments for tool {self._name!r}: {exc}")
        problem = await state._load_tenvs(self)
        if problem is not None:
            return ToolResult.failure(problem)
        try:
            if self._args is None:
                raw = await self._execute(state)
            else:
                raw = await self._execute(state, parsed)
        except Exception as exc:
            return ToolResult.failure(f"{type(exc).__name__}: {exc}", stack=traceback.format_exc())
        return self._check_result(raw)

    def _parse_args(self, args: Mapping[str, Any] | BaseModel | None) -> BaseModel | None:
        if self._args is None:
            if args:
                raise TypeError(f"the tool takes no arguments, got {sorted(dict(args))}")
            return None
        if isinstance(args, self._args):
            return args
        if isinstance(args, BaseModel):
            args = args.model_dump()
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise TypeError(f"arguments must be a JSON object, got {type(args).__name__}")
        return self._args.model_validate(dict(args))

    def _check_result(self, raw: object) -> ToolResult:
        if not isinstance(raw, ToolResult):
            shown = type(raw).__name__
            return ToolResult.failure(
                f"tool {self._name!r} returned {shown}, not a ToolResult; return "
                "ToolResult.success(value) or ToolResult.failure(message)"
            )
        value = raw.result
        if raw.status == "success" and self._returns is not None:
            try:
                if isinstance(value, BaseModel):
                    value = value.model_dump()
                value = self._returns.model_validate(value).model_dump(mode="json")
            except ValidationError as exc:
                return ToolResult.failure(
                    f"tool {self._name!r} returned a result that does not match "
                    f"{self._returns.__name__}: {_summarize(exc)}"
                )
        try:
            value = to_jsonable_python(value, bytes_mode="base64")
            json.dumps(value, allow_nan=False)
        except (PydanticSerializationError, TypeError, ValueError, RecursionError) as exc:
            return ToolResult.failure(
                f"tool {self._name!r} returned a result that is not JSON-compatible: {exc}"
            )
        return raw.model_copy(update={"result": value})


def _summarize(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False)[:_MAX_ERRORS_SHOWN]:
        where = ".".join(str(p) for p in error["loc"]) or "(root)"
        parts.append(f"{where}: {error['msg']}")
    extra = exc.error_count() - _MAX_ERRORS_SHOWN
    if extra > 0:
        parts.append(f"and {extra} more")
    return "; ".join(parts)


def define_tool(
    *,
    description: str,
    execute: Execute | None = None,
    args: type[BaseModel] | None = None,
    returns: type[BaseModel] | None = None,
    variables: Sequence[Variable] = (),
    tenvs: type[BaseModel] | None = None,
    name: str | None = None,
    execution_mode: Literal["local", "provider"] = "local",
    execution_provider: str | None = None,
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
        execution_mode: ``"provider"`` for tools the model provider runs; they are described
            in exports but never executed locally.
        execution_provider: Which provider executes a ``"provider"`` tool.

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
    if not _SNAKE_RE.match(name):
        warnings.warn(
            f"tool name {name!r} is not snake_case of 1-64 characters", ToolNameWarning, 2
        )
    if execution_mode not in ("local", "provider"):
        raise ToolDefinitionError(f"tool {name!r}: execution_mode must be 'local' or 'provider'")
    for model, what in ((args, "args"), (returns, "returns")):
        if model is not None:
            try:
                check_model(model, what)
            except ToolDefinitionError as exc:
                raise ToolDefinitionError(f"tool {name!r}: {exc}") from None
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
    try:
        signature.bind(None, None) if with_args else signature.bind(None)
    except TypeError:
        shape = "async fn(state, args)" if with_args else "async fn(state)"
        raise ToolDefinitionError(f"tool {name!r}: execute must look like {shape}") from None


def unique_tools(tools: Iterable[Tool], where: str) -> dict[str, Tool]:
    """Index tools by name, refusing duplicates and non-tools.

    Raises:
        ToolDefinitionError: Naming the duplicate.
    """
    index: dict[str, Tool] = {}
    for tool in tools:
        if not isinstance(tool, Tool):
            raise ToolDefinitionError(f"{where}: expected Tool objects, got {type(tool).__name__}")
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
