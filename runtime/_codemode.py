"""Code mode: one ``run_code`` tool whose sandbox can call other tools as async functions.

The model writes TypeScript in any of the shapes ``kind="auto"`` runs (a module, an async arrow,
statements with top-level await or return, an expression; fenced or not). Its tools:

* the global ``tools`` (and, if asked, a second name such as ``codemode``) and the module
  ``"tools"``: one async function per local tool (``define_tool``);
* one global namespace per connector (``github.create_issue({...})``, see
  :mod:`quickjail.runtime.connectors`);
* ``snippets.name(args)``: programs saved on the thread (:mod:`quickjail.runtime._snippets`);
* ``search(query)`` and ``describe(name)``: discovery over all of them
  (:mod:`quickjail.runtime._codemode_catalog`), so the tool's description stays short with any
  number of tools.

A tool function resolves to the tool's value and rejects with an ``Error`` carrying its message;
``tool(args, { raw: true })`` gives the whole result (:mod:`quickjail.runtime._codemode_calls`).
A name that is no tool rejects with an error naming it. Arguments must be JSON data, are
validated by the tool's own schema, and every nested call is persisted on the thread like a
top-level one (with ``parent_call_id``). A call still in flight when the program ends is
cancelled and recorded as such; the rest of the model's batch goes on.

A call to a tool that ``requires_approval`` pauses the program (``bridge.Pause``): the runtime
stores the sealed continuation, encrypted, and resumes it exactly once the call is decided
(see :mod:`quickjail.runtime._approvals`). The answer carries the program's call log
(``calls``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

import anyio
from pydantic import BaseModel, Field

from quickjail import bridge, sandbox

from ._answer import answer_schema, run_code_answer
from ._approvals_data import Parked, approval_context
from ._calls import ParsedCall
from ._codemode_calls import AsyncToolFn, tool_function
from ._codemode_catalog import MAX_DESCRIPTION, Catalog
from ._define import define_tool, unique_tools
from ._result import ToolResult
from ._snippets import MAX_DEPTH, SaveSnippetArgs, load_snippet, save_snippet
from ._state import ThreadState
from ._thread import persist
from ._tool import Tool, schema_tool
from ._typescript_decl import is_export_name
from .connectors import Connector
from .connectors._base import RESERVED_NAMESPACES
from .errors import ToolDefinitionError

__all__ = ["code_mode_tool", "discovery_tools"]

_MODULE: Final = "tools"
#: The run_code options a resumed program keeps (the rest are the paused run's own).
_RESUME_OPTIONS: Final = ("files", "report", "timeout", "memory_limit_bytes")
_INTRO: Final = (
    "Run TypeScript in a fresh, isolated sandbox (ECMAScript only: no network, files or "
    "require) that calls tools as async functions. A tool function resolves to the tool's "
    "value and rejects with an Error carrying the tool's message (catch it to handle a "
    "failure); pass { raw: true } as a second argument for the whole result {status, "
    "result, error, attachments}. Run independent calls concurrently with Promise.all. "
    "Write statements ending in `return value` (top-level await works), an async arrow "
    "function, or a module that does `export default` the value. The answer is a JSON "
    "object {status, result, error, reason, reports, logs}."
)
_DISCOVERY: Final = (
    "To find a tool: `await search(query)` gives [{name, description}] ranked by name and "
    "description; `await describe(name)` gives its full TypeScript declaration (a name such "
    "as `github.create_issue`, or a namespace such as `github` for all of its tools)."
)


class RunCodeArgs(BaseModel):
    # no docstring: pydantic would put it in the schema the model reads
    code: str = Field(
        description=(
            "TypeScript: statements (top-level await; `return` the result), an async arrow "
            "function, or an ES module with `export default`, e.g. "
            "`const sum = await tools.add({a: 1, b: 2}); return sum;`"
        )
    )


class SearchArgs(BaseModel):
    # no docstring: pydantic would put it in the schema the model reads
    query: str = Field(description="Words to look for in tool names and descriptions")
    limit: int = Field(default=10, ge=1, le=50, description="How many results at most")


class DescribeArgs(BaseModel):
    # no docstring: pydantic would put it in the schema the model reads
    name: str = Field(
        description="A tool (`github.create_issue`, `tools.add`) or a namespace (`github`)"
    )


def code_mode_tool(
    tools: Iterable[Tool | Connector],
    *,
    name: str = "run_code",
    description: str | None = None,
    namespace: str | None = None,
    snippets: bool = True,
    **run_code_options: Any,
) -> Tool:
    """Build a tool that runs model-written code able to call ``tools``.

    Args:
        tools: Local tools (unique names), and connectors
            (:mod:`quickjail.runtime.connectors`), each a namespace of its own.
        name: The code-mode tool's name.
        description: Replaces the default introduction; the namespaces, how to discover
            tools, and (when they fit) the local tools' declarations are always appended.
            The whole stays within 4,096 characters.
        namespace: A second global name for the ``tools`` object (e.g. ``"codemode"``, the
            Cloudflare convention); ``tools`` is always defined.
        snippets: Whether programs can call the thread's saved snippets
            (``snippets.name(args)``).
        **run_code_options: Passed to ``state.run_code`` for every run (``timeout``,
            ``memory_limit_bytes``, ``files=True``, extra ``imports`` or ``globals``, ...).
            ``kind`` defaults to ``"auto"``: every code shape a model writes runs.

    Returns:
        The tool; its description carries what the model needs to start.

    Raises:
        ToolDefinitionError: Duplicate or provider-executed tools, two connectors with one
            name, ``imports`` already defining ``"tools"``, ``globals`` already defining a
            name code mode defines, a ``namespace`` that is not an identifier, or a
            description longer than 4,096 characters.
    """
    given = list(tools)
    connectors = [t for t in given if isinstance(t, Connector)]
    index = unique_tools(
        [t for t in given if not isinstance(t, Connector)], "code_mode_tool(tools=...)"
    )
    provider = [t.name for t in index.values() if t.execution_mode != "local"]
    if provider:
        raise ToolDefinitionError(f"code_mode_tool: provider-executed tools {provider} cannot run")
    spaces = [c.name for c in connectors]
    if len(set(spaces)) != len(spaces):
        raise ToolDefinitionError(f"code_mode_tool: two connectors share a name in {spaces}")
    extra_imports = dict(run_code_options.pop("imports", None) or {})
    if _MODULE in extra_imports:
        raise ToolDefinitionError('code_mode_tool: imports must not define the "tools" module')
    names = ["tools"]
    if namespace is not None:
        if not isinstance(namespace, str) or not is_export_name(namespace):
            raise ToolDefinitionError(
                f"code_mode_tool: namespace must be an identifier, not {namespace!r}"
            )
        if namespace in RESERVED_NAMESPACES - {"tools"} or namespace in spaces:
            raise ToolDefinitionError(f"code_mode_tool: namespace {namespace!r} is taken")
        if namespace != "tools":
            names.append(namespace)
    extra_globals = dict(run_code_options.pop("globals", None) or {})
    defined = {*names, *spaces, "search", "describe", *(["snippets"] if snippets else [])}
    taken = sorted(defined & set(extra_globals))
    if taken:
        raise ToolDefinitionError(f"code_mode_tool: globals must not define {taken}")
    run_code_options.setdefault("kind", "auto")
    catalog = Catalog(index, connectors, names, snippets)
    text = _description(catalog, description)
    missing = _missing_tool(sorted(index))

    def host(state: ThreadState, depth: int = 0) -> dict[str, Any]:
        """The run's imports and globals: the tools as async functions bound to ``state``
        (the same names in the same order for a run and its resumes)."""
        functions = {tool_name: tool_function(state, tool) for tool_name, tool in index.items()}
        module: dict[str, Any] = {"tools": functions}
        for tool_name, fn in functions.items():
            if is_export_name(tool_name) and tool_name != "tools":
                module[tool_name] = fn
        # the globals: the same functions, and a fallback for a name that is no tool
        found: dict[str, Any] = {
            n: {**functions, sandbox.host.NAMESPACE_FALLBACK: missing} for n in names
        }
        for connector in connectors:
            found[connector.name] = {sandbox.host.NAMESPACE_FALLBACK: _dispatch(state, connector)}
        if snippets:
            runner = functools.partial(_run_snippet, state, depth, host, run_code_options)
            found["snippets"] = {sandbox.host.NAMESPACE_FALLBACK: runner}
        found["search"] = functools.partial(_search, catalog, state)
        found["describe"] = functools.partial(_describe, catalog, state)
        return {
            "imports": {**extra_imports, _MODULE: module},
            "globals": {**extra_globals, **found},
        }

    async def execute(state: ThreadState, args: dict[str, Any]) -> ToolResult:
        if state is not None and state.call_id is not None:
            # the program's calls to tools needing approval collect here (see _approvals)
            state._core.parked.setdefault(state.call_id, Parked("code", name))
        options = {**run_code_options, **host(state)}
        # run_code erases TypeScript before it returns (for a large source, a helper process's
        # parse up to the run's timeout): wait for it on a worker thread, not the event loop.
        execution = await anyio.to_thread.run_sync(
            functools.partial(state.run_code, args["code"], **options)
        )
        return await _finish(state, await execution)

    async def resume(
        state: ThreadState, sealed: bytes, context: bytes, answers: dict[int, Any]
    ) -> ToolResult:
        box = state._core.box
        assert box is not None  # a program pauses at an approval only with a key
        options = {k: run_code_options[k] for k in _RESUME_OPTIONS if k in run_code_options}
        run = state._resume_code(
            sealed, key=box.seal_key, context=context, answers=answers, **options, **host(state)
        )
        return await _finish(state, await run)

    checked = define_tool(description=text, args=RunCodeArgs, execute=execute, name=name)
    # its answer is any JSON value, which no argument model can declare: published as schemas
    tool = schema_tool(
        name=checked.name,
        description=text,
        execute=execute,
        schemas=(checked.input_schema, answer_schema()),
        reaches=tuple(index.values()),
    )
    tool._resumer = Resumer(index, resume, catalog)
    return tool


def discovery_tools(code_tool: Tool) -> list[Tool]:
    """The ``search``, ``describe`` and ``save_snippet`` tools of a code-mode tool.

    The same discovery a program has, as tools for the model itself (what ``quickjail mcp``
    serves beside ``run_code``); ``save_snippet`` stores a program on the thread, callable
    later as ``snippets.name(args)``.

    Raises:
        ToolDefinitionError: ``code_tool`` is not a code-mode tool.
    """
    parts = code_tool._resumer
    if not isinstance(parts, Resumer):
        raise ToolDefinitionError(f"{code_tool!r} is not a code-mode tool")
    catalog = parts.catalog

    async def search(state: ThreadState, args: SearchArgs) -> ToolResult:
        return ToolResult.success(await catalog.search(state, args.query, args.limit))

    async def describe(state: ThreadState, args: DescribeArgs) -> ToolResult:
        try:
            return ToolResult.success(await catalog.describe(state, args.name))
        except LookupError as exc:
            return ToolResult.failure(str(exc))

    async def save(state: ThreadState, args: SaveSnippetArgs) -> ToolResult:
        if state is None:
            return ToolResult.failure("snippets are saved on a thread; this call has none")
        return await save_snippet(state, args.name, args.description, args.code)

    return [
        define_tool(
            name="search",
            description="Find tools the code of run_code can call: [{name, description}], "
            "ranked by name and description.",
            args=SearchArgs,
            execute=search,
        ),
        define_tool(
            name="describe",
            description="The TypeScript declaration of a tool run_code can call (or of every "
            "tool of a namespace).",
            args=DescribeArgs,
            execute=describe,
        ),
        define_tool(
            name="save_snippet",
            description="Save a program that worked, by name, so later programs call it as "
            "`await snippets.<name>(args)` (it reads its input from the global `args`).",
            args=SaveSnippetArgs,
            execute=save,
        ),
    ]


class Resumer:
    """What the runtime needs of a code-mode tool: the tools its program calls,
    ``resume(state, sealed, context, answers)`` for a program paused at an approval, and its
    catalog (connectors to close, discovery)."""

    __slots__ = ("catalog", "resume", "tools")

    def __init__(
        self,
        tools: dict[str, Tool],
        resume: Callable[..., Coroutine[Any, Any, ToolResult]],
        catalog: Catalog,
    ) -> None:
        self.tools = tools
        self.resume = resume
        self.catalog = catalog


def _description(catalog: Catalog, intro: str | None) -> str:
    """The code-mode tool's description: the introduction, the namespaces, discovery, and the
    local tools' declarations when all of it fits in :data:`MAX_DESCRIPTION`."""
    head = f"{intro or _INTRO}\n\nNamespaces:\n" + "\n".join(catalog.namespaces())
    head += f"\n\n{_DISCOVERY}"
    if catalog.local:
        full = f"{head}\n\n```ts\n{catalog.local_declaration(_MODULE)}\n```"
        if len(full) <= MAX_DESCRIPTION:
            return full
    if len(head) > MAX_DESCRIPTION:
        raise ToolDefinitionError(
            f"code_mode_tool: the description is {len(head)} characters (at most "
            f"{MAX_DESCRIPTION}): shorten it or the connectors' descriptions"
        )
    return head


