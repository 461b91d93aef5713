"""The ``quickjail`` argument parser: every subcommand, flag, help text and epilog.

Each subcommand's parser records its handler (``handler``) and itself (``parser``, for usage
errors) in the parsed namespace; :func:`quickjail._cli.main` calls the handler.
"""

from __future__ import annotations

import argparse
import sys
from typing import Final, NoReturn

from quickjail._cli._args import (
    DEFAULT_MEMORY,
    parse_count,
    parse_global,
    parse_json,
    parse_module,
    parse_result_chars,
    parse_seconds,
    parse_seed,
    parse_size,
    parse_workers,
)
from quickjail._cli._exit import EXIT_CODES_HELP, EXIT_ERROR, EXIT_OK, EXIT_USAGE
from quickjail._cli._mcp_cmd import cmd_mcp
from quickjail._cli._run import cmd_run
from quickjail._cli._stress_cmd import cmd_stress

__all__ = ["CliParser", "build_parser", "quickjail_version", "usage_error"]

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
  other typed arrays {{"$typedarray": KIND, "$bytes": BASE64}}, Dates ISO-8601 strings,
  BigInts integers (past 4,300 digits {{"$bigint": "0x..."}}), undefined null, Sets sorted
  lists where their items can be ordered, NaN and infinities
  {{"$float": "NaN"|"Infinity"|"-Infinity"}}.

entry:
  By default (--kind auto) FILE may be any of the code shapes models write, inside one
  Markdown fence or not: an ES module (its default export, or the export named by
  --execute, is the result; a function is called with the --arg values and awaited), an
  arrow or function expression or a lone function declaration (called with the --arg
  values), statements with top-level await or return, or an expression (its value).
  --kind module takes FILE as an ES module only; --kind script (or --script) as a classic
  script whose completion value is the result. Top-level await works in all of them.

{EXIT_CODES_HELP}
examples:
  quickjail run main.ts
  quickjail run --allow-read ./data --execute main --arg '"notes.txt"' tool.ts
  echo '1 + 1' | quickjail run -
  echo 'const a = 20; return a * 2' | quickjail run --kind auto -
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


