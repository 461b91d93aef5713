"""A tool: :class:`Tool` (the StandardTool shape, its runs and formatting) and :class:`Variable`."""

from __future__ import annotations

import copy
import inspect
import re
import traceback
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn

from pydantic import BaseModel

from ._fs import check_attachment_refs
from ._result import AttachmentRef, ToolResult
from ._schema import JsonSchema, build_schema
from ._typescript_decl import ts_declaration
from ._validation import (
    issue,
    summarize,
    validate_input,
    validate_json_input,
    validate_output,
)
from .errors import (
    ToolDefinitionError,
    ToolExecutionError,
    ToolValidationError,
    ValidationIssue,
)

if TYPE_CHECKING:
    from ._state import ThreadState

__all__ = [
    "SNAKE_RE",
    "ApprovalRule",
    "Execute",
    "Formatter",
    "Revert",
    "Tool",
    "Variable",
    "default_format",
    "reachable_tools",
    "schema_tool",
]

SNAKE_RE: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

Execute = Callable[..., Awaitable[Any]]
#: ``requires_approval``: a bool, or ``(args, state) -> bool`` (sync or async) deciding per call.
ApprovalRule = bool | Callable[[Any, Any], Any]
#: ``revert``: ``async def fn(state, args, result)`` undoing a successful call.
Revert = Callable[[Any, Any, Any], Awaitable[Any]]


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


Formatter = Callable[[Any], Any]
"""Turns every outcome of a formatted tool into the data it returns, as the StandardTool
reference's ``formatOutput(result: Output | Error)``: called with the validated output value of
a success, or with the exception an unformatted :meth:`Tool.execute` raises for a failure
(:class:`~quickjail.runtime.errors.ToolValidationError`,
:class:`~quickjail.runtime.errors.ToolExecutionError`, or the tool's own exception), it returns
that data, or an awaitable of it (an ``async def`` formatter works)."""


def default_format(result: Any) -> Any:
    """The default formatter, as the reference's: a success's value as is, a failure (an
    exception) as ``{"error": message}``."""
    return {"error": str(result)} if isinstance(result, BaseException) else result


