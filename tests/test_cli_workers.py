"""``--workers N``: the CLI commands run programs in a pool of worker processes, with the same
output and exit codes as in-process, and leave no worker behind."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped,unused-ignore]
import pytest
from test_cli import quickjail, start

pytestmark = pytest.mark.timeout(120)

WORKER = "quickjail.executors._worker"


def _workers_of(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for child in children:
        try:
            if WORKER in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


@pytest.fixture
def program(tmp_path: Path) -> Any:
    def write(text: str, name: str = "main.ts") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.mark.parametrize(
    "source",
    [
        'report({ step: 1 }); console.log("line", 2); export default { answer: 6 * 7 }',
        "const n: number = 1; export default n.toFixed(2)",
        'throw new TypeError("bad")',
        "export default new Uint8Array([1, 2, 3])",
    ],
    ids=["reports-logs-result", "typescript", "error", "bytes"],
)
def test_a_run_on_workers_prints_what_an_in_process_run_prints(program: Any, source: str) -> None:
    path = program(source)
    here = quickjail("run", str(path), timeout=60)
    pooled = quickjail("run", "--workers", "1", str(path), timeout=60)
    assert (pooled.returncode, pooled.stdout, pooled.stderr) == (
        here.returncode,
        here.stdout,
        here.stderr,
    )
    as_json = quickjail("run", "--workers", "2", "--json", str(path), timeout=60)
    assert as_json.returncode == here.returncode


def test_a_timeout_on_workers_exits_5_as_in_process(program: Any) -> None:
    path = program("while (true) {}", "spin.js")
    proc = quickjail("run", "--workers", "1", "--timeout", "0.3", str(path), timeout=60)
    assert proc.returncode == 5, proc.stderr
    assert "terminated" in proc.stderr


def test_the_program_runs_in_a_worker_and_ctrl_c_leaves_none_behind(program: Any) -> None:
    path = program('report("started"); while (true) {}', "spin.js")
    proc = start("run", "--workers", "1", str(path))
    workers: list[psutil.Process] = []
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == 'report: "started"\n'
        workers = _workers_of(proc.pid)
        assert len(workers) == 1  # the guest runs there, not in the CLI's process
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 30
    while any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers):
        assert time.monotonic() < deadline, "a worker outlived the CLI"
        time.sleep(0.05)


@pytest.mark.parametrize("bad", ["0", "-1", "257", "two"])
def test_a_bad_worker_count_is_a_usage_error(program: Any, bad: str) -> None:
    proc = quickjail("run", "--workers", bad, str(program("export default 1")))
    assert proc.returncode == 2
    assert "--workers" in proc.stderr and "worker count" in proc.stderr


def test_help_lists_workers_on_every_command() -> None:
    for command in ("run", "mcp", "stress"):
        proc = quickjail(command, "--help")
        assert proc.returncode == 0
        assert "--workers N" in proc.stdout, command
