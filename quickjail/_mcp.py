"""``quickjail mcp``: a Model Context Protocol server over stdio.

By default it exposes ``run_code``; with ``--tools MODULE`` it serves the runtime tools a module
defines instead (see :func:`build_tools_server`). Built on the low-level server of the official
``mcp`` SDK (2.x): the ``run_code`` input schema is written out here, arguments are checked here,
and every call runs in a fresh sandbox with the server's limits. A program's failure is a tool
result with ``isError`` set (so the model can read it and retry), never a protocol error; only
an unknown tool name is one. Results are cut to ``--max-result-chars`` and no message is larger
than a client takes (:mod:`quickjail._mcp_results`); while serving, ``sys.stdout`` is the
standard error, so a tool's ``print()`` never reaches the protocol stream.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from quickjail import bridge
from quickjail._cli._parser import quickjail_version
from quickjail._mcp_results import DEFAULT_MAX_RESULT_CHARS, answer_result, fit_message
from quickjail._mcp_sources import SourceSpec, build_connectors, code_mode_over, secret_env
from quickjail.integrations._runner import NO_FETCH, STANDARD_LIBRARY
from quickjail.runtime.helpers import answer_schema, invalid_answer, run_code_answer
from quickjail.sandbox.host import Executor

if TYPE_CHECKING:
    from quickjail.runtime import Runtime, Thread, Tool, ToolResult

__all__ = [
    "APPROVE_TOOL",
    "REJECT_TOOL",
    "SECRET_KEY_ENV",
    "TOOL_NAME",
    "ServerOptions",
    "ToolsDatabaseError",
    "build_server",
    "build_tools_server",
    "input_schema",
    "load_tools",
    "output_schema",
    "serve",
]

SECRET_KEY_ENV: Final = "QUICKJAIL_SECRET_KEY"

TOOL_NAME: Final = "run_code"
_LANGUAGES: Final = ("typescript", "javascript")
_KINDS: Final = ("auto", "module", "script")
_ARGUMENTS: Final = frozenset({"code", "kind", "language", "execute_fn", "args", "timeout"})


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """How the server runs every call.

    Attributes:
        allow_read: Directory programs may read through ``import ... from "fs"``, or None.
        timeout: Seconds a call may run when it does not choose a timeout.
        max_timeout: Largest timeout a call may ask for; larger requests are lowered to it.
        memory_limit_bytes: Memory limit of every call.
        tools_module: Serve this module's runtime tools (a dotted name or a ``.py`` file)
            instead of ``run_code``.
        tools_db: The runtime database of ``tools_module`` (one thread per MCP session).
        kind: How a call's code is read when it does not choose (``run_code``'s ``kind``):
            ``"auto"`` runs any of the code shapes models write.
        max_result_chars: A result's JSON text is cut past this many characters, with a note
            where the cut is (see :mod:`quickjail._mcp_results`).
        sources: MCP servers and OpenAPI services ``run_code`` reaches as namespaces
            (``--connect``, ``--openapi``; see :mod:`quickjail._mcp_sources`).
    """

    allow_read: Path | None = None
    timeout: float = 10.0
    max_timeout: float = 60.0
    memory_limit_bytes: int = 64 * 2**20
    tools_module: str | None = None
    tools_db: Path | None = None
    kind: str = "auto"
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    sources: tuple[SourceSpec, ...] = ()


class ToolsDatabaseError(Exception):
    """The ``--tools`` database cannot be opened; the message names it and what to do."""


def input_schema(default_kind: str = "auto") -> dict[str, Any]:
    """The JSON Schema of the ``run_code`` tool's arguments."""
    return {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The program: statements (top-level await works; `return` the "
                "result), an async arrow function (called), or an ES module whose default "
                "export is the result (a function export is called with `args`). One "
                "surrounding Markdown code fence is ignored.",
            },
            "kind": {
                "type": "string",
                "enum": list(_KINDS),
                "default": default_kind,
                "description": '"auto" accepts every shape above; "module" only an ES module, '
                '"script" only a classic script (its completion value is the result).',
            },
            "language": {
                "type": "string",
                "enum": list(_LANGUAGES),
                "default": "typescript",
                "description": "Source language; TypeScript types are stripped before running.",
            },
            "execute_fn": {
                "type": "string",
                "minLength": 1,
                "default": "default",
                "description": "Name of the export to run instead of the default export.",
            },
            "args": {
                "type": "array",
                "items": {},
                "description": "JSON arguments for the exported function, in order.",
            },
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Seconds the run may take (capped by the server).",
            },
        },
        "required": ["code"],
        "additionalProperties": False,
    }


