"""Run the fuzzers: generated cases through ``qjfuzz``, random op sequences through ``heapfuzz``.

``python -m fuzz --seconds 600`` (``make fuzz``) or ``--iterations N`` (the smoke test). Every
``--report-every`` seconds, and at the end, one summary line goes to stdout and to ``--log``::

    2026-11-28T20:40:00Z fuzz: elapsed=300s cases=1234 heap_runs=12 heap_ops=2400000 \
guest_fail=3 hangs=0 crashes=0 distinct=0

A crash (a sanitizer report, a failed harness check, a signal) is minimized (statements and
tape entries dropped while the same crash remains) and saved under ``--findings``: one folder
per distinct crash with ``case.bin`` (replay: ``.build/fuzz/qjfuzz case.bin``), ``source.js``
and ``report.txt``. The exit status is 1 when any crash was found, else 0.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from fuzz import build, gen

__all__ = ["Fuzzer", "Stats", "main", "signature"]

ENV = {
    "ASAN_OPTIONS": "exitcode=99:detect_leaks=0:allocator_may_return_null=1:"
    "hard_rss_limit_mb=2048:handle_abort=1",
    "UBSAN_OPTIONS": "exitcode=98:print_stacktrace=1",
}
OK, GUEST_FAIL, HANG = 0, 77, 128 + 14  # harness.c's statuses; a hang is SIGALRM
HEAP_LIMIT_MIB = 128


@dataclass
class Stats:
    """What a run did, for the summary lines."""

    started: float = field(default_factory=time.monotonic)
    cases: int = 0
    heap_runs: int = 0
    heap_ops: int = 0
    guest_fail: int = 0
    hangs: int = 0
    crashes: int = 0
    distinct: set[str] = field(default_factory=set)

    def line(self) -> str:
        """The summary line, timestamped (UTC)."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return (
            f"{now} fuzz: elapsed={time.monotonic() - self.started:.0f}s cases={self.cases}"
            f" heap_runs={self.heap_runs} heap_ops={self.heap_ops}"
            f" guest_fail={self.guest_fail} hangs={self.hangs} crashes={self.crashes}"
            f" distinct={len(self.distinct)}"
        )


def signature(report: str, status: int) -> str:
    """A short name for a crash: its kind and the first frame in our own C, when there is one."""
    kind = f"status {status}"
    for pattern in (
        r"ERROR: AddressSanitizer: ([\w-]+)",
        r"runtime error: ([^\n]{0,80})",
        r"(qjfuzz: [^\n]{0,80})",
        r"(heapfuzz: op \d+: [^\n(]{0,80})",
    ):
        m = re.search(pattern, report)
        if m:
            kind = re.sub(r"\d+", "N", m.group(1)) if "heapfuzz" in pattern else m.group(1)
            break
    frame = re.search(r"in (\w+) [^\n]*(?:_guest|native)/(\w+\.c):(\d+)", report)
    where = f" at {frame.group(2)}:{frame.group(1)}" if frame else ""
    return f"{kind}{where}"