def _dispatch(state: ThreadState, connector: Connector) -> AsyncToolFn:
    """The fallback of a connector's namespace: ``github.create_issue(args)`` finds the tool
    (connecting on first use) and calls it as a local tool is called."""
    bound: dict[str, AsyncToolFn] = {}
    listed: list[Any] = [None, {}]  # the listing last seen, and its tools by name

    async def call_connector(tool_name: Any, args: Any = None, options: Any = None) -> Any:
        try:
            found = await connector.tools()
        except Exception as exc:
            raise bridge.HostError(f"{connector.name}: {exc}") from None
        if listed[0] is not found:
            listed[:] = [found, {t.name: t for t in found}]
        tools: dict[str, Tool] = listed[1]
        tool = tools.get(tool_name) if isinstance(tool_name, str) else None
        if tool is None:
            shown = ", ".join(sorted(tools)[:20]) + (", ..." if len(tools) > 20 else "")
            raise bridge.HostError(
                f"{connector.name} has no tool named {str(tool_name)[:100]!r}; its tools: "
                f"{shown or '(none)'} (search(query) finds tools)"
            )
        fn = bound.get(tool.name)
        if fn is None:
            fn = bound[tool.name] = tool_function(state, tool, f"{connector.name}.{tool.name}")
        return await fn(args, options)

    return call_connector