def output_schema() -> dict[str, Any]:
    """The JSON Schema of the ``run_code`` tool's answer (its ``structuredContent``):
    :func:`quickjail.runtime.helpers.answer_schema`, the answer of every ``run_code``."""
    return answer_schema()


def _description(options: ServerOptions) -> str:
    fs = (
        'Files are readable with `import { readFile, readdir, stat } from "fs"` '
        '(`await readFile("dir/name.txt", "utf8")`; paths are relative, without "..").'
        if options.allow_read is not None
        else "There is no file, network or clock access beyond `Date`."
    )
    return (
        "Run JavaScript or TypeScript in a fresh, isolated QuickJS sandbox and return its "
        "result. `code` may be statements ending in `return <value>` (top-level await "
        "works), an async arrow function, or an ES module: `export default <value>` or "
        "`export default async function (...args) { ... }` (or name another export with "
        f"`execute_fn`). {STANDARD_LIBRARY} {NO_FETCH} "
        f"{fs} `console.log(...)` output and `report(value)` calls are "
        "returned with the result. "
        f"Each call has {options.memory_limit_bytes // 2**20} MiB of memory and a "
        f"{options.timeout:g} s timeout by default (at most {options.max_timeout:g} s). "
        "The answer is a JSON object {status, result, error, reason, reports, logs}; status "
        'is "success", "error", "link_error" (bad import), "memory", "terminated" '
        '(reason "timeout") or "invalid_arguments" (the call itself was malformed).'
    )


class _BadArguments(ValueError):
    """The tool's arguments do not fit its schema; the message says which and how."""


@dataclass(frozen=True, slots=True)
class _Call:
    code: str
    kind: str
    language: str
    execute: dict[str, Any] | None
    timeout: float


def _parse_call(arguments: Mapping[str, Any] | None, options: ServerOptions) -> _Call:
    args = dict(arguments or {})
    unknown = sorted(set(args) - _ARGUMENTS)
    if unknown:
        raise _BadArguments(
            f"unknown argument(s) {', '.join(unknown)}; the arguments are "
            f"{', '.join(sorted(_ARGUMENTS))}"
        )
    code = args.get("code")
    if not isinstance(code, str):
        raise _BadArguments("`code` is required and must be a string of JS/TS source")
    kind = args.get("kind", options.kind)
    if kind not in _KINDS:
        raise _BadArguments(f"`kind` must be one of {', '.join(_KINDS)}")
    language = args.get("language", "typescript")
    if language not in _LANGUAGES:
        raise _BadArguments(f"`language` must be one of {', '.join(_LANGUAGES)}")
    fn = args.get("execute_fn")
    if fn is not None and (not isinstance(fn, str) or not fn):
        raise _BadArguments("`execute_fn` must be the name of an export")
    call_args = args.get("args")
    if call_args is not None and not isinstance(call_args, list):
        raise _BadArguments("`args` must be an array")
    timeout = args.get("timeout", options.timeout)
    if (
        not isinstance(timeout, int | float)
        or isinstance(timeout, bool)
        or not (timeout > 0 and math.isfinite(timeout))
    ):
        raise _BadArguments("`timeout` must be a positive number of seconds")
    execute: dict[str, Any] | None = None
    if fn is not None or call_args is not None:
        execute = {}
        if fn is not None:
            execute["fn"] = fn
        if call_args is not None:
            execute["args"] = call_args
    if kind == "script" and execute is not None:
        raise _BadArguments('a `kind: "script"` has no exports: drop `execute_fn` and `args`')
    timeout = min(float(timeout), options.max_timeout)
    return _Call(code, str(kind), str(language), execute, timeout)


