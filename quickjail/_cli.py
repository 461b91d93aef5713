"""The ``quickjail`` command: ``run`` a JS/TS program, serve ``run_code`` over ``mcp``, or
``stress``-test a bridge configuration.

Every flag of ``quickjail run`` maps to one option of :func:`sandbox.run_code`; the program
gets no host capability unless a flag bridges it (``--allow-read DIR`` bridges a
:class:`bridge.ReadOnlyDir` as the module ``"fs"``). Values leave the sandbox through
:func:`to_json_safe`, shared with the MCP server. ``quickjail stress`` runs the isolation
stress test of ``quickjail._stress`` against the bridge a factory returns. Exit codes are the
``EXIT_*`` constants.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import math
import os
import posixpath
import re
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import anyio

from quickjail import bridge, sandbox
from quickjail.sandbox import to_json_safe

if TYPE_CHECKING:
    from quickjail._stress import Progress

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
    "to_json_safe",
]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_LINK_ERROR: Final = 3
EXIT_MEMORY: Final = 4
EXIT_TERMINATED: Final = 5
EXIT_INTERRUPTED: Final = 130

_STATUS_EXIT: Final[Mapping[str, int]] = {
    "success": EXIT_OK,
    "error": EXIT_ERROR,
    "link_error": EXIT_LINK_ERROR,
    "memory": EXIT_MEMORY,
    "terminated": EXIT_TERMINATED,
}

# Bounds of sandbox.run_code's memory_limit_bytes.
MIN_MEMORY: Final = 8 * 2**20
MAX_MEMORY: Final = 4 * 2**30 - 2**16
DEFAULT_MEMORY: Final = 64 * 2**20

_JS_SUFFIXES: Final = (".js", ".mjs", ".cjs")
_INTERRUPTED: Final = "interrupted"
_SIZE_RE: Final = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[kmg]?)(?:i?b)?", re.IGNORECASE)
_UNITS: Final[Mapping[str, int]] = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}

EXIT_CODES_HELP: Final = f"""\
exit codes:
  {EXIT_OK}    success
  {EXIT_ERROR}    the program threw (status "error"), or the sandbox failed to start
  {EXIT_USAGE}    usage error: a bad flag, an unreadable file; the message says what to change
  {EXIT_LINK_ERROR}    link error: an import that cannot be resolved (status "link_error")
  {EXIT_MEMORY}    the program exceeded --memory (status "memory")
  {EXIT_TERMINATED}    the run was stopped: --timeout expired (status "terminated")
  {EXIT_INTERRUPTED}  interrupted by Ctrl-C (SIGINT; 143 for SIGTERM): the run is stopped cleanly
"""

_RUN_EPILOG: Final = f"""\
output without --json:
  report(value) calls are printed to stdout as they happen, one "report: <JSON>" line each.
  console.* output is printed when the run ends (the sandbox delivers logs with the result):
  log/info/debug to stdout, warn/error to stderr, strings as they are, other values as JSON.
  The result is printed last, as one line of JSON (nothing when it is undefined).
  A failure goes to stderr as FILE:LINE:COLUMN: Name: message, followed by the stack.

output with --json:
  one JSON object on stdout: {{"status", "result", "error", "reason", "reports", "logs",
  "duration_ms", "metrics"}}. Values are made JSON-safe: bytes become {{"$bytes": BASE64}},
  Dates ISO-8601 strings, BigInts integers, undefined null, Sets sorted lists where their
  items can be ordered, NaN and infinities {{"$float": "NaN"|"Infinity"|"-Infinity"}}.

entry:
  FILE is an ES module: its default export (or the export named by --execute) is the
  result; a function is called with the --arg values and awaited. With --script it is a
  classic script and the result is its completion value. Top-level await works in both.

{EXIT_CODES_HELP}
examples:
  quickjail run main.ts
  quickjail run --allow-read ./data --execute main --arg '"notes.txt"' tool.ts
  echo '1 + 1' | quickjail run --script -
  quickjail run --json --timeout 2 --memory 32M untrusted.js
