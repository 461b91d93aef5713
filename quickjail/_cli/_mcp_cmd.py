"""``quickjail mcp``: check the flags, then serve ``run_code`` (or ``--tools``, ``--connect``,
``--openapi``) over stdio.

The server itself is :mod:`quickjail._mcp`, imported only here and only when the command
runs, since it needs the optional MCP SDK (the ``mcp`` extra).
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from quickjail._cli._exit import EXIT_OK, UsageError

__all__ = ["cmd_mcp"]


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the MCP server with the flags' limits until the client closes standard input."""
    try:
        from quickjail import _mcp
    except ImportError as exc:
        raise UsageError(
            f"quickjail mcp needs the MCP SDK, version 2.3 or later ({exc}); "
            "install it with: pip install 'quickjail[mcp]'"
        ) from None
    if args.max_timeout < args.timeout:
        raise UsageError(
            f"--timeout {args.timeout:g} is above --max-timeout "
            f"{args.max_timeout:g}; lower --timeout or raise --max-timeout"
        )
    if args.allow_read is not None and not Path(args.allow_read).is_dir():
        raise UsageError(
            f"--allow-read {args.allow_read!r} is not a directory; give an existing directory"
        )
    from quickjail._mcp_sources import parse_sources, secret_env

    try:
        sources = parse_sources(args.connect, args.openapi, args.base_url, args.auth)
        secret_env(sources)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    runtime_tools = args.tools is not None or bool(sources)
    if args.tools_db is not None and not runtime_tools:
        raise UsageError(
            "--tools-db is the database of --tools, --connect and --openapi: give one of them"
        )
    if runtime_tools and args.allow_read is not None:
        raise UsageError(
            "--allow-read serves the plain run_code's files; with --tools, --connect or "
            "--openapi the tools' own thread files are used: drop one of them"
        )
    options = _mcp.ServerOptions(
        allow_read=Path(args.allow_read) if args.allow_read is not None else None,
        timeout=args.timeout,
        max_timeout=args.max_timeout,
        memory_limit_bytes=args.memory,
        tools_module=args.tools,
        tools_db=Path(args.tools_db) if args.tools_db is not None else None,
        kind=args.kind,
        max_result_chars=args.max_result_chars,
        sources=sources,
    )
    with contextlib.ExitStack() as stack:
        executor = None
        if args.workers is not None:
            from quickjail.executors import ProcessPool

            executor = stack.enter_context(ProcessPool(workers=args.workers))
        tools = None
        if args.tools is not None:
            try:
                tools = _mcp.load_tools(args.tools, options, executor)
            except Exception as exc:  # the module's own import errors included
                raise UsageError(
                    f"--tools {args.tools!r}: {type(exc).__name__}: {exc}; give a module "
                    "(dotted name or .py file) that defines tools with define_tool"
                ) from None
        elif sources:
            try:
                tools = _mcp.load_tools(None, options, executor)
            except Exception as exc:  # a name that is no identifier, a refused document
                raise UsageError(f"{type(exc).__name__}: {exc}") from None
        try:
            _mcp.serve(options, tools, executor)
        except _mcp.ToolsDatabaseError as exc:
            raise UsageError(str(exc)) from None
    return EXIT_OK