async def _search(
    catalog: Catalog, state: ThreadState, query: Any = None, limit: Any = None
) -> Any:
    try:
        return await catalog.search(state, query, limit)
    except TypeError as exc:
        raise bridge.ArgumentError(str(exc)) from None


async def _describe(catalog: Catalog, state: ThreadState, name: Any = None) -> str:
    try:
        return await catalog.describe(state, name)
    except TypeError as exc:
        raise bridge.ArgumentError(str(exc)) from None
    except LookupError as exc:
        raise bridge.HostError(str(exc)) from None


async def _run_snippet(
    state: ThreadState,
    depth: int,
    host: Callable[..., dict[str, Any]],
    options: dict[str, Any],
    snippet_name: Any,
    args: Any = None,
) -> Any:
    """``snippets.name(args)``: the snippet's code in a fresh sandbox with the same tools and
    options, ``args`` as a global; resolves to its value, rejects with its error."""
    if state is None:
        raise bridge.HostError("snippets live on a thread; this program runs without one")
    if depth >= MAX_DEPTH:
        raise bridge.HostError(f"snippets nest at most {MAX_DEPTH} deep")
    snippet = (
        await load_snippet(state, str(snippet_name)) if isinstance(snippet_name, str) else None
    )
    if snippet is None:
        raise bridge.HostError(
            f"there is no snippet named {str(snippet_name)[:100]!r} (search(query) lists them)"
        )
    wiring = host(state, depth + 1)
    wiring["globals"]["args"] = None if args is sandbox.UNDEFINED else args
    run = functools.partial(state.run_code, snippet.code, **{**options, **wiring})
    execution = await anyio.to_thread.run_sync(run)
    result = await execution
    if result.status == "success":
        return result.result
    raise bridge.HostError(f"snippet {snippet.name} failed: {_failure(result)}")