class _RunCodeTool:
    """The request handlers; holds the server's options and its read-only directory."""

    def __init__(
        self, options: ServerOptions, fs: bridge.ReadOnlyDir | None, executor: Executor | None
    ) -> None:
        self._options = options
        self._fs = fs
        self._executor = executor
        self._tool = types.Tool(
            name=TOOL_NAME,
            title="Run code in a sandbox",
            description=_description(options),
            input_schema=input_schema(options.kind),
            output_schema=output_schema(),
            annotations=types.ToolAnnotations(
                read_only_hint=True,
                destructive_hint=False,
                idempotent_hint=True,
                open_world_hint=False,
            ),
        )

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[self._tool])

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != TOOL_NAME:
            raise MCPError(
                types.INVALID_PARAMS,
                f"unknown tool {params.name!r}; this server has only {TOOL_NAME!r}",
            )
        try:
            call = _parse_call(params.arguments, self._options)
            run_options: dict[str, Any] = {
                "kind": call.kind,
                "language": call.language,
                "timeout": call.timeout,
                "memory_limit_bytes": self._options.memory_limit_bytes,
                "filename": "main.ts" if call.language == "typescript" else "main.js",
                "executor": self._executor,
            }
            if call.execute is not None:
                run_options["execute"] = call.execute
            if self._fs is not None:
                run_options["imports"] = {"fs": self._fs}
            # run_code erases TypeScript before it returns, in a helper process for a large
            # source (up to the call's timeout): wait for it on a worker thread, not the loop.
            execution = await anyio.to_thread.run_sync(
                functools.partial(bridge.run_code, call.code, **run_options)
            )
        except (TypeError, ValueError) as exc:  # includes _BadArguments and TransferError
            answer = invalid_answer(type(exc).__name__.lstrip("_"), str(exc))
            return answer_result(dict(answer), True, self._options.max_result_chars)
        result = await execution
        return answer_result(
            dict(run_code_answer(result)),
            result.status != "success",
            self._options.max_result_chars,
        )


def build_server(
    options: ServerOptions,
    fs: bridge.ReadOnlyDir | None = None,
    executor: Executor | None = None,
) -> Server[Any]:
    """Build the MCP server (not started).

    Args:
        options: Limits and capabilities of every call.
        fs: The directory bridged as ``"fs"``; required when ``options.allow_read`` is set.
        executor: Where every call's code runs (``run_code``'s ``executor``, e.g. a
            :class:`quickjail.executors.ProcessPool`); None: in this process.

    Returns:
        A low-level :class:`mcp.server.Server` with ``tools/list`` and ``tools/call``.
    """
    if options.allow_read is not None and fs is None:
        raise ValueError("options.allow_read is set: pass the ReadOnlyDir as fs")
    tool = _RunCodeTool(options, fs, executor)
    return Server(
        "quickjail",
        version=quickjail_version(),
        instructions="Use run_code to compute with JavaScript/TypeScript in a sandbox.",
        on_list_tools=tool.list_tools,
        on_call_tool=tool.call_tool,
    )