"""


_STRESS_EPILOG: Final = f"""\
the bridge factory:
  # my_pkg/sandbox_bridge.py
  def make():
      return {{"imports": {{"fs": bridge.ReadOnlyDir("/srv/data")}},
              "globals": {{"lookup": lookup}}, "timeout": 5}}

exit codes:
  {EXIT_OK}    every invariant held
  {EXIT_ERROR}    violations were found (listed after the summary, and in --junit)
  {EXIT_USAGE}    usage error: a bad flag, a bridge that cannot be imported or used,
       hypothesis not installed

examples:
  quickjail stress --bridge my_pkg.sandbox_bridge:make
  quickjail stress --bridge my_pkg.sandbox_bridge:make --junit stress.xml --examples 500 -q
  quickjail stress --bridge my_pkg.sandbox_bridge:make --seed 1234   # repeat a run
"""


# ---------------------------------------------------------------- JSON-safe values


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _error_to_json(error: sandbox.ErrorInfo | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {
        "name": error.name,
        "message": error.message,
        "stack": error.stack,
        "line": error.line,
        "column": error.column,
        "filename": error.filename,
        "value": to_json_safe(error.value),
    }


def result_to_json(result: sandbox.CodeResult) -> dict[str, Any]:
    """The JSON object ``quickjail run --json`` prints for a result.

    Args:
        result: A finished run's result.

    Returns:
        ``{"status", "result", "error", "reason", "reports", "logs", "duration_ms",
        "metrics"}`` with every value passed through :func:`to_json_safe`; ``error`` is
        ``None`` or ``{"name", "message", "stack", "line", "column", "filename", "value"}``
        and each log is ``{"level", "args", "timestamp"}`` (seconds since the epoch).
    """
    return {
        "status": result.status,
        "result": to_json_safe(result.result),
        "error": _error_to_json(result.error),
        "reason": result.reason,
        "reports": [to_json_safe(r) for r in result.reports],
        "logs": [
            {"level": e.level, "args": [to_json_safe(a) for a in e.args], "timestamp": e.timestamp}
            for e in result.logs
        ],
        "duration_ms": result.duration_ms,
        "metrics": to_json_safe(dataclasses.asdict(result.metrics)),
    }


# ---------------------------------------------------------------- argument types


def parse_size(text: str) -> int:
    """Parse a memory size: bytes (``67108864``) or a number with K, M or G (powers of 1024).

    ``64M``, ``64MiB``, ``64mb``, ``1.5G`` and ``512k`` are accepted.

    Args:
        text: The flag's value.

    Returns:
        The size in bytes.

    Raises:
        argparse.ArgumentTypeError: If the text is not a size; the message shows the forms.
    """
    m = _SIZE_RE.fullmatch(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"cannot read {text!r} as a size: give bytes or a number with K, M or G "
            f"(powers of 1024), e.g. 64M or 1G"
        )
    size = float(m["num"]) * _UNITS[m["unit"].lower()]
    if not size.is_integer():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes; e.g. use 64M")
    if not MIN_MEMORY <= size <= MAX_MEMORY:
        raise argparse.ArgumentTypeError(
            f"{text!r} is out of range: the sandbox takes 8M up to 4G minus 64K "
            f"({MAX_MEMORY} bytes), e.g. 64M"
        )
    return int(size)


def parse_seconds(text: str) -> float:
    """Parse a positive, finite number of seconds (``0.5``, ``10``).

    Args:
        text: The flag's value.

    Returns:
        The number of seconds.

    Raises:
        argparse.ArgumentTypeError: If the text is not a positive finite number.
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive number of seconds; e.g. 0.5 or 10"
        )
    return value


def _parse_seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        value = -1
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a seed: give an integer from 0 to 2**64-1, e.g. 42"
        )
    return value


def _parse_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count; give an integer >= 0, e.g. 50")
    return value


def _parse_json(flag: str, example: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not valid JSON ({exc}); strings need JSON quotes, "
                f"e.g. {flag} {example}"
            ) from None

    return parse


