"""``quickjail run``: the CLI as a subprocess, on programs written to temp files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECRET = "TOP-SECRET-OUTSIDE-THE-ROOT"

pytestmark = pytest.mark.timeout(60)


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def quickjail(
    *args: str, stdin: str | None = None, cwd: Path | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m quickjail ARGS`` to completion and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "quickjail", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_env(),
        cwd=cwd,
        timeout=timeout,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def start(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "quickjail", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=_env(),
        cwd=cwd,
    )


@pytest.fixture
def write(tmp_path: Path) -> Any:
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


# ---------------------------------------------------------------- success and output


def test_success_prints_reports_then_logs_then_the_result_last(write: Any) -> None:
    prog = write(
        "main.ts",
        """
        report({ step: 1 });
        console.log("log line", { a: 1 }, 2);
        console.error("to stderr");
        const n: number = 21;
        export default async () => { report("step 2"); return { answer: n * 2 } };
    """,
    )
    proc = quickjail("run", str(prog))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        'report: {"step": 1}',
        'report: "step 2"',
        'log line {"a": 1} 2',
        '{"answer": 42}',
    ]
    assert proc.stderr == "to stderr\n"


def test_undefined_result_prints_nothing(write: Any) -> None:
    prog = write("u.js", 'console.log("only this"); export default undefined')
    proc = quickjail("run", str(prog))
    assert (proc.returncode, proc.stdout) == (0, "only this\n")


def test_reports_stream_while_the_program_is_still_running(write: Any) -> None:
    prog = write("spin.js", 'report("started"); while (true) {}')
    proc = start("run", "--timeout", "20", str(prog))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == 'report: "started"\n'
        assert proc.poll() is None, "the report must arrive before the run ends"
    finally:
        proc.kill()
        proc.communicate()


def test_ctrl_c_terminates_the_run_cleanly_with_exit_130(write: Any) -> None:
    prog = write("spin.js", 'report("started"); while (true) {}')
    proc = start("run", str(prog))
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == 'report: "started"\n'
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert time.monotonic() - began < 5
    assert "interrupted" in err
    assert "Traceback" not in err


def test_json_output_has_the_documented_shape_and_json_safe_values(write: Any) -> None:
    prog = write(
        "values.js",
        """
        report(new Uint8Array([1, 2, 3]));
        console.log("hi", 1n);
        export default {
            bytes: new Uint8Array([104, 105]), date: new Date(0), big: 2n ** 70n,
            undef: undefined, set: new Set([3, 1, 2]), mixed: new Set(["b", 1]),
            nan: NaN, inf: -Infinity, map: new Map([[1, "one"]]), nested: [null, true, 1.5],
        };
    """,
    )
    proc = quickjail("run", "--json", str(prog))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1, "one JSON object on one line"
    data = json.loads(proc.stdout)
    assert list(data) == [
        "status",
        "result",
        "error",
        "reason",
        "reports",
        "logs",
        "duration_ms",
        "metrics",
    ]
    assert data["status"] == "success"
    assert (data["error"], data["reason"]) == (None, None)
    assert data["result"] == {
        "bytes": {"$bytes": "aGk="},
        "date": "1970-01-01T00:00:00+00:00",
        "big": 2**70,
        "undef": None,
        "set": [1, 2, 3],
        "mixed": ["b", 1],  # unorderable items: sorted by their JSON text
        "nan": {"$float": "NaN"},
        "inf": {"$float": "-Infinity"},
        "map": {"1": "one"},
        "nested": [None, True, 1.5],
    }
    assert data["reports"] == [{"$bytes": "AQID"}]
    [log] = data["logs"]
    assert (log["level"], log["args"]) == ("log", ["hi", 1])
    assert isinstance(log["timestamp"], float)
    assert data["duration_ms"] > 0
    assert {"wall_ms", "guest_cpu_ms", "peak_memory_bytes", "host_calls", "reports", "logs"} <= set(
        data["metrics"]
    )


# ---------------------------------------------------------------- exit codes per status

STATUS_CASES = [
    pytest.param(
        "boom.js",
        'export default () => { throw new TypeError("boom") }',
        [],
        1,
        "error",
        "boom.js:1:34: TypeError: boom",
        id="error",
    ),
    pytest.param(
        "link.js",
        'import x from "nope"; export default x',
        [],
        3,
        "link_error",
        "cannot find module 'nope'",
        id="link_error",
    ),
    pytest.param(
        "oom.js",
        "export default () => { const a = []; while (true) a.push(new Array(1e5).fill(1)) }",
        ["--memory", "32M"],
        4,
        "memory",
        "out of memory",
        id="memory",
    ),
    pytest.param(
        "spin.js",
        "while (true) {}",
        ["--timeout", "0.2"],
        5,
        "terminated",
        "--timeout 0.2 s",
        id="timeout",
    ),
]


@pytest.mark.parametrize(("name", "source", "flags", "code", "status", "message"), STATUS_CASES)
def test_exit_code_reflects_the_status(
    write: Any, name: str, source: str, flags: list[str], code: int, status: str, message: str
) -> None:
    prog = write(name, source)
    proc = quickjail("run", *flags, str(prog))
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
    assert proc.stdout == ""
    as_json = quickjail("run", "--json", *flags, str(prog))
    assert as_json.returncode == code
    assert json.loads(as_json.stdout)["status"] == status


def test_error_goes_to_stderr_with_file_line_column_in_the_typescript_source(write: Any) -> None:
    prog = write(
        "sub/fail.ts",
        (
            "type Point = { x: number };\n"
            "function f(p: Point): never {\n"
            "  const label: string = `bad ${p.x}`; throw new Error(label);\n"
            "}\n"
            "export default f({ x: 1 });\n"
        ),
    )
    proc = quickjail("run", str(prog))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    # QuickJS places a `new Error(arg)` at its argument; the column counts the type annotation
    assert f"{prog}:3:55: Error: bad 1" in lines
    after = lines[lines.index(f"{prog}:3:55: Error: bad 1") + 1 :]
    assert after and after[0].strip().startswith("at f ")
    as_json = json.loads(quickjail("run", "--json", str(prog)).stdout)
    assert {k: as_json["error"][k] for k in ("name", "message", "line", "column", "filename")} == {
        "name": "Error",
        "message": "bad 1",
        "line": 3,
        "column": 55,
        "filename": str(prog),
    }


def test_missing_default_export_explains_the_fix(write: Any) -> None:
    proc = quickjail("run", "--kind", "module", str(write("noexport.js", "const x = 1;")))
    assert proc.returncode == 1
    assert "--execute" in proc.stderr and "--script" in proc.stderr


@pytest.mark.parametrize(
    "source",
    [
        "const x = 21;\nreturn x * 2",
        "async () => 42",
        "```js\nexport default 42\n```",
        "function main() { return 42 }",
        "6 * 7",
    ],
)
def test_run_reads_any_code_shape_by_default(write: Any, source: str) -> None:
    proc = quickjail("run", str(write("shape.js", source)))
    assert (proc.returncode, proc.stdout.strip()) == (0, "42"), proc.stderr


def test_run_kind_flag_chooses_the_reading(write: Any) -> None:
    path = str(write("ret.js", "return 42"))
    assert quickjail("run", "--kind", "auto", path).stdout.strip() == "42"
    proc = quickjail("run", "--kind", "module", path)
    assert proc.returncode == 1 and "SyntaxError" in proc.stderr
    proc = quickjail("run", "--kind", "module", "--script", path)
    assert proc.returncode == 2 and "contradicts" in proc.stderr


# ---------------------------------------------------------------- capabilities


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "notes.txt").write_text("hello from the host", encoding="utf-8")
    (tmp_path / "secret.txt").write_text(SECRET, encoding="utf-8")
    return root


def test_allow_read_lets_the_program_read_a_file_under_the_dir(write: Any, data_dir: Path) -> None:
    prog = write(
        "read.ts",
        """
        import { readFile, readdir } from "fs";
        const text = await readFile("docs/notes.txt", "utf8");
        export default { text, ls: await readdir("docs") };
    """,
    )
    proc = quickjail("run", "--allow-read", str(data_dir), str(prog))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"text": "hello from the host", "ls": ["notes.txt"]}


def test_allow_read_refuses_a_parent_directory_read(write: Any, data_dir: Path) -> None:
    prog = write(
        "escape.js",
        """
        import { readFile } from "fs";
        export default readFile("../secret.txt", "utf8");
    """,
    )
    proc = quickjail("run", "--allow-read", str(data_dir), str(prog))
    assert proc.returncode == 1
    assert SECRET not in proc.stdout + proc.stderr
    assert str(data_dir) not in proc.stderr
    assert "../secret.txt" in proc.stderr


def test_without_allow_read_there_is_no_fs_module(write: Any) -> None:
    proc = quickjail("run", str(write("fs.js", 'import { readFile } from "fs"; export default 1')))
    assert proc.returncode == 3
    assert "--allow-read" in proc.stderr


def test_dynamic_code_is_refused_unless_allowed(write: Any) -> None:
    prog = write("eval.js", 'export default eval("1 + 1")')
    assert quickjail("run", str(prog)).returncode == 1
    allowed = quickjail("run", "--allow-dynamic-code", str(prog))
    assert (allowed.returncode, allowed.stdout) == (0, "2\n")


def test_global_and_module_flags_bridge_data_and_relative_modules(write: Any) -> None:
    util = write("lib/util.ts", "export const double = (x: number): number => x * 2;")
    prog = write("main.ts", 'import { double } from "./util.ts";\nexport default double(LIMIT);')
    proc = quickjail("run", "--global", "LIMIT=21", "--module", f"./util.ts={util}", str(prog))
    assert (proc.returncode, proc.stdout) == (0, "42\n"), proc.stderr


# ---------------------------------------------------------------- entry and inputs


def test_execute_calls_the_named_export_with_json_args(write: Any) -> None:
    prog = write("sum.js", "export function main(xs, k) { return xs.reduce((a, b) => a + b) * k }")
    proc = quickjail("run", str(prog), "--execute", "main", "--arg", "[1,2]", "--arg", "10")
    assert (proc.returncode, proc.stdout) == (0, "30\n"), proc.stderr


def test_program_from_stdin(tmp_path: Path) -> None:
    proc = quickjail(
        "run", "-", stdin="const x: number = 40;\nexport default x + 2;\n", cwd=tmp_path
    )
    assert (proc.returncode, proc.stdout) == (0, "42\n"), proc.stderr


def test_script_mode_returns_the_completion_value_from_stdin(tmp_path: Path) -> None:
    proc = quickjail(
        "run", "--script", "--language", "javascript", "-", stdin="1 + 1", cwd=tmp_path
    )
    assert (proc.returncode, proc.stdout) == (0, "2\n"), proc.stderr


def test_typescript_is_the_default_except_for_js_files(write: Any) -> None:
    source = "const n: number = 7;\nexport default n;\n"
    assert quickjail("run", str(write("t.ts", source))).stdout == "7\n"
    assert quickjail("run", str(write("t.mts", source))).stdout == "7\n"
    as_js = quickjail("run", str(write("t.js", source)))
    assert as_js.returncode == 1 and "SyntaxError" in as_js.stderr
    forced = quickjail("run", "--language", "typescript", str(write("t2.js", source)))
    assert forced.stdout == "7\n"


def test_deterministic_and_seed_make_math_random_repeatable(write: Any) -> None:
    prog = write("rand.js", "export default [Math.random(), Math.random()]")
    first = quickjail("run", "--deterministic", str(prog)).stdout
    assert first == quickjail("run", "--deterministic", str(prog)).stdout
    assert first == quickjail("run", "--seed", "0", str(prog)).stdout
    assert quickjail("run", "--seed", "7", str(prog)).stdout not in ("", first)


# every character a terminal acts on, as the program writes it (JS escapes), and as Python sees it
_CONTROLS_JS = r"\x1b]52;c;cHduZWQ=\x07 \x1b[2J \x9b31m \u202e \u2066 \r \b \x7f"
_CONTROLS_TEXT = "\x1b]52;c;cHduZWQ=\x07 \x1b[2J \x9b31m \u202e \u2066 \r \b \x7f"
_CONTROLS = ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\r", "\b", "\x7f"]


def _run_raw(*args: str) -> tuple[int, str, str]:
    """``quickjail ARGS`` with its output decoded as is (no newline translation)."""
    proc = subprocess.run(
        [sys.executable, "-m", "quickjail", *args],
        capture_output=True,
        env=_env(),
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")


def test_text_mode_shows_terminal_control_sequences_as_escapes(write: Any) -> None:
    source = f"""const s = "{_CONTROLS_JS}";
        console.log(s); console.error(s); report(s); report({{ s }});
        export const ok = () => s;
        export default function () {{ const e = new Error(s); e.name = "E" + s; throw e; }}"""
    prog = write("ctl.js", source)
    failing = _run_raw("run", str(prog))
    ok = _run_raw("run", "--execute", "ok", str(prog))
    for _code, out, err in (failing, ok):
        for stream in (out, err):
            assert not [c for c in _CONTROLS if c in stream], stream
    assert (failing[0], ok[0]) == (1, 0), (failing[2], ok[2])
    assert "\\x1b]52;c;cHduZWQ=\\x07" in failing[1]  # shown, not acted on
    assert "\\u202e" in failing[2] and "E\\x1b]52" in failing[2]
    # a value printed as JSON is still JSON, with the same value
    assert json.loads(ok[1].splitlines()[-1]) == _CONTROLS_TEXT


def test_json_mode_keeps_the_program_text_exact(write: Any) -> None:
    prog = write("ctl.js", f'const s = "{_CONTROLS_JS}"; console.log(s); export default s;')
    code, out, err = _run_raw("run", "--json", str(prog))
    assert code == 0, err
    data = json.loads(out)
    assert data["result"] == _CONTROLS_TEXT and data["logs"][0]["args"] == [_CONTROLS_TEXT]


# ---------------------------------------------------------------- usage errors

USAGE_CASES = [
    pytest.param(["run", "--memory", "lots", "{prog}"], "e.g. 64M or 1G", id="bad-memory"),
    pytest.param(["run", "--memory", "1K", "{prog}"], "8M up to 4G", id="memory-too-small"),
    pytest.param(
        ["run", "--timeout", "-1", "{prog}"], "positive number of seconds", id="bad-timeout"
    ),
    pytest.param(["run", "{missing}"], "does not exist; check the path", id="missing-file"),
    pytest.param(["run", "{dir}"], "is a directory; give a file", id="file-is-dir"),
    pytest.param(
        ["run", "--arg", "notes.txt", "{prog}"], "strings need JSON quotes", id="arg-not-json"
    ),
    pytest.param(
        ["run", "--script", "--execute", "main", "{prog}"],
        "drop --script or --execute",
        id="script-with-execute",
    ),
    pytest.param(
        ["run", "--allow-read", "{missing}", "{prog}"],
        "is not a directory",
        id="allow-read-missing",
    ),
    pytest.param(
        ["run", "--module", "util.ts=x", "{prog}"], "./SPECIFIER=FILE", id="module-not-relative"
    ),
    pytest.param(["run", "--seed", "-3", "{prog}"], "from 0 to 2**64-1", id="bad-seed"),
    pytest.param(["run", "--language", "python", "{prog}"], "invalid choice", id="bad-language"),
    pytest.param(
        ["mcp", "--timeout", "20", "--max-timeout", "5"],
        "lower --timeout or raise --max-timeout",
        id="mcp-timeout-above-max",
    ),
    pytest.param(
        ["mcp", "--allow-read", "{missing}"], "is not a directory", id="mcp-allow-read-missing"
    ),
    pytest.param([], "name a command: run, mcp or stress", id="no-command"),
    pytest.param(["run"], "the following arguments are required: FILE", id="no-file"),
    pytest.param(["run", "--bogus", "{prog}"], "unrecognized arguments: --bogus", id="bad-flag"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_CASES)
def test_usage_errors_exit_2_and_say_what_to_change(
    tmp_path: Path, write: Any, argv: list[str], message: str
) -> None:
    prog = write("ok.js", "export default 1")
    names = {"prog": str(prog), "missing": str(tmp_path / "missing.js"), "dir": str(tmp_path)}
    proc = quickjail(*(a.format(**names) for a in argv))
    assert proc.returncode == 2, proc.stderr
    # one line saying what to change and one hint, as common command lines print them
    error, hint = proc.stderr.splitlines()
    assert message in error
    command = "quickjail run" if argv[:1] == ["run"] else "quickjail mcp" if argv else "quickjail"
    assert error.startswith(f"{command}: error: ")
    assert hint == f"Try '{command} --help' for more information."
    assert proc.stdout == ""


def test_help_documents_every_exit_code_and_the_log_timing() -> None:
    proc = quickjail("run", "--help")
    assert proc.returncode == 0
    for line in (
        "0    success",
        "1    the program threw",
        "2    usage error",
        "3    link error",
        "4    the program exceeded --memory",
        "5    the run was stopped",
        "130  interrupted by Ctrl-C",
    ):
        assert line in proc.stdout
    assert "console.* output is printed when the run ends" in proc.stdout
    for flag in (
        "--allow-read",
        "--timeout",
        "--memory",
        "--execute",
        "--arg",
        "--script",
        "--language",
        "--seed",
        "--deterministic",
        "--allow-dynamic-code",
        "--json",
    ):
        assert flag in proc.stdout


def test_public_surface() -> None:
    import quickjail

    assert sorted(quickjail.__all__) == [
        "CodeExecution",
        "CodeResult",
        "StressReport",
        "UNDEFINED",
        "Violation",
        "bridge",
        "resume",
        "resume_sync",
        "run_code",
        "run_code_sync",
        "run_stress",
        "runtime",
        "sandbox",
        "to_json_safe",
    ]