def load_tools(
    module: str | None, options: ServerOptions, executor: Executor | None = None
) -> list[Tool]:
    """The local tools ``module`` defines, then the code-mode tool ``run_code`` over them
    (and over ``options.sources``), then ``search``, ``describe`` and ``save_snippet``.

    Args:
        module: A dotted module name, or the path of a ``.py`` file; None for sources only.
        options: ``timeout`` and ``memory_limit_bytes`` apply to the code-mode tool's runs.
        executor: Where the code-mode tool's runs execute (None: in this process).

    Raises:
        ValueError: The module defines no local tool, one named ``run_code``, or one MCP
            cannot describe (``ProviderFormatError``).
    """
    import contextlib
    import importlib
    import importlib.util
    import sys

    from quickjail.runtime import Tool

    if module is None:
        sources = build_connectors(options.sources)
        return code_mode_over([], sources, **_code_options(options, executor))
    # stdout is the MCP stream: what the module prints while it loads goes to stderr instead
    with contextlib.redirect_stdout(sys.stderr):
        if module.endswith(".py") or os.sep in module or "/" in module:
            path = Path(module)
            name = f"_quickjail_mcp_tools_{path.stem}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ValueError(f"cannot load {module!r} as a Python file")
            loaded = importlib.util.module_from_spec(spec)
            sys.modules[name] = loaded
            spec.loader.exec_module(loaded)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())  # as `python -m` does, for the console script
            loaded = importlib.import_module(module)
    found: list[Tool] = []
    for value in vars(loaded).values():
        if isinstance(value, Tool) and value.execution_mode == "local" and value not in found:
            found.append(value)
    if not found:
        raise ValueError(f"module {module!r} defines no local tool (define_tool(...) values)")
    for tool in found:
        tool.to_mcp()  # a name or description MCP cannot carry is refused here, naming it
    taken = sorted({t.name for t in found} & {TOOL_NAME, "search", "describe", "save_snippet"})
    if taken:
        raise ValueError(
            f"module {module!r} defines tools named {taken}: the code-mode tool and its "
            "discovery tools have those names"
        )
    sources = build_connectors(options.sources)
    return [*found, *code_mode_over(found, sources, **_code_options(options, executor))]


def _code_options(options: ServerOptions, executor: Executor | None) -> dict[str, Any]:
    return {
        "timeout": options.timeout,
        "memory_limit_bytes": options.memory_limit_bytes,
        "executor": executor,
    }


class _RuntimeTools:
    """The request handlers of a tools server: one persisted thread per MCP session.

    The thread lives in the server's lifespan state, which the SDK creates for every run of
    the server, and one stdio run is one MCP session.
    """

    def __init__(self, rt: Runtime, max_result_chars: int) -> None:
        self._rt = rt
        self._max_result_chars = max_result_chars
        self._tools = {tool.name: tool for tool in rt.tools}
        self._listed = [types.Tool.model_validate(tool.to_mcp()) for tool in rt.tools]
        self._structured = {t.name for t in self._listed if t.output_schema is not None}
        answer = output_schema()
        self._answers = {t.name for t in rt.tools if t.output_schema == answer}
        self._decisions = _needs_approval(rt.tools)
        if self._decisions:
            self._listed += [_APPROVE_TOOL, _REJECT_TOOL]

    @contextlib.asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        yield {"thread": None, "lock": anyio.Lock()}

    async def _thread(self, session_state: dict[str, Any]) -> Thread:
        async with session_state["lock"]:
            if session_state["thread"] is None:
                session_state["thread"] = await self._rt.thread(f"mcp-{uuid.uuid4().hex}")
            thread: Thread = session_state["thread"]
            return thread

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._listed)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:

        if self._decisions and params.name in (APPROVE_TOOL, REJECT_TOOL):
            return await self._decide_by_tool(ctx, params)
        if params.name not in self._tools:
            shown = ", ".join(sorted(self._tools))
            raise MCPError(
                types.INVALID_PARAMS, f"unknown tool {params.name!r}; this server has {shown}"
            )
        thread = await self._thread(ctx.lifespan_context)
        call = {
            "id": f"mcp_{uuid.uuid4().hex[:24]}",
            "name": params.name,
            "arguments": params.arguments or {},
        }
        (result,) = await thread.execute_tool_calls([call])
        if result.status == "waiting":
            result = await _elicit(ctx, thread, result)
        ran = result.status != "waiting"  # a waiting call has no value to structure
        return fit_message(
            await _rendered([result], thread),
            max_result_chars=self._max_result_chars,
            structured=ran and params.name in self._structured,
            answer=ran and params.name in self._answers,
        )

    async def _decide_by_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """The approve / reject tools: for a client that cannot elicit."""
        from quickjail.runtime import ToolRuntimeError

        thread = await self._thread(ctx.lifespan_context)
        args = params.arguments or {}
        approval_id, reason = args.get("approval_id"), args.get("reason", "")
        if not isinstance(approval_id, str) or not isinstance(reason, str):
            return _error_result("approval_id (and reason) must be strings")
        try:
            if params.name == APPROVE_TOOL:
                results = await thread.approve(approval_id, decided_by="mcp: approve tool")
            else:
                results = await thread.reject(approval_id, reason, decided_by="mcp: reject tool")
        except (ToolRuntimeError, TypeError) as exc:
            return _error_result(f"{type(exc).__name__}: {exc}")
        return fit_message(
            await _rendered(results, thread),
            max_result_chars=self._max_result_chars,
            structured=False,
            answer=False,
        )