def quickjail_version() -> str:
    """The installed distribution's version (``unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("quickjail")
    except PackageNotFoundError:
        return "unknown"


def usage_error(prog: str, message: str) -> None:
    """Print a usage error as common command lines do: the error in one line, then where to
    read more (not the whole usage block)."""
    sys.stderr.write(f"{prog}: error: {message}\nTry '{prog} --help' for more information.\n")


class CliParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are :func:`usage_error`'s two lines (argparse
    prints its whole usage block first); its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` as a usage error and exit with :data:`EXIT_USAGE`."""
        usage_error(self.prog, message)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """Build the ``quickjail`` argument parser with its ``run``, ``mcp`` and ``stress``
    subcommands."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = CliParser(
        prog="quickjail",
        description="Run untrusted JavaScript or TypeScript in a QuickJS-ng WebAssembly sandbox. "
        "The program has no host capability unless a flag grants it.",
        epilog=EXIT_CODES_HELP + "\n'quickjail COMMAND --help' describes each command.",
        formatter_class=raw,
    )
    parser.add_argument("--version", action="version", version=f"quickjail {quickjail_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run a JS/TS file (or - for standard input) and print its result",
        description="Run FILE in a fresh sandbox and print its result. Each flag is an option "
        "of bridge.run_code.",
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
        type=parse_global,
        default=[],
        help="define a global constant from JSON data (repeatable)",
    )
    cap.add_argument(
        "--module",
        dest="modules",
        metavar="./SPEC=FILE",
        action="append",
        type=parse_module,
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
    limits.add_argument(
        "--workers",
        metavar="N",
        type=parse_workers,
        help="run the program in a worker process (a pool of N; 1 is enough for one run): a "
        "crash of the engine or the worker ends the run as an error instead of this process",
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
        type=parse_json("--arg", "'\"notes.txt\"'"),
        help="one argument for the called export, as JSON (repeatable, in order)",
    )
    entry.add_argument(
        "--kind",
        choices=("auto", "module", "script"),
        default=None,
        help="how FILE is read (default: auto, any code shape; see below)",
    )
    entry.add_argument(
        "--script",
        action="store_true",
        help="the same as --kind script: a classic script whose completion value is the result",
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
        "--seed", metavar="N", type=parse_seed, help="seed Math.random with N (0 <= N < 2**64)"
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
    run.set_defaults(handler=cmd_run, parser=run)

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
        "--tools",
        metavar="MODULE",
        help="serve the runtime tools MODULE defines (a dotted name or a .py file) and the "
        "code-mode tool run_code over them, instead of the plain run_code; one thread per "
        "session in --tools-db; secrets need the key in $QUICKJAIL_SECRET_KEY",
    )
    mcp.add_argument(
        "--connect",
        metavar="NAME=CMD|URL",
        action="append",
        default=[],
        help="reach an MCP server's tools in run_code as the namespace NAME: a command "
        "started over stdio (NAME='npx -y some-server', split as a shell would, not run by "
        "one) or a streamable-HTTP URL; repeatable",
    )
    mcp.add_argument(
        "--openapi",
        metavar="NAME=SPEC",
        action="append",
        default=[],
        help="reach an HTTP API in run_code as the namespace NAME, one function per operation "
        "of the OpenAPI 3.0/3.1 document SPEC (a JSON or YAML file); needs --base-url NAME=URL; "
        "repeatable",
    )
    mcp.add_argument(
        "--base-url",
        metavar="NAME=URL",
        action="append",
        default=[],
        help="the URL the --openapi source NAME's requests go to (the only one they may go to)",
    )
    mcp.add_argument(
        "--auth",
        metavar="NAME=HOW",
        action="append",
        default=[],
        help="the --openapi source NAME's secret, added on the host: bearer:VAR, "
        "header:HEADER:VAR or query:PARAM:VAR, VAR an environment variable of this process",
    )
    mcp.add_argument(
        "--tools-db",
        metavar="PATH",
        help="runtime database of --tools, --connect and --openapi (default: "
        "quickjail-tools.db in the current directory, which must then be writable)",
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
        "--kind",
        choices=("auto", "module", "script"),
        default="auto",
        help="how a call's code is read when it does not choose (default: auto, any of the "
        "code shapes models write)",
    )
    mcp.add_argument(
        "--memory",
        metavar="SIZE",
        type=parse_size,
        default=DEFAULT_MEMORY,
        help="memory limit of each call: bytes or K/M/G (default: 64M)",
    )
    mcp.add_argument(
        "--max-result-chars",
        metavar="N",
        type=parse_result_chars,
        default=1_000_000,
        help="cut a result's JSON text past N characters, saying so where it is cut "
        "(default: 1000000); a message never exceeds 9 MiB, below the 10 MiB an MCP "
        "TypeScript SDK client takes",
    )
    mcp.add_argument(
        "--workers",
        metavar="N",
        type=parse_workers,
        help="run every call's code in a pool of N worker processes (a crash ends only that "
        "call, as an error); default: in the server's process",
    )
    mcp.set_defaults(handler=cmd_mcp, parser=mcp)

    stress = sub.add_parser(
        "stress",
        help="stress-test your bridge: hostile programs, fuzzed host calls, a compromised guest",
        description="Run quickjail's adversarial corpus (escape attempts, memory bombs, CPU\n"
        "hogs, deep recursion, floods, information leaks, host work on what the\n"
        "program sends) with your bridge, fuzz every bridged host function with\n"
        "hostile arguments, play a compromised guest against the host-call handler\n"
        "(every hostile call refused, nothing charged), and check that\n"
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
        help="write a JUnit XML report: one testcase per corpus program, per fuzzed function "
        "and per compromised-guest move",
    )
    stress.add_argument(
        "--seed",
        metavar="N",
        type=parse_seed,
        help="hypothesis seed, to repeat a run (default: random, printed)",
    )
    stress.add_argument(
        "--examples",
        metavar="N",
        type=parse_count,
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
        "--workers",
        metavar="N",
        type=parse_workers,
        help="run the corpus and the fuzzer's programs in a pool of N worker processes",
    )
    stress.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress; print only the summary and the violations",
    )
    stress.set_defaults(handler=cmd_stress, parser=stress)
    return parser