class Tool:
    """A tool the model can call, in the StandardTool shape.

    Built by :func:`define_tool`; immutable. It has a ``name``, an optional ``title``, a
    ``description``, an ``input_schema`` and an optional ``output_schema``. Two ways to run it:

    * ``await tool.call(args, state)`` (what a thread uses) never raises for a tool failure:
      it returns an error :class:`ToolResult`.
    * ``await tool.execute(input, meta)`` (the StandardTool form) returns the validated output
      value and raises :class:`~quickjail.runtime.errors.ToolValidationError` (``target``
      ``"input"`` or ``"output"``) or :class:`~quickjail.runtime.errors.ToolExecutionError`;
      ``tool.formatted(fmt)`` is the same tool returning ``fmt(result)`` for every outcome.

    A thread is optional for both: ``state``/``meta`` may be ``None`` for a tool that does not
    use one (its ``execute`` then receives ``None`` as the state).
    """

    __slots__ = (
        "_args",
        "_base",
        "_description",
        "_execute",
        "_execution_mode",
        "_execution_provider",
        "_format",
        "_input_schema",
        "_name",
        "_output_schema",
        "_reaches",
        "_requires_approval",
        "_resumer",
        "_returns",
        "_revert",
        "_schema_only",
        "_takes_meta",
        "_tenvs",
        "_title",
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
        title: str | None = None,
        schemas: tuple[JsonSchema, JsonSchema | None] | None = None,
        reaches: tuple[Tool, ...] = (),
        requires_approval: ApprovalRule = False,
        revert: Revert | None = None,
    ) -> None:
        """Store an already validated definition; use :func:`define_tool` instead.

        ``schemas`` (input, output) are the published JSON Schemas of a tool no pydantic
        model backs (``args`` and ``returns`` are then ``None``): its input is held to them
        and passed to ``execute`` as a dict. ``reaches`` are the tools this one calls on the
        thread it runs on (code mode's): a thread holding it needs their variables too.
        """
        self._reaches = reaches
        self._tenvs = tenvs
        self._name = name
        self._title = title
        self._description = description
        self._args = args
        self._execute = execute
        self._variables = variables
        self._returns = returns
        self._execution_mode = execution_mode
        self._execution_provider = execution_provider
        self._schema_only = schemas is not None
        if schemas is not None:
            self._input_schema, self._output_schema = schemas
        else:
            self._input_schema = build_schema(args, "validation")
            self._output_schema = build_schema(returns, "serialization") if returns else None
        self._base: Tool = self
        self._format: Formatter | None = None
        self._takes_meta = execute is not None and _declares_meta(execute)
        self._requires_approval = requires_approval
        self._revert = revert
        # code mode's: continues a program paused at an approval (see _codemode)
        self._resumer: Any = None

    @property
    def name(self) -> str:
        """The tool's name, unique within a runtime."""
        return self._name

    @property
    def title(self) -> str | None:
        """A human-readable title (for UIs and MCP clients), if given."""
        return self._title

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
    def reaches(self) -> tuple[Tool, ...]:
        """The tools this tool calls on its thread (a code-mode tool's), empty for most.

        A thread with this tool checks their required variables, stores their secret
        variables as secrets and redacts their values, as for its own tools.
        """
        return self._reaches

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
    def requires_approval(self) -> ApprovalRule:
        """``True``/``False``, or the callable deciding per call whether a call waits for
        approval (``define_tool(requires_approval=...)``)."""
        return self._requires_approval

    @property
    def revert(self) -> Revert | None:
        """``async def fn(state, args, result)`` undoing a successful call, if defined."""
        return self._revert

    def parse_args(self, args: Any) -> Any:
        """The arguments as ``execute`` gets them (a model instance, or a dict).

        Raises:
            ToolValidationError: They fail the input schema.
        """
        what = f"invalid arguments for tool {self._name!r}"
        if self._schema_only:
            return validate_json_input(self._input_schema, args, what)
        return validate_input(self._args, self._input_schema, args, what)

    async def approval_needed(self, args: Any, state: ThreadState | None) -> bool:
        """Whether this call of the tool waits for a person's approval before it runs.

        Arguments that fail validation need none (the call fails without running). A
        callable rule that raises, or returns anything but ``False``, needs approval: a
        broken rule never lets a call through unseen.
        """
        rule = self._requires_approval
        if isinstance(rule, bool):
            return rule
        try:
            parsed = self.parse_args(args)
        except ToolValidationError:
            return False
        try:
            decided = rule(parsed, state)
            if inspect.isawaitable(decided):
                decided = await decided
        except Exception:
            return True
        return decided is not False

    @property
    def input_schema(self) -> JsonSchema:
        """JSON Schema of the arguments (a fresh copy); validation enforces exactly it."""
        return copy.deepcopy(self._input_schema)

    @property
    def output_schema(self) -> JsonSchema | None:
        """JSON Schema of the result when ``returns`` was given (a fresh copy)."""
        return copy.deepcopy(self._output_schema)

    @property
    def typescript_declaration(self) -> str:
        """TypeScript declaration of the tool as an async function (for code-mode prompts)."""
        return ts_declaration(self)

    @property
    def is_formatted(self) -> bool:
        """Whether :meth:`execute` returns failures as data (a tool from :meth:`formatted`)."""
        return self._format is not None

    def __repr__(self) -> str:
        formatted = ", formatted" if self._format is not None else ""
        return f"<Tool {self._name!r} ({self._execution_mode}{formatted})>"

    async def call(
        self, args: Mapping[str, Any] | BaseModel | None, state: ThreadState | None = None
    ) -> ToolResult:
        """Validate ``args``, check required variables, run the tool and check its result.

        Args:
            args: The arguments (a mapping, a model instance, or ``None`` for no arguments).
            state: The thread state the tool runs against; ``None`` for a tool that uses none
                (one declaring a required variable then fails, naming it).

        Returns:
            The tool's result with secrets redacted; an error result when the arguments are
            invalid, a required variable is missing, the tool raised or returned the wrong
            thing (including an :class:`AttachmentRef` to no file of the thread).
            Cancellation propagates.
        """
        return await self._outcome(args, _thread_meta(state))

    async def execute(
        self, input: Mapping[str, Any] | BaseModel | None = None, meta: Any = None
    ) -> Any:
        """Run the tool the StandardTool way: validated input in, validated output out.

        Args:
            input: The arguments (a mapping of JSON data, a model instance, or ``None``).
            meta: Anything the caller wants the tool to see; an ``execute`` that declares a
                ``meta`` parameter receives it unchanged. The runtime reads a thread from it:
                a :class:`ThreadState` (or :class:`Thread`) given as ``meta`` or as
                ``meta["state"]``, with an optional ``meta["call_id"]`` string; any other value
                (a foreign framework's context) just runs the tool without a thread.

        Returns:
            The successful result's value (JSON data matching ``output_schema``, secrets
            redacted when a thread is given); attachments are available through :meth:`call`.
            A :meth:`formatted` tool returns its formatter's data for every outcome instead.

        Raises:
            ToolValidationError: The input (``target="input"``) or the tool's output
                (``target="output"``) does not match the schema; ``issues`` lists why.
            ToolExecutionError: The tool returned an error result, is provider-executed, or
                misses a required variable.
            Exception: Whatever the tool's own code raised.
        """
        if self._format is None:
            result = await self._base._run(input, meta)
            if not result.ok:
                raise ToolExecutionError(result, result.error or "the tool failed")
            return result.result
        outcome: Any
        try:
            outcome = await self._base.execute(input, meta)
        except Exception as exc:  # a failure is the formatter's to shape; cancellation is not
            outcome = exc
        data = self._format(outcome)
        if inspect.isawaitable(data):
            data = await data
        return data

    def formatted(self, fmt: Formatter | None = None) -> Tool:
        """The same tool whose :meth:`execute` returns ``fmt(result)`` for every outcome.

        Args:
            fmt: Called with every outcome (sync or async), as the StandardTool reference's
                ``formatOutput``: the validated output value of a success, or the exception
                the unformatted :meth:`execute` raises for a failure; by default a success's
                value as is and a failure as ``{"error": message}``. (For a result with its
                attachments as :data:`~quickjail.runtime.helpers.ToolContent`, use
                :meth:`call` and ``helpers.result_content``.)

        Returns:
            A new tool re-derived from this tool's validated execute each time: formatting a
            formatted tool replaces its formatter, it never stacks.
        """
        if fmt is not None and not callable(fmt):
            raise TypeError(f"fmt must be callable, got {type(fmt).__name__}")
        base = self._base
        tool = copy.copy(base)
        tool._base = base
        tool._format = fmt if fmt is not None else default_format
        return tool

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> Tool:
        """A tool of a plain typed function (sync or async); see :mod:`._adapters`.

        Its parameters become the (closed) argument model, its docstring the description, a
        pydantic return annotation the output schema; a parameter annotated ``ThreadState``
        gets the state. It returns the value or a :class:`ToolResult`.

        Raises:
            ToolDefinitionError: A parameter without annotation, ``*args``/``**kwargs``, an
                unsupported type (naming it), or no description.
        """
        from ._adapters import tool_from_function

        return tool_from_function(fn, name=name, title=title, description=description)

    @classmethod
    def from_standard(cls, obj: Any) -> Tool:
        """A tool of another library's StandardTool object; see :mod:`._standard`.

        ``obj`` has ``name``, ``description``, ``input_schema``, optionally ``title`` and
        ``output_schema``, and ``execute(input, meta)`` (sync or async). Its schemas are
        published as they are and what crosses is held to them. ``Runtime(tools=...)``,
        ``thread(tools=...)`` and ``code_mode_tool`` adapt such objects themselves.

        Raises:
            ToolDefinitionError: A missing or empty name or description, a schema that is not
                a JSON object schema, or no callable ``execute``.
        """
        from ._standard import tool_from_standard

        return tool_from_standard(obj)

    def as_function(self) -> Callable[..., Awaitable[Any]]:
        """An async plain callable: ``await fn(**kwargs)`` is ``await tool.execute(kwargs)``."""
        tool = self

        async def function(**arguments: Any) -> Any:
            return await tool.execute(arguments)

        function.__name__ = function.__qualname__ = self._name
        function.__doc__ = self._description
        return function

    def to_mcp(self) -> dict[str, Any]:
        """The tool as an MCP tool descriptor (``name``, ``title``, ``description``,
        ``inputSchema``, and ``outputSchema`` when the result is an object).

        Raises:
            ProviderFormatError: A name or description MCP clients cannot take.
        """
        from ._export import export_tools

        return export_tools([self], "mcp")[0]

    async def _run(self, input: Any, meta: Any) -> ToolResult:
        """Validate, run and check against the thread ``meta`` names: a failure the tool
        reports is an error result, a validation or execution problem is raised."""
        bound = _bound_state(self, meta)
        result = await self._validated(input, bound, meta)
        return bound._redact_result(result) if bound is not None else result

    async def _outcome(self, input: Any, meta: Any) -> ToolResult:
        """Every outcome as a result: the tool's own, or an error result for a validation
        problem, an execution problem or an exception of the tool (secrets redacted).
        Cancellation propagates."""
        bound = _bound_state(self, meta)
        try:
            result = await self._validated(input, bound, meta)
        except (ToolValidationError, ToolExecutionError) as exc:
            result = ToolResult.failure(str(exc))
        except Exception as exc:
            result = ToolResult.failure(
                f"{type(exc).__name__}: {exc}", stack=traceback.format_exc()
            )
        return bound._redact_result(result) if bound is not None else result

    async def _validated(
        self, args: Mapping[str, Any] | BaseModel | None, state: ThreadState | None, meta: Any
    ) -> ToolResult:
        """Validate, run and check; a failure the tool returns comes back as an error result."""
        if self._execution_mode == "provider" or self._execute is None:
            message = (
                f"tool {self._name!r} is executed by {self._execution_provider or 'the provider'},"
                " not locally"
            )
            raise ToolExecutionError(ToolResult.failure(message), message)
        what = f"invalid arguments for tool {self._name!r}"
        parsed: BaseModel | dict[str, Any] | None
        if self._schema_only:
            parsed = validate_json_input(self._input_schema, args, what)
        else:
            parsed = validate_input(self._args, self._input_schema, args, what)
        if state is not None:
            problem = await state._load_tenvs(self)
        else:
            missing = [v.name for v in self._variables if v.required]
            problem = None
            if missing:
                names = ", ".join(repr(n) for n in missing)
                plural = "s" if len(missing) > 1 else ""
                problem = (
                    f"tool {self._name!r} requires variable{plural} {names}, which "
                    f"{'are' if plural else 'is'} not set (no thread given)"
                )
        if problem is not None:
            raise ToolExecutionError(ToolResult.failure(problem), problem)
        extra = {"meta": meta} if self._takes_meta else {}
        if parsed is None:
            raw = await self._execute(state, **extra)
        else:
            raw = await self._execute(state, parsed, **extra)
        result = self._check_result(raw)
        refs = [a for a in result.attachments if isinstance(a, AttachmentRef)]
        if refs:
            checked, issues = await check_attachment_refs(state, refs)
            if issues:
                self._output_error(
                    issues, "returned an attachment that is not a file of its thread"
                )
            it = iter(checked)
            attachments = [
                next(it) if isinstance(a, AttachmentRef) else a for a in result.attachments
            ]
            result = result.model_copy(update={"attachments": attachments})
        return result

    def _output_error(
        self, issues: list[ValidationIssue], what: str, total: int | None = None
    ) -> NoReturn:
        raise ToolValidationError(
            "output", issues, f"tool {self._name!r} {what}: {summarize(issues, total)}"
        )

    def _check_result(self, raw: object) -> ToolResult:
        """The tool's :class:`ToolResult`, its value held to the published output schema
        (a failure's detail only to JSON)."""
        if isinstance(raw, ToolResult) and raw.status == "waiting":
            self._output_error(
                [issue((), "a tool cannot return a waiting result")],
                "returned a waiting result; only the runtime makes those (requires_approval)",
            )
        if not isinstance(raw, ToolResult):
            shown = type(raw).__name__
            self._output_error(
                [issue((), f"expected a ToolResult, got {shown}")],
                f"returned {shown}, not a ToolResult; return ToolResult.success(value) or "
                "ToolResult.failure(message)",
            )
        success = raw.status == "success"
        value = validate_output(
            self._returns if success else None,
            self._output_schema if success else None,
            raw.result,
            f"tool {self._name!r} returned a result that",
        )
        return raw.model_copy(update={"result": value})