APPROVE_TOOL: Final = "approve_pending_call"
REJECT_TOOL: Final = "reject_pending_call"
_ID_SCHEMA: Final = {"type": "string", "description": "The approval id the waiting call named."}
_APPROVE_TOOL: Final = types.Tool(
    name=APPROVE_TOOL,
    description="Approve a tool call that waits for approval (for the user, not the model): "
    "the call runs and what waited behind it goes on. Returns the results.",
    input_schema={
        "type": "object",
        "properties": {"approval_id": _ID_SCHEMA},
        "required": ["approval_id"],
        "additionalProperties": False,
    },
)
_REJECT_TOOL: Final = types.Tool(
    name=REJECT_TOOL,
    description="Reject a tool call that waits for approval (for the user, not the model): "
    "its result is an error 'rejected: reason' and what waited behind it goes on.",
    input_schema={
        "type": "object",
        "properties": {"approval_id": _ID_SCHEMA, "reason": {"type": "string"}},
        "required": ["approval_id"],
        "additionalProperties": False,
    },
)
_ELICIT_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "Optional: why (the model reads it when you decline).",
        }
    },
}


def _needs_approval(tools: tuple[Tool, ...]) -> bool:
    """Whether a call of these tools (or of a code-mode tool's tools) can wait for approval."""
    for tool in tools:
        resumer = getattr(tool, "_resumer", None)
        inner = tuple(resumer.tools.values()) if resumer is not None else ()
        if any(t.requires_approval is not False for t in (tool, *inner)):
            return True
    return False


async def _elicit(ctx: ServerRequestContext[Any], thread: Thread, result: ToolResult) -> ToolResult:
    """Ask the client's user about each approval a waiting call names (``elicitation/create``)
    and decide it: accept approves, decline rejects, cancel leaves it waiting. A client that
    declares no elicitation gets the waiting result (and the approve / reject tools)."""
    from quickjail.runtime import ToolResult, ToolRuntimeError

    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return result
    while result.status == "waiting":
        pending = {p.approval_id: p for p in await thread.pending_approvals()}
        decided = False
        for approval_id in result.result["approval_ids"]:
            waiting = pending.get(approval_id)
            if waiting is None:
                continue
            shown = json.dumps(waiting.arguments, ensure_ascii=False)[:2000]
            message = f"Allow the call of tool {waiting.tool_name!r} with arguments {shown}?"
            try:
                answer = await ctx.session.elicit_form(
                    message, _ELICIT_SCHEMA, related_request_id=ctx.request_id
                )
            except Exception:  # the client failed to ask: the call keeps waiting
                return result
            if answer.action == "cancel":
                return result
            by = "mcp: elicitation"
            try:
                if answer.action == "accept":
                    results = await thread.approve(approval_id, decided_by=by)
                else:
                    given = (answer.content or {}).get("reason")
                    reason = given if isinstance(given, str) else ""
                    results = await thread.reject(approval_id, reason or "declined", decided_by=by)
            except ToolRuntimeError as exc:  # decided elsewhere meanwhile, or a refused blob
                return ToolResult.failure(f"{type(exc).__name__}: {exc}")
            result, decided = results[0], True
        if not decided:
            return result
    return result


