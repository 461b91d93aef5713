"""Row 10: throughput of many small runs on one worker thread versus two.

The same number of runs of a tiny kernel (``fib(18)``, about a millisecond) is done by one
thread, then split over two threads calling the sync API; the row is the speed-up (time on
one / time on two). It only approaches 2× if the engine leaves the GIL while the guest runs.
The run count is sized so the one-worker phase takes about 1.5 s; the phases alternate and
each figure is the median of three.

A control row splits GIL-free work (``hashlib.sha256`` over 8 MiB) the same way: on a shared
or CPU-capped machine it shows how much parallelism there was to be had during the run.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks._engines import NG, RS, BenchFailure, ng_eval, qj, rs_eval
from benchmarks._harness import Config
from benchmarks._report import Cell, Row, Target, attempt

__all__ = ["rows"]

FIB = "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }"
FIB_N, FIB_VALUE = 18, 2584


def _batch(run: Callable[[], Any], count: int, expected: Any) -> None:
    for _ in range(count):
        if run() != expected:
            raise BenchFailure("a run returned something else")


def _phase(
    run: Callable[[], Any], runs: int, workers: int, pool: ThreadPoolExecutor, expected: Any
) -> int:
    share = runs // workers
    t0 = time.perf_counter_ns()
    if workers == 1:
        _batch(run, runs, expected)
    else:
        for fut in [pool.submit(_batch, run, share, expected) for _ in range(workers)]:
            fut.result()
    return time.perf_counter_ns() - t0


def _scaling(
    cfg: Config, run: Callable[[], Any], expected: Any = FIB_VALUE, max_runs: int = 2000
) -> Cell:
    _batch(run, 3, expected)
    t0 = time.perf_counter_ns()
    _batch(run, 10, expected)
    one = max((time.perf_counter_ns() - t0) / 10, 1)
    runs = 4 if cfg.dry else max(20, min(max_runs, int(1.5e9 / one)))
    runs -= runs % 2
    rounds = 1 if cfg.dry else 3
    single: list[int] = []
    double: list[int] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(rounds):
            single.append(_phase(run, runs, 1, pool, expected))
            double.append(_phase(run, runs, 2, pool, expected))
    t1, t2 = statistics.median(single), statistics.median(double)
    rate1, rate2 = runs / (t1 / 1e9), runs / (t2 / 1e9)
    speedup = t1 / t2
    return Cell(
        speedup,
        display=f"{speedup:.2f}× ({rate1:,.0f} → {rate2:,.0f} /s)",
        extra={
            "runs": runs,
            "rounds": rounds,
            "one_worker_ns": single,
            "two_workers_ns": double,
            "runs_per_s_1": rate1,
            "runs_per_s_2": rate2,
        },
    )


def _control(cfg: Config) -> Cell:
    """The same split for work that certainly runs in parallel: hashing, which drops the GIL."""
    data = b"\x5a" * ((1 << 16) if cfg.dry else (8 << 20))
    digest = hashlib.sha256(data).digest()
    return _scaling(cfg, lambda: hashlib.sha256(data).digest(), expected=digest)


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    module = f"{FIB}\nexport default fib({FIB_N});"
    script = f"{FIB}\nfib({FIB_N})"
    control = Row(
        "parallel_control",
        "control: GIL-free work (sha256), 2 threads vs 1",
        "factor",
        attempt(lambda: _control(cfg), failures, "parallel_control/host"),
        {NG: Cell(display="—"), RS: Cell(display="—")},
        None,
        ratios=False,
        note="the parallelism this machine actually gave during the run (other load, CPU "
        "quota); the throughput row cannot exceed it, so read that row against this one.",
    )
    throughput = Row(
        "throughput",
        "throughput, many small runs: 2 workers vs 1",
        "factor",
        attempt(lambda: _scaling(cfg, lambda: qj(module)), failures, "throughput/quickjail"),
        {
            NG: attempt(
                lambda: _scaling(cfg, lambda: ng_eval(script)), failures, "throughput/quickjs-ng"
            ),
            RS: attempt(
                lambda: _scaling(cfg, lambda: rs_eval(script)), failures, "throughput/quickjs-rs"
            ),
        },
        Target(">=", 1.8, "≥ 1.8×"),
        ratios=False,
        note=f"fresh sandbox/context per run of `fib({FIB_N})`; threads calling the sync API; "
        "value = time on 1 thread / time on 2 threads for the same run count.",
    )
    return [throughput, control]