class Fuzzer:
    """One ``qjfuzz`` fork server, fed case files; restarted if it ever dies itself."""

    def __init__(self, exe: Path, work: Path) -> None:
        self.exe = exe
        self.work = work
        self.err_path = work / "stderr.txt"
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.err = self.err_path.open("w+b")
            self.proc = subprocess.Popen(
                [str(self.exe)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.err,
                text=True,
                env={**os.environ, **ENV},
            )
        return self.proc

    def run(self, data: bytes) -> tuple[int, str]:
        """Run one case: (status, what the sanitizers or the harness wrote)."""
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        path = self.work / "case.bin"
        path.write_bytes(data)
        self.err.seek(0)
        self.err.truncate()
        proc.stdin.write(f"{path}\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        self.err.seek(0)
        report = self.err.read(1 << 20).decode("utf-8", "replace")
        if not line.startswith("status "):
            self.close()
            return 1000, report + "\nqjfuzz: the fork server itself ended"
        return int(line.split()[1]), report

    def close(self) -> None:
        """End the fork server (idempotent)."""
        if self.proc is not None:
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()
            self.proc.wait()
            self.proc = None
            self.err.close()


def minimize(fuzzer: Fuzzer, case: gen.Case, sig: str, budget: int = 80) -> gen.Case:
    """Drop statements, then tape entries, one at a time while the crash stays the same."""
    for attr in ("statements", "tape", "modules"):
        i = 0
        while i < len(getattr(case, attr)) and budget > 0:
            items: list[object] = list(getattr(case, attr))
            trial = replace(case)
            setattr(trial, attr, items[:i] + items[i + 1 :])
            budget -= 1
            status, report = fuzzer.run(trial.encode())
            if status not in (OK, GUEST_FAIL, HANG) and signature(report, status) == sig:
                case = trial
            else:
                i += 1
    return case


def save(findings: Path, sig: str, data: bytes, source: str, report: str) -> Path:
    """One folder per distinct crash."""
    name = re.sub(r"[^\w.-]+", "-", sig)[:60] + "-" + hashlib.sha256(sig.encode()).hexdigest()[:8]
    folder = findings / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.bin").write_bytes(data)
    (folder / "source.js").write_text(source, errors="surrogateescape")
    (folder / "report.txt").write_text(f"{sig}\n\n{report}")
    return folder


def heap_run(exe: Path, seed: int, ops: int) -> tuple[int, str]:
    """One ``heapfuzz`` run: (exit status, its stderr)."""
    proc = subprocess.run(
        [str(exe), str(seed), str(ops), str(HEAP_LIMIT_MIB)],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
    )
    return proc.returncode, proc.stderr


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (``python -m fuzz --help``)."""
    ap = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, help="run this long (default 600 unless --iterations)")
    ap.add_argument("--iterations", type=int, help="run this many generated cases")
    ap.add_argument("--seed", type=int, default=None, help="the first case's seed (default: time)")
    ap.add_argument("--log", type=Path, help="append the summary lines here too")
    ap.add_argument("--findings", type=Path, default=build.BUILD_DIR / "findings")
    ap.add_argument("--build-dir", type=Path, default=build.BUILD_DIR, help="where to build")
    ap.add_argument("--report-every", type=float, default=60.0, help="seconds between summaries")
    ap.add_argument("--heap-every", type=int, default=25, help="cases per heapfuzz run")
    ap.add_argument("--heap-ops", type=int, default=100_000, help="ops per heapfuzz run")
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None else (None if args.iterations else 600.0)
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 2**40
    log = args.log.open("a", buffering=1) if args.log else None

    def say(text: str) -> None:
        print(text, flush=True)
        if log:
            log.write(text + "\n")

    qjfuzz, heapfuzz = build.build_all(args.build_dir)
    stats = Stats()
    say(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} fuzz: start seed={seed} qjfuzz={qjfuzz}")
    last = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="qjfuzz-") as tmp:
        fuzzer = Fuzzer(qjfuzz, Path(tmp))
        try:
            while True:
                if args.iterations is not None and stats.cases >= args.iterations:
                    break
                if seconds is not None and time.monotonic() - stats.started >= seconds:
                    break
                case = gen.generate(seed + stats.cases)
                data = case.encode()
                status, report = fuzzer.run(data)
                stats.cases += 1
                if status == GUEST_FAIL:
                    stats.guest_fail += 1
                elif status == HANG:
                    stats.hangs += 1
                    save(args.findings / "hangs", f"hang-{case.seed}", data, case.source(), "")
                elif status != OK:
                    stats.crashes += 1
                    sig = signature(report, status)
                    if sig not in stats.distinct:
                        stats.distinct.add(sig)
                        small = minimize(fuzzer, case, sig)
                        folder = save(args.findings, sig, small.encode(), small.source(), report)
                        say(f"crash: {sig} (seed {case.seed}) -> {folder}")
                if stats.cases % args.heap_every == 0:
                    heap_seed = seed + stats.cases
                    status, report = heap_run(heapfuzz, heap_seed, args.heap_ops)
                    stats.heap_runs += 1
                    stats.heap_ops += args.heap_ops
                    if status != 0:
                        stats.crashes += 1
                        sig = signature(report, status)
                        cmd = f"{heapfuzz} {heap_seed} {args.heap_ops} {HEAP_LIMIT_MIB}"
                        if sig not in stats.distinct:
                            stats.distinct.add(sig)
                            folder = save(args.findings, sig, b"", cmd + "\n", report)
                            say(f"crash: {sig} ({cmd}) -> {folder}")
                if time.monotonic() - last >= args.report_every:
                    last = time.monotonic()
                    say(stats.line())
        finally:
            fuzzer.close()
    say(stats.line())
    for sig in sorted(stats.distinct):
        say(f"distinct crash: {sig}")
    if log:
        log.close()
    return 1 if stats.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
