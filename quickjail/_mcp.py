"""``quickjail mcp``: a Model Context Protocol server exposing ``run_code`` over stdio.

Built on the low-level server of the official ``mcp`` SDK (2.x): the tool's input schema is
written out here, arguments are checked here, and every call runs in a fresh sandbox with the
server's limits. A program's failure is a tool result with ``isError`` set (so the model can
read it and retry), never a protocol error; only an unknown tool name is one.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from quickjail import bridge
from quickjail._cli._json import result_to_json
from quickjail._cli._parser import quickjail_version

__all__ = ["TOOL_NAME", "ServerOptions", "build_server", "input_schema", "serve"]

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
        kind: How a call's code is read when it does not choose (``run_code``'s ``kind``):
            ``"auto"`` runs any of the code shapes models write.
    """

    allow_read: Path | None = None
    timeout: float = 10.0
    max_timeout: float = 60.0
    memory_limit_bytes: int = 64 * 2**20
    kind: str = "auto"


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
        "`execute_fn`). Only ECMAScript is available: no Node or browser APIs, no "
        f"fetch, no timers. {fs} `console.log(...)` output and `report(value)` calls are "
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


def _text_result(data: Mapping[str, Any], is_error: bool) -> types.CallToolResult:
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=dict(data),
        is_error=is_error,
    )


class _RunCodeTool:
    """The request handlers; holds the server's options and its read-only directory."""

    def __init__(self, options: ServerOptions, fs: bridge.ReadOnlyDir | None) -> None:
        self._options = options
        self._fs = fs
        self._tool = types.Tool(
            name=TOOL_NAME,
            title="Run code in a sandbox",
            description=_description(options),
            input_schema=input_schema(options.kind),
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
            }
            if call.execute is not None:
                run_options["execute"] = call.execute
            if self._fs is not None:
                run_options["imports"] = {"fs": self._fs}
            execution = bridge.run_code(call.code, **run_options)
        except (TypeError, ValueError) as exc:  # includes _BadArguments and TransferError
            return _text_result(
                {
                    "status": "invalid_arguments",
                    "result": None,
                    "error": {"name": type(exc).__name__.lstrip("_"), "message": str(exc)},
                    "reason": None,
                    "reports": [],
                    "logs": [],
                },
                True,
            )
        result = await execution
        full = result_to_json(result)
        data = {key: full[key] for key in ("status", "result", "error", "reason", "reports")}
        data["logs"] = [{"level": e["level"], "args": e["args"]} for e in full["logs"]]
        return _text_result(data, result.status != "success")


def build_server(options: ServerOptions, fs: bridge.ReadOnlyDir | None = None) -> Server[Any]:
    """Build the MCP server (not started).

    Args:
        options: Limits and capabilities of every call.
        fs: The directory bridged as ``"fs"``; required when ``options.allow_read`` is set.

    Returns:
        A low-level :class:`mcp.server.Server` with ``tools/list`` and ``tools/call``.
    """
    if options.allow_read is not None and fs is None:
        raise ValueError("options.allow_read is set: pass the ReadOnlyDir as fs")
    tool = _RunCodeTool(options, fs)
    return Server(
        "quickjail",
        version=quickjail_version(),
        instructions="Use run_code to compute with JavaScript/TypeScript in a sandbox.",
        on_list_tools=tool.list_tools,
        on_call_tool=tool.call_tool,
    )


async def _serve(options: ServerOptions) -> None:
    with contextlib.ExitStack() as stack:
        fs = (
            stack.enter_context(bridge.ReadOnlyDir(options.allow_read))
            if options.allow_read is not None
            else None
        )
        server = build_server(options, fs)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(options: ServerOptions) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin.

    Args:
        options: Limits and capabilities of every call.
    """
    anyio.run(_serve, options)