def _error_result(message: str) -> types.CallToolResult:
    """A refused approve / reject call, as the model reads it."""
    text = json.dumps({"error": message}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


async def _rendered(results: list[ToolResult], thread: Thread) -> dict[str, Any]:
    """Results as one MCP tool result's dict: each one's content in order, an error if any is
    (the caller cuts it to fit, :func:`quickjail._mcp_results.fit_message`)."""
    from quickjail.runtime.helpers import render_content

    blocks: list[dict[str, Any]] = []
    for result in results:
        if result.status == "waiting":  # not run (yet): no structured result to give
            ids = result.result["approval_ids"]
            text = json.dumps(
                {
                    "approval_ids": ids,
                    "message": f"{result.result['message']}: the call has not run; the user "
                    f"decides with {APPROVE_TOOL} or {REJECT_TOOL}",
                }
            )
            blocks.append({"content": [{"type": "text", "text": text}], "isError": True})
        else:
            blocks += await render_content([result], "mcp", thread.state)
    if len(blocks) == 1:
        return blocks[0]
    content = [item for block in blocks for item in block["content"]]
    return {"content": content, "isError": any(b.get("isError") for b in blocks)}


def build_tools_server(
    rt: Runtime, max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
) -> Server[Any]:
    """Build the MCP server of an open runtime's tools (not started).

    Every MCP session (every run of the server over stdio) gets its own thread (``mcp-<hex>``)
    in the runtime's database; calls run as ``Thread.execute_tool_calls`` runs them: strictly
    validated, secrets redacted, and a failure is a result with ``isError`` set. Image
    attachments come back as MCP images. ``structuredContent`` is sent for a tool that
    declares an output schema (with its JSON as text, as MCP asks), the text alone for the
    others; a result is cut to ``max_result_chars`` characters (see
    :mod:`quickjail._mcp_results`).
    """
    handlers = _RuntimeTools(rt, max_result_chars)
    return Server(
        "quickjail-tools",
        version=quickjail_version(),
        instructions="Call the tools directly, or compose them in code with run_code.",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        lifespan=handlers.lifespan,
    )


async def _serve_tools(options: ServerOptions, tools: list[Tool]) -> None:
    from quickjail.runtime import Runtime
    from quickjail.runtime.errors import StoreError

    db = options.tools_db if options.tools_db is not None else Path("quickjail-tools.db")
    key = os.environ.get(SECRET_KEY_ENV) or None
    async with contextlib.AsyncExitStack() as stack:
        try:
            env = secret_env(options.sources)
            rt = await stack.enter_async_context(
                Runtime(db, tools=tools, secret_key=key, agent_env=env)
            )
        except StoreError as exc:
            where = "given as --tools-db" if options.tools_db is not None else "the default"
            raise ToolsDatabaseError(
                f"cannot open the tools database {str(db.absolute())!r} ({where}): {exc}; "
                "give --tools-db PATH in a writable directory"
            ) from None
        server = build_tools_server(rt, options.max_result_chars)
        await _run_stdio(server)


async def _run_stdio(server: Server[Any]) -> None:
    """Run ``server`` on stdin/stdout; meanwhile ``sys.stdout`` is the standard error.

    The SDK points file descriptor 1 at the standard error while it serves, but what a tool
    ``print()`` s waits in ``sys.stdout``'s buffer (without ``PYTHONUNBUFFERED``) and was
    written after the SDK gave the descriptor back to the protocol stream: into the stream.
    """
    sys.stdout.flush()
    async with stdio_server() as (read_stream, write_stream):
        with contextlib.redirect_stdout(sys.stderr):
            await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve(
    options: ServerOptions, tools: list[Tool] | None, executor: Executor | None
) -> None:
    if options.tools_module is not None or options.sources:
        if tools is None:
            tools = load_tools(options.tools_module, options, executor)
        await _serve_tools(options, tools)
        return
    with contextlib.ExitStack() as stack:
        fs = (
            stack.enter_context(bridge.ReadOnlyDir(options.allow_read))
            if options.allow_read is not None
            else None
        )
        server = build_server(options, fs, executor)
        await _run_stdio(server)


def serve(
    options: ServerOptions, tools: list[Tool] | None = None, executor: Executor | None = None
) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin.

    Args:
        options: Limits and capabilities of every call.
        tools: With ``options.tools_module``, the tools :func:`load_tools` already loaded
            (with the same ``executor``).
        executor: Where every call's code runs (None: in this process); the caller closes it.

    Raises:
        ToolsDatabaseError: The ``--tools`` database cannot be opened.
    """
    anyio.run(_serve, options, tools, executor)
