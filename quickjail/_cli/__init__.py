"""The ``quickjail`` command: ``run`` a JS/TS program, serve ``run_code`` over ``mcp``, or
``stress``-test a bridge configuration.

Every flag of ``quickjail run`` maps to one option of :func:`bridge.run_code`; the program
gets no host capability unless a flag bridges it (``--allow-read DIR`` bridges a
:class:`bridge.ReadOnlyDir` as the module ``"fs"``). Values leave the sandbox through
:func:`result_to_json`. ``quickjail stress`` runs the isolation
stress test of ``quickjail._stress`` against the bridge a factory returns. Exit codes are the
``EXIT_*`` constants.

One module per part: ``_exit`` (exit codes and the usage error), ``_json`` (what is printed
as JSON), ``_args`` (the flags' argument types), ``_parser`` (the commands and their flags),
and one module per command: ``_run``, ``_mcp_cmd``, ``_stress_cmd``. :func:`main` parses the
arguments and calls the command's handler.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Callable, Sequence

from quickjail._cli._args import parse_seconds, parse_size
from quickjail._cli._exit import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_LINK_ERROR,
    EXIT_MEMORY,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    UsageError,
)
from quickjail._cli._json import result_to_json
from quickjail._cli._parser import build_parser, usage_error

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_LINK_ERROR",
    "EXIT_MEMORY",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "build_parser",
    "main",
    "parse_seconds",
    "parse_size",
    "result_to_json",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``quickjail`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code (see :data:`quickjail._cli._exit.EXIT_CODES_HELP`).
    """
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if unknown:  # named by the command that refuses them, whose --help lists its flags
        own = getattr(args, "parser", parser)
        return _usage_error(own, f"unrecognized arguments: {' '.join(unknown)}")
    if args.command is None:
        usage_error(parser.prog, "name a command: run, mcp or stress")
        return EXIT_USAGE
    for stream in (sys.stdout, sys.stderr):
        # lone surrogates from JS strings print as \udXXX instead of crashing the CLI
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except UsageError as exc:
        return _usage_error(args.parser, str(exc))
    except KeyboardInterrupt:
        print("quickjail: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, like other Unix tools
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Print a usage error (one line and a hint); return :data:`EXIT_USAGE`."""
    usage_error(parser.prog, message)
    return EXIT_USAGE
