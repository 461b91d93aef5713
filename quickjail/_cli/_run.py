"""``quickjail run``: run one JS/TS program from a file or standard input and print its result.

Every flag maps to one option of :func:`sandbox.run_code`; the program gets no host
capability unless a flag bridges it (``--allow-read DIR`` bridges a
:class:`bridge.ReadOnlyDir` as the module ``"fs"``). Reports stream to stdout as they
happen; logs, the result and a failure are printed when the run ends (or one JSON object
with ``--json``). The first SIGINT or SIGTERM stops the run cleanly, a second one exits at
once. Text mode shows the program's terminal control characters as escapes
(:mod:`quickjail._cli._text`); ``--json`` prints the JSON exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import posixpath
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, TextIO

import anyio

from quickjail import bridge, sandbox
from quickjail._cli._args import format_size
from quickjail._cli._exit import (
    EXIT_ERROR,
    EXIT_LINK_ERROR,
    EXIT_MEMORY,
    EXIT_OK,
    EXIT_TERMINATED,
    UsageError,
)
from quickjail._cli._json import dumps, result_to_json
from quickjail._cli._text import safe_json, safe_text
from quickjail.sandbox import to_json_safe

__all__ = ["cmd_run"]

_STATUS_EXIT: Final[Mapping[str, int]] = {
    "success": EXIT_OK,
    "error": EXIT_ERROR,
    "link_error": EXIT_LINK_ERROR,
    "memory": EXIT_MEMORY,
    "terminated": EXIT_TERMINATED,
}

_JS_SUFFIXES: Final = (".js", ".mjs", ".cjs")
_INTERRUPTED: Final = "interrupted"


@dataclasses.dataclass(slots=True)
class _Program:
    source: str
    filename: str
    display: dict[str, str]  # sandbox file name -> the path the user gave


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise UsageError(f"{what} {path!r} does not exist; check the path") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path!r} is a directory; give a file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{what} {path!r} is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path!r}: {exc.strerror or exc}") from None


def _load_program(args: argparse.Namespace) -> _Program:
    if args.file == "-":
        data = sys.stdin.buffer.read()
        try:
            source = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise UsageError("standard input is not UTF-8 text; send UTF-8") from None
        filename = args.filename or "<stdin>"
        display = "<stdin>"
    else:
        source = _read_text(args.file, "FILE")
        filename = args.filename or (Path(args.file).name or "<run_code>")
        display = args.file
    if "\0" in filename:
        raise UsageError("--filename must not contain NUL")
    return _Program(source, filename, {filename: display})


def _language(args: argparse.Namespace, filename: str) -> str:
    if args.language is not None:
        return str(args.language)
    return "javascript" if filename.lower().endswith(_JS_SUFFIXES) else "typescript"


def _run_options(
    args: argparse.Namespace, program: _Program, stack: contextlib.ExitStack
) -> dict[str, Any]:
    if args.script and args.kind not in (None, "script"):
        raise UsageError(f"--script contradicts --kind {args.kind}: give one of them")
    kind = "script" if args.script else (args.kind or "auto")
    if kind == "script" and args.execute is not None:
        raise UsageError(
            "--execute names an export, and a --script has none: drop --script or --execute"
        )
    if kind == "script" and args.args:
        raise UsageError(
            "--arg passes arguments to an exported function, and a --script "
            "has none: drop --script or --arg"
        )
    options: dict[str, Any] = {
        "kind": kind,
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
            raise UsageError(
                f"--allow-read {args.allow_read!r} is not a directory; give an existing directory"
            )
        try:
            fs = stack.enter_context(bridge.ReadOnlyDir(root))
        except (ValueError, OSError) as exc:
            raise UsageError(f"--allow-read {args.allow_read!r}: {exc}") from None
        options["imports"] = {"fs": fs}
    return options


def _print_report(value: Any) -> None:
    print(f"report: {safe_json(dumps(to_json_safe(value)))}", flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """Run the program and print what it did; the exit code follows the result's status."""
    program = _load_program(args)
    with contextlib.ExitStack() as stack:
        options = _run_options(args, program, stack)
        if not args.json:
            options["report"] = _print_report
        if args.workers is not None:
            from quickjail.executors import ProcessPool

            options["executor"] = stack.enter_context(ProcessPool(workers=args.workers))
        try:
            execution = bridge.run_code(program.source, **options)
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        except sandbox.SandboxError as exc:
            print(f"quickjail: the sandbox could not start: {safe_text(str(exc))}", file=sys.stderr)
            return EXIT_ERROR
        try:
            result, signum = anyio.run(_drive, execution)
        except Exception as exc:
            if args.workers is None:
                raise
            from quickjail.executors import ExecutorError

            if not isinstance(exc, ExecutorError):  # e.g. workers that cannot start
                raise
            message = f"quickjail: the worker pool could not run it: {safe_text(str(exc))}"
            print(message, file=sys.stderr)
            return EXIT_ERROR
    if args.json:
        print(dumps(_with_display_names(result_to_json(result), program.display)), flush=True)
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


def _log_text(args: list[Any]) -> str:
    return " ".join(
        safe_text(a) if isinstance(a, str) else safe_json(dumps(to_json_safe(a))) for a in args
    )


def _print_text(result: sandbox.CodeResult, program: _Program, args: argparse.Namespace) -> None:
    for entry in result.logs:
        stream: TextIO = sys.stderr if entry.level in ("warn", "error") else sys.stdout
        print(_log_text(entry.args), file=stream)
    sys.stdout.flush()
    if result.status == "success":
        if result.result is not sandbox.UNDEFINED:
            print(safe_json(dumps(to_json_safe(result.result))), flush=True)
        return
    entry_name = safe_text(program.display[program.filename])
    if result.status == "paused":  # only a host function raising Pause does this
        print(f"{entry_name}: paused (the CLI does not resume runs)", file=sys.stderr)
        return
    if result.status == "terminated":
        if result.reason == "timeout":
            print(
                f"{entry_name}: terminated: the run took longer than --timeout {args.timeout:g} s",
                file=sys.stderr,
            )
        elif result.reason == _INTERRUPTED:
            print("quickjail: interrupted: the run was stopped", file=sys.stderr)
        else:
            print(f"{entry_name}: terminated: {safe_text(str(result.reason))}", file=sys.stderr)
        return
    error = result.error
    if error is None:  # pragma: no cover - every failed status carries an error
        print(f"{entry_name}: {result.status}", file=sys.stderr)
        return
    where = safe_text(program.display.get(error.filename or "", entry_name))
    if error.line is not None:
        where += f":{error.line}:{error.column}"
    head = safe_text(f"{error.name}: {error.message}" if error.name else error.message)
    if result.status == "memory":
        head = (
            f"out of memory: the program needed more than --memory "
            f"{format_size(args.memory)}; raise the limit if that is expected"
        )
    print(f"{where}: {head}", file=sys.stderr)
    frames = [line for line in error.stack.splitlines() if line.strip().startswith("at ")]
    if frames and result.status != "memory":
        print(safe_text("\n".join(frames)), file=sys.stderr)
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
            "or let --kind auto (the default) read the file as statements, or --script as a "
            "classic script"
        )
    return None