async def _finish(state: ThreadState, result: sandbox.CodeResult) -> ToolResult:
    """The code-mode call's result; a program paused at approvals leaves its sealed
    continuation with the call's :class:`Parked` (the runtime then stores it)."""
    core = state._core
    parked = core.parked.get(state.call_id) if state.call_id is not None else None
    if parked is None:
        return _code_result(result)
    if not parked.approvals:
        return _code_result(result, parked.calls)
    by_id = {a.id: a for a in parked.approvals}
    mapped = []
    box, continuation = core.box, result.continuation
    if result.status == "paused" and continuation is not None and box is not None:
        for paused in result.paused:
            info = paused.info if isinstance(paused.info, dict) else {}
            found = by_id.get(str(info.get("approval_id")))
            if found is None:
                break
            mapped.append(dataclasses.replace(found, run_call=paused.call_id))
            if info.get("raw") is True:
                parked.raw.append(found.id)
    if (
        box is not None
        and continuation is not None
        and len(mapped) == len(result.paused) == len(by_id)
    ):
        parked.approvals = mapped
        context = approval_context(core, "continuation", parked.pause_id)
        parked.continuation = continuation.seal(box.seal_key, context)
        return _code_result(result)
    # the program ended without waiting for them: those calls never run
    for approval in parked.approvals:
        call = ParsedCall(approval.call_id, approval.tool_name, None)
        failed = ToolResult.failure("not run: the program ended before it was approved")
        await persist(core, failed, call, approval.parent_call_id)
    parked.approvals.clear()
    return _code_result(result, parked.calls)