def _parse_global(text: str) -> tuple[str, Any]:
    name, eq, raw = text.partition("=")
    if not eq or not name.isidentifier():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=JSON; e.g. --global LIMIT=10 or --global 'MODE=\"fast\"'"
        )
    try:
        return name, json.loads(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"the value of {name} is not valid JSON ({exc}); strings need JSON quotes, "
            f"e.g. --global '{name}=\"text\"'"
        ) from None


def _parse_module(text: str) -> tuple[str, str]:
    spec, eq, path = text.partition("=")
    if not eq or not spec.startswith("./") or not path:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not ./SPECIFIER=FILE; e.g. --module ./util.ts=src/util.ts"
        )
    return spec, path


# ---------------------------------------------------------------- parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("quickjail")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """Build the ``quickjail`` argument parser with its ``run``, ``mcp`` and ``stress``
    subcommands."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="quickjail",
        description="Run untrusted JavaScript or TypeScript in a QuickJS-ng WebAssembly sandbox. "
        "The program has no host capability unless a flag grants it.",
        epilog=EXIT_CODES_HELP + "\n'quickjail COMMAND --help' describes each command.",
        formatter_class=raw,
    )
    parser.add_argument("--version", action="version", version=f"quickjail {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run a JS/TS file (or - for standard input) and print its result",
        description="Run FILE in a fresh sandbox and print its result. Each flag is an option "
        "of sandbox.run_code.",
        epilog=_RUN_EPILOG,
        formatter_class=raw,
    )
    run.add_argument("file", metavar="FILE", help="the program; - reads it from standard input")
    cap = run.add_argument_group("capabilities (none unless granted)")
    cap.add_argument(
        "--allow-read",
        metavar="DIR",
        help="let the program read files under DIR: import { readFile, readdir, "
        'stat } from "fs" (paths relative to DIR; no "..", absolute paths '
        "or symlinks)",
    )
    cap.add_argument(
        "--allow-dynamic-code",
        action="store_true",
        help="allow eval() and new Function() (off by default)",
    )
    cap.add_argument(
        "--global",
        dest="globals",
        metavar="NAME=JSON",
        action="append",
        type=_parse_global,
        default=[],
        help="define a global constant from JSON data (repeatable)",
    )
    cap.add_argument(
        "--module",
        dest="modules",
        metavar="./SPEC=FILE",
        action="append",
        type=_parse_module,
        default=[],
        help="make FILE importable by the relative specifier ./SPEC (repeatable)",
    )
    limits = run.add_argument_group("limits")
    limits.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=parse_seconds,
        help="stop the run after SECONDS of wall time (exit 5); default: none",
    )
    limits.add_argument(
        "--memory",
        metavar="SIZE",
        type=parse_size,
        default=DEFAULT_MEMORY,
        help="memory limit: bytes or K/M/G, e.g. 64M or 1G (default: 64M)",
    )
    entry = run.add_argument_group("entry")
    entry.add_argument(
        "--execute", metavar="FN", help="the export to run instead of the default export"
    )
    entry.add_argument(
        "--arg",
        dest="args",
        metavar="JSON",
        action="append",
        type=_parse_json("--arg", "'\"notes.txt\"'"),
        help="one argument for the called export, as JSON (repeatable, in order)",
    )
    entry.add_argument(
        "--script",
        action="store_true",
        help="run FILE as a classic script; the result is its completion value",
    )
    entry.add_argument(
        "--language",
        choices=("typescript", "javascript"),
        help="source language (default: javascript for .js/.mjs/.cjs, else "
        "typescript, which also runs plain JavaScript)",
    )
    entry.add_argument(
        "--filename",
        metavar="NAME",
        help="name of the program in stack traces (default: FILE's name, or <stdin>)",
    )
    det = run.add_argument_group("determinism")
    det.add_argument(
        "--seed", metavar="N", type=_parse_seed, help="seed Math.random with N (0 <= N < 2**64)"
    )
    det.add_argument(
        "--deterministic",
        action="store_true",
        help="make runs repeatable: Math.random seeded with 0 (or --seed) and a "
        "fixed clock starting at 2025-01-01T00:00:00Z that advances 1 ms "
        "per reading",
    )
    out = run.add_argument_group("output")
    out.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object with the whole result instead of streaming",
    )
    run.set_defaults(handler=_cmd_run, parser=run)

    mcp = sub.add_parser(
        "mcp",
        help="serve a run_code tool over MCP on standard input/output",
        description="Serve the Model Context Protocol over stdio with one tool, run_code, that "
        "runs a JS/TS module in a fresh sandbox per call. Needs the 'mcp' extra "
        "(pip install 'quickjail[mcp]'). Nothing but the protocol is written to "
        "stdout.",
        epilog="example client configuration:\n"
        '  {"command": "quickjail", "args": ["mcp", "--allow-read", "/srv/data"]}',
        formatter_class=raw,
    )
    mcp.add_argument(
        "--allow-read",
        metavar="DIR",
        help='let programs read files under DIR through import ... from "fs"',
    )
    mcp.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=parse_seconds,
        default=10.0,
        help="timeout of a call that does not choose one (default: 10)",
    )
    mcp.add_argument(
        "--max-timeout",
        metavar="SECONDS",
        type=parse_seconds,
        default=60.0,
        help="largest timeout a call may ask for (default: 60)",
    )
    mcp.add_argument(
        "--memory",
        metavar="SIZE",
        type=parse_size,
        default=DEFAULT_MEMORY,
        help="memory limit of each call: bytes or K/M/G (default: 64M)",
    )
    mcp.set_defaults(handler=_cmd_mcp, parser=mcp)

    stress = sub.add_parser(
        "stress",
        help="stress-test your bridge: hostile programs and fuzzed host calls",
        description="Run quickjail's adversarial corpus (escape attempts, memory bombs, CPU\n"
        "hogs, deep recursion, floods, information leaks) with your bridge, then\n"
        "fuzz every bridged host function with hostile arguments, and check that\n"
        "the host stays safe: nothing escapes, no exception leaves the sandbox,\n"
        "a canary file outside your ReadOnlyDir roots is never read, time and\n"
        "memory stay bounded, no thread is left running. Needs the 'stress'\n"
        "extra: pip install 'quickjail[stress]'.",
        epilog=_STRESS_EPILOG,
        formatter_class=raw,
    )
    stress.add_argument(
        "--bridge",
        metavar="MODULE:CALLABLE",
        required=True,
        help="a factory returning your bridge configuration: a dict with "
        "'imports' and/or 'globals' (optionally 'output_limits', 'quotas', 'timeout', "
        "'memory_limit_bytes'); imported from the current directory",
    )
    stress.add_argument(
        "--junit",
        metavar="FILE",
        help="write a JUnit XML report: one testcase per corpus program and per fuzzed function",
    )
    stress.add_argument(
        "--seed",
        metavar="N",
        type=_parse_seed,
        help="hypothesis seed, to repeat a run (default: random, printed)",
    )
    stress.add_argument(
        "--examples",
        metavar="N",
        type=_parse_count,
        default=None,
        help="generated calls per host function (default: 100); fixed path "
        "tricks aimed at the canary are tried on top",
    )
    stress.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=parse_seconds,
        help="timeout of each run (default: the bridge's, else 2)",
    )
    stress.add_argument(
        "--memory",
        metavar="SIZE",
        type=parse_size,
        help="memory limit of each run (default: the bridge's, else 64M)",
    )
    stress.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress; print only the summary and the violations",
    )
    stress.set_defaults(handler=_cmd_stress, parser=stress)
    return parser