def reachable_tools(tools: Iterable[Tool]) -> list[Tool]:
    """``tools`` and every tool they reach (:attr:`Tool.reaches`, transitively), each once.

    What a thread's variables are checked, typed and redacted against: a tool reachable only
    through code mode runs on the thread as much as a tool the model calls directly.
    """
    out: list[Tool] = []
    seen: set[int] = set()
    stack = list(tools)[::-1]
    while stack:
        tool = stack.pop()
        if id(tool) in seen:
            continue
        seen.add(id(tool))
        out.append(tool)
        stack.extend(reversed(tool.reaches))
    return out


def _thread_meta(state: ThreadState | None) -> dict[str, Any] | None:
    """The ``meta`` a thread's own call gives a tool: its state and its call id."""
    return None if state is None else {"state": state, "call_id": state.call_id}


def _bound_state(tool: Tool, meta: Any) -> ThreadState | None:
    """The thread ``meta`` names, bound to ``tool``; ``None`` for any other ``meta``.

    A :class:`ThreadState` or a :class:`Thread`, as ``meta`` itself or as ``meta["state"]``
    (with ``meta["call_id"]`` when it is a string), names a thread; the StandardTool ``meta``
    of another framework is any other value, and the tool then runs without a thread.
    """
    from ._state import ThreadState
    from ._thread import Thread

    call_id = None
    if isinstance(meta, Mapping):
        found = meta.get("state")
        given = meta.get("call_id")
        call_id = given if isinstance(given, str) else None
        meta = found
    if isinstance(meta, Thread):
        meta = meta.state
    if not isinstance(meta, ThreadState):
        return None
    wanted = call_id if call_id is not None else meta.call_id
    if meta._tool is tool and wanted == meta.call_id:
        return meta
    return meta._bind(tool, wanted)


def _declares_meta(execute: Callable[..., Any]) -> bool:
    """Whether ``execute`` takes the StandardTool ``meta`` (a parameter named ``meta``)."""
    try:
        parameter = inspect.signature(execute).parameters.get("meta")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def schema_tool(
    *,
    name: str,
    description: str,
    execute: Execute,
    schemas: tuple[JsonSchema, JsonSchema | None],
    title: str | None = None,
    variables: tuple[Variable, ...] = (),
    reaches: tuple[Tool, ...] = (),
) -> Tool:
    """A local tool no pydantic model backs: its input held to ``schemas[0]`` and passed to
    ``execute`` as a dict (foreign StandardTools, connectors' tools, code mode)."""
    return Tool(
        name=name,
        title=title,
        description=description,
        args=None,
        execute=execute,
        variables=variables,
        returns=None,
        execution_mode="local",
        execution_provider=None,
        schemas=schemas,
        reaches=reaches,
    )