def _missing_tool(available: list[str]) -> Callable[[Any], Coroutine[Any, Any, None]]:
    """The fallback of the tools globals: a call of a name that is no tool rejects, naming it
    and the tools there are (the model can correct itself from the message)."""
    listed = ", ".join(available) or "(none)"

    async def missing_tool(name: Any) -> None:
        raise bridge.HostError(f"there is no tool named {str(name)!r}; the tools are: {listed}")

    return missing_tool


def _code_result(
    result: sandbox.CodeResult, calls: list[dict[str, Any]] | None = None
) -> ToolResult:
    """A ``sandbox.CodeResult`` as the code-mode tool's result: its value is the run's answer
    (:class:`RunCodeAnswer`, the plain ``run_code`` tool's shape) whatever the outcome, with
    the program's call log (``calls``) when it ran as a thread's call."""
    answer = run_code_answer(result)
    if calls is not None:
        answer["calls"] = calls
    if result.status == "success":
        return ToolResult.success(answer)
    error = result.error
    stack = error.stack if error is not None and error.stack else None
    return ToolResult.failure(_failure(result), result=answer, stack=stack)


def _failure(result: sandbox.CodeResult) -> str:
    """What went wrong, in words that follow the ``Error: `` a model reads before a failure."""
    error = result.error
    if result.status == "terminated":
        return f"the program was stopped ({result.reason or 'terminated'})"
    if result.status == "paused":
        # a host function of the caller's raised Pause: code mode resumes only approvals
        names = ", ".join(p.function for p in result.paused)
        return f"the program paused waiting for {names}, which code mode cannot resume"
    if error is None:
        return f"the run ended with status {result.status}"
    where = f" at line {error.line}, column {error.column}" if error.line else ""
    if result.status == "error":
        return f"uncaught {error.name}: {error.message}{where}"
    return f"{result.status.replace('_', ' ')}: {error.name}: {error.message}{where}"