# ---------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``quickjail`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit code (see ``EXIT_CODES_HELP``).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_usage(sys.stderr)
        print(
            "quickjail: error: name a command: run, mcp or stress (see quickjail --help)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    for stream in (sys.stdout, sys.stderr):
        # lone surrogates from JS strings print as \udXXX instead of crashing the CLI
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except _UsageError as exc:
        return _usage_error(args.parser, str(exc))
    except KeyboardInterrupt:
        print("quickjail: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, like other Unix tools
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


class _UsageError(Exception):
    """A usage problem found after parsing; the message says what to change."""


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


# ---------------------------------------------------------------- quickjail run


@dataclasses.dataclass(slots=True)
class _Program:
    source: str
    filename: str
    display: dict[str, str]  # sandbox file name -> the path the user gave


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise _UsageError(f"{what} {path!r} does not exist; check the path") from None
    except IsADirectoryError:
        raise _UsageError(f"{what} {path!r} is a directory; give a file") from None
    except UnicodeDecodeError:
        raise _UsageError(f"{what} {path!r} is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise _UsageError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None


def _load_program(args: argparse.Namespace) -> _Program:
    if args.file == "-":
        data = sys.stdin.buffer.read()
        try:
            source = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise _UsageError("standard input is not UTF-8 text; send UTF-8") from None
        filename = args.filename or "<stdin>"
        display = "<stdin>"
    else:
        source = _read_text(args.file, "FILE")
        filename = args.filename or (Path(args.file).name or "<run_code>")
        display = args.file
    if "\0" in filename:
        raise _UsageError("--filename must not contain NUL")
    return _Program(source, filename, {filename: display})


def _language(args: argparse.Namespace, filename: str) -> str:
    if args.language is not None:
        return str(args.language)
    return "javascript" if filename.lower().endswith(_JS_SUFFIXES) else "typescript"


def _run_options(
    args: argparse.Namespace, program: _Program, stack: contextlib.ExitStack
) -> dict[str, Any]:
    if args.script and args.execute is not None:
        raise _UsageError(
            "--execute names an export, and a --script has none: drop --script or --execute"
        )
    if args.script and args.args:
        raise _UsageError(
            "--arg passes arguments to an exported function, and a --script "
            "has none: drop --script or --arg"
        )
    options: dict[str, Any] = {
        "kind": "script" if args.script else "module",
        "language": _language(args, program.filename),
        "filename": program.filename,
        "memory_limit_bytes": args.memory,
        "timeout": args.timeout,
        "dynamic_code": bool(args.allow_dynamic_code),
    }
    if args.execute is not None or args.args:
        execute: dict[str, Any] = {}
        if args.execute is not None:
            execute["fn"] = args.execute
        if args.args:
            execute["args"] = list(args.args)
        options["execute"] = execute
    if args.seed is not None:
        options["seed"] = args.seed
    if args.deterministic:
        options["deterministic"] = True
    if args.globals:
        options["globals"] = dict(args.globals)
    if args.modules:
        modules: dict[str, str] = {}
        base = program.filename.rpartition("/")[0]
        for spec, path in args.modules:
            modules[spec] = _read_text(path, f"--module {spec}")
            key = posixpath.normpath(posixpath.join(base, spec[2:]))
            program.display[key] = path
        options["modules"] = modules
    if args.allow_read is not None:
        root = Path(args.allow_read)
        if not root.is_dir():
            raise _UsageError(
                f"--allow-read {args.allow_read!r} is not a directory; give an existing directory"
            )
        try:
            fs = stack.enter_context(bridge.ReadOnlyDir(root))
        except (ValueError, OSError) as exc:
            raise _UsageError(f"--allow-read {args.allow_read!r}: {exc}") from None
        options["imports"] = {"fs": fs}
    return options


def _print_report(value: Any) -> None:
    print(f"report: {_dumps(to_json_safe(value))}", flush=True)


def _cmd_run(args: argparse.Namespace) -> int:
    program = _load_program(args)
    with contextlib.ExitStack() as stack:
        options = _run_options(args, program, stack)
        if not args.json:
            options["report"] = _print_report
        try:
            execution = bridge.run_code(program.source, **options)
        except (TypeError, ValueError) as exc:
            raise _UsageError(str(exc)) from None
        except sandbox.SandboxError as exc:
            print(f"quickjail: the sandbox could not start: {exc}", file=sys.stderr)
            return EXIT_ERROR
        result, signum = anyio.run(_drive, execution)
    if args.json:
        print(_dumps(_with_display_names(result_to_json(result), program.display)), flush=True)
    else:
        _print_text(result, program, args)
    if signum is not None and result.reason == _INTERRUPTED:
        return 128 + signum
    return _STATUS_EXIT.get(result.status, EXIT_ERROR)


@dataclasses.dataclass(slots=True)
class _Signals:
    received: int | None = None


async def _drive(execution: sandbox.CodeExecution) -> tuple[sandbox.CodeResult, int | None]:
    """Await the run; the first SIGINT/SIGTERM terminates it, a second one exits at once."""
    state = _Signals()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_signals, execution, state)
        result = await execution
        tg.cancel_scope.cancel()
    return result, state.received


async def _watch_signals(execution: sandbox.CodeExecution, state: _Signals) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if state.received is None:
                state.received = int(signum)
                execution.terminate(_INTERRUPTED)
            else:
                print("quickjail: forced exit", file=sys.stderr, flush=True)
                os._exit(128 + int(signum))


def _with_display_names(data: dict[str, Any], display: Mapping[str, str]) -> dict[str, Any]:
    error = data.get("error")
    if error is not None and error.get("filename") in display:
        error["filename"] = display[error["filename"]]
    return data


def _format_size(n: int) -> str:
    for unit, size in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return f"{n} bytes"


def _log_text(args: list[Any]) -> str:
    return " ".join(a if isinstance(a, str) else _dumps(to_json_safe(a)) for a in args)


def _print_text(result: sandbox.CodeResult, program: _Program, args: argparse.Namespace) -> None:
    for entry in result.logs:
        stream: TextIO = sys.stderr if entry.level in ("warn", "error") else sys.stdout
        print(_log_text(entry.args), file=stream)
    sys.stdout.flush()
    if result.status == "success":
        if result.result is not sandbox.UNDEFINED:
            print(_dumps(to_json_safe(result.result)), flush=True)
        return
    entry_name = program.display[program.filename]
    if result.status == "terminated":
        if result.reason == "timeout":
            print(
                f"{entry_name}: terminated: the run took longer than --timeout {args.timeout:g} s",
                file=sys.stderr,
            )
        elif result.reason == _INTERRUPTED:
            print("quickjail: interrupted: the run was stopped", file=sys.stderr)
        else:
            print(f"{entry_name}: terminated: {result.reason}", file=sys.stderr)
        return
    error = result.error
    if error is None:  # pragma: no cover - every failed status carries an error
        print(f"{entry_name}: {result.status}", file=sys.stderr)
        return
    where = program.display.get(error.filename or "", entry_name)
    if error.line is not None:
        where += f":{error.line}:{error.column}"
    head = f"{error.name}: {error.message}" if error.name else error.message
    if result.status == "memory":
        head = (
            f"out of memory: the program needed more than --memory "
            f"{_format_size(args.memory)}; raise the limit if that is expected"
        )
    print(f"{where}: {head}", file=sys.stderr)
    frames = [line for line in error.stack.splitlines() if line.strip().startswith("at ")]
    if frames and result.status != "memory":
        print("\n".join(frames), file=sys.stderr)
    hint = _hint(result, args)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


def _hint(result: sandbox.CodeResult, args: argparse.Namespace) -> str | None:
    """A suggestion for the usual CLI mistakes (shown only; never used to classify)."""
    error = result.error
    if error is None:
        return None
    if result.status == "link_error":
        return (
            'the CLI provides the module "fs" with --allow-read DIR, and relative '
            "modules with --module ./SPEC=FILE; nothing else can be imported"
        )
    if "has no export named 'default'" in error.message and args.execute is None:
        return (
            "export a value or function as default, name an export with --execute FN, "
            "or run the file as a classic script with --script"
        )
    return None


# ---------------------------------------------------------------- quickjail mcp


def _cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from quickjail import _mcp
    except ImportError as exc:
        raise _UsageError(
            f"quickjail mcp needs the MCP SDK, version 2.3 or later ({exc}); "
            "install it with: pip install 'quickjail[mcp]'"
        ) from None
    if args.max_timeout < args.timeout:
        raise _UsageError(
            f"--timeout {args.timeout:g} is above --max-timeout "
            f"{args.max_timeout:g}; lower --timeout or raise --max-timeout"
        )
    if args.allow_read is not None and not Path(args.allow_read).is_dir():
        raise _UsageError(
            f"--allow-read {args.allow_read!r} is not a directory; give an existing directory"
        )
    options = _mcp.ServerOptions(
        allow_read=Path(args.allow_read) if args.allow_read is not None else None,
        timeout=args.timeout,
        max_timeout=args.max_timeout,
        memory_limit_bytes=args.memory,
    )
    _mcp.serve(options)
    return EXIT_OK


# ---------------------------------------------------------------- quickjail stress


class _StressProgress:
    """Prints a line per phase and a live counter (on a terminal) to stderr."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._started = 0.0
        self._last = 0.0

    def __call__(self, event: Progress) -> None:
        import time

        now = time.monotonic()
        what = {"corpus": "hostile programs", "fuzz": "fuzzed host calls", "host": "host check(s)"}[
            event.phase
        ]
        if event.event == "start":
            self._started = now
            print(f"{event.phase}: {event.total} {what}", file=self._stream, flush=True)
        elif event.event == "step":
            if self._tty and now - self._last >= 0.1:
                self._last = now
                print(
                    f"\r  {event.done}/{event.total}  violations: {event.violations}  "
                    f"{event.case[:40]:<40}",
                    end="",
                    file=self._stream,
                    flush=True,
                )
        else:
            if self._tty:
                print("\r\033[K", end="", file=self._stream)
            print(
                f"  done: {event.done} in {now - self._started:.1f} s, "
                f"violations so far: {event.violations}",
                file=self._stream,
                flush=True,
            )


def _cmd_stress(args: argparse.Namespace) -> int:
    try:
        import hypothesis  # noqa: F401

        from quickjail import _stress
    except ImportError as exc:
        raise _UsageError(
            f"quickjail stress needs hypothesis ({exc}); install it with: "
            "pip install 'quickjail[stress]'"
        ) from None
    import secrets

    try:
        config = _stress.load_bridge(args.bridge)
    except _stress.StressConfigError as exc:
        raise _UsageError(str(exc)) from None
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    if not args.quiet:
        print(f"quickjail stress: bridge {args.bridge}, seed {seed}", file=sys.stderr, flush=True)
    try:
        report = _stress.run_stress(
            config,
            examples=args.examples if args.examples is not None else _stress.DEFAULT_EXAMPLES,
            seed=seed,
            timeout=args.timeout,
            memory_limit_bytes=args.memory,
            progress=None if args.quiet else _StressProgress(sys.stderr),
        )
    except _stress.StressConfigError as exc:
        raise _UsageError(f"--bridge {args.bridge}: {exc}") from None
    if args.junit is not None:
        try:
            report.write_junit(args.junit)
        except OSError as exc:
            print(
                f"quickjail: cannot write --junit {args.junit!r}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    functions = ", ".join(report.functions) or "none"
    print(
        f"bridge {args.bridge}: host functions {functions}; timeout {report.timeout:g} s; "
        f"memory {_format_size(report.memory_limit_bytes)}; seed {report.seed}"
    )
    if report.canary is None:
        print(
            "note: no place outside the ReadOnlyDir roots for the canary file; "
            "canary reads were not tested"
        )
    print(report.format_table())
    found = report.violations
    if found:
        print(f"\n{len(found)} violation(s):")
        for v in found:
            print(f"  {v}")
        print(f"\nrepeat with: quickjail stress --bridge {args.bridge} --seed {report.seed}")
        return EXIT_ERROR
    print("\nno violations")
    return EXIT_OK
