"""Executors: what a run costs on a worker process (and on Ray, when installed) against the
same run in this process, and the throughput of many small runs on a pool.

- **per-run overhead**: a fresh ``export default 1+1``, a run making 100 sync host calls
  (per call: minus the same loop without them), and a 1 MiB string result, each timed
  round-robin in this process and on the executor through the sync API; the cell is the
  executor's median and its ratio to in-process.
- **throughput**: the same number of ``fib(18)`` (small, ~1 ms) or ``fib(22)`` (medium, ~7×
  the work) runs done by this process on one thread (the single-process rate: the GIL makes
  more threads no faster, see the throughput row), then by a ``ProcessPool`` of N workers
  (N = the machine's cores) fed by 2·N threads calling the sync API; the value is rate on the
  pool / rate in-process, median of three alternating rounds. Issue 14's goal is ≥ 0.8 × N.
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks._engines import NG, RS, BenchFailure, qj
from benchmarks._harness import Config
from benchmarks._report import Cell, Row, Target, attempt, compare, fmt_time
from benchmarks._throughput import FIB, FIB_N

__all__ = ["rows"]

HERE, THERE = "in-process", "executor"
CALLS = 100
MEDIUM_FIB_N = 22  # ~7× the work of the small runs' fib(18)
MiB = 2**20
_NO_PEERS = {NG: Cell(display="—"), RS: Cell(display="—")}


def add(a: int, b: int) -> int:
    return a + b


@contextlib.contextmanager
def _executors() -> Iterator[list[tuple[str, Any]]]:
    """The executors to measure, started and warm: a pool, and Ray when it is installed."""
    from quickjail.executors import ProcessPool

    with contextlib.ExitStack() as stack:
        found: list[tuple[str, Any]] = [
            ("ProcessPool", stack.enter_context(ProcessPool(workers=os.cpu_count() or 1)))
        ]
        ray_executor = _ray(stack)
        if ray_executor is not None:
            found.append(("Ray (local cluster)", ray_executor))
        for _, executor in found:
            qj("export default 1", executor=executor)  # start and warm the workers
        yield found


def _ray(stack: contextlib.ExitStack) -> Any:
    try:
        import ray  # type: ignore[import-not-found,unused-ignore]

        from quickjail.executors import RayExecutor
    except ImportError:
        return None
    if not ray.is_initialized():
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only
        ray.init(
            num_cpus=os.cpu_count() or 1,
            object_store_memory=128 * MiB,
            include_dashboard=False,
            log_to_driver=False,
        )
        stack.callback(ray.shutdown)
    return stack.enter_context(RayExecutor(actors=os.cpu_count() or 1))


def _overhead_rows(cfg: Config, failures: list[str], name: str, executor: Any) -> list[Row]:
    big = 4096 if cfg.dry else MiB
    calls = 3 if cfg.dry else CALLS
    loop = "let s = 0; for (let i = 0; i < {n}; i++) s = {step}; export default s;"
    with_calls = loop.format(n=calls, step="await add(s, 1)")
    without = loop.format(n=calls, step="await (s + 1)")
    measures: list[tuple[str, str, Callable[[Any], Any], int]] = [
        (
            "fresh",
            "fresh run `export default 1+1`",
            lambda ex: qj("export default 1+1", executor=ex),
            1,
        ),
        (
            "hostcall",
            f"sync host call, per call ({calls} per run)",
            lambda ex: qj(with_calls, globals={"add": add}, executor=ex),
            calls,
        ),
        (
            "result",
            f"{big // 1024} KiB string result",
            lambda ex: qj(f'export default "x".repeat({big})', executor=ex),
            1,
        ),
    ]
    out: list[Row] = []
    for key, measure, run, per in measures:
        runs: dict[str, Callable[[], Any]] = {
            HERE: functools.partial(run, None),
            THERE: functools.partial(run, executor),
        }
        if key == "hostcall":
            runs |= {
                f"{HERE}:empty": lambda: qj(without, globals={"add": add}),
                f"{THERE}:empty": lambda: qj(without, globals={"add": add}, executor=executor),
            }
        cells = compare(cfg, failures, f"executor_{key}", runs)
        out.append(
            Row(
                f"executor_{key}_{name.split()[0].lower()}",
                f"{name}: {measure}",
                "time",
                _overhead(cells, per, key == "hostcall"),
                _NO_PEERS,
                None,
                ratios=False,
                note=f"{name} vs the same run in this process, round-robin, sync API; the cell "
                "is the executor's median and its ratio to in-process.",
            )
        )
    return out


def _overhead(cells: dict[str, Cell], per: int, subtract: bool) -> Cell:
    def value(side: str) -> float | None:
        cell = cells[side]
        if cell.stats is None or not cell.ok:
            return None
        if not subtract:
            return cell.stats.median_ns
        empty = cells[f"{side}:empty"]
        if empty.stats is None or not empty.ok:
            return None
        return (cell.stats.median_ns - empty.stats.median_ns) / per

    here, there = value(HERE), value(THERE)
    if here is None or there is None:
        return Cell(error=cells[THERE].error or cells[HERE].error or "not measured")
    ratio = there / here if here > 0 else float("inf")
    return Cell(
        there,
        display=f"{fmt_time(there)} ({ratio:.2f}× in-process {fmt_time(here)})",
        extra={"in_process_ns": here, "executor_ns": there, "ratio": ratio},
    )


def _rate(run: Callable[[], Any], runs: int, threads: int, expected: Any) -> float:
    """Runs per second doing ``runs`` runs from ``threads`` threads."""

    def batch(count: int) -> None:
        for _ in range(count):
            if run() != expected:
                raise BenchFailure("a run returned something else")

    t0 = time.perf_counter()
    if threads == 1:
        batch(runs)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            futures = [pool.submit(batch, runs // threads) for _ in range(threads)]
            for fut in futures:
                fut.result()
    return (runs - runs % threads) / (time.perf_counter() - t0)


def _fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def _throughput(cfg: Config, executor: Any, workers: int, n: int) -> Cell:
    module = f"{FIB}\nexport default fib({n});"
    value = _fib(n)

    def here() -> Any:
        return qj(module)

    def there() -> Any:
        return qj(module, executor=executor)

    here()
    t0 = time.perf_counter()
    for _ in range(5):
        here()
    one = (time.perf_counter() - t0) / 5
    runs = 8 if cfg.dry else max(40, min(4000, int(1.5 / one)))
    runs -= runs % (2 * workers)
    rounds = 1 if cfg.dry else 3
    single: list[float] = []
    pooled: list[float] = []
    for _ in range(rounds):
        single.append(_rate(here, runs, 1, value))
        pooled.append(_rate(there, runs, 2 * workers, value))
    r1, rn = statistics.median(single), statistics.median(pooled)
    speedup = rn / r1
    return Cell(
        speedup,
        display=f"{speedup:.2f}× ({r1:,.0f} → {rn:,.0f} runs/s, {workers} workers, "
        f"{fmt_time(1e9 / r1)} per run in-process)",
        extra={"runs": runs, "rounds": rounds, "in_process_per_s": single, "pool_per_s": pooled},
    )


def _pool_throughput(cfg: Config, workers: int, n: int) -> Cell:
    """A throughput row on a pool of its own, measured before Ray starts: Ray's daemons
    take CPU time of their own even when idle, which is not the pool's cost."""
    from quickjail.executors import ProcessPool

    with ProcessPool(workers=workers) as pool:
        qj("export default 1", executor=pool)  # start and warm the workers
        return _throughput(cfg, pool, workers, n)


def _throughput_row(cfg: Config, failures: list[str], workers: int, size: str, n: int) -> Row:
    return Row(
        f"executor_pool_throughput{'' if n == FIB_N else f'_fib{n}'}",
        f"throughput, many {size} runs: ProcessPool({workers}) vs one process",
        "factor",
        attempt(lambda: _pool_throughput(cfg, workers, n), failures, f"pool_throughput_{n}"),
        _NO_PEERS,
        Target(">=", 0.8 * workers, f"≥ {0.8 * workers:.1f}× (0.8 × {workers} cores)"),
        ratios=False,
        note=f"`fib({n})` runs: one thread in this process, then 2 × {workers} "
        "threads on the pool (nothing else running); value = pool rate / in-process rate, "
        "median of 3. The caller shares the cores with the workers: each pool run costs it "
        "a fixed share of CPU time (benchmarks/README.md, *Executors*).",
    )


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    workers = os.cpu_count() or 1
    throughput = [
        _throughput_row(cfg, failures, workers, "small", FIB_N),
        _throughput_row(cfg, failures, workers, "medium", MEDIUM_FIB_N),
    ]
    out: list[Row] = []
    with _executors() as executors:
        for name, executor in executors:
            out += _overhead_rows(cfg, failures, name, executor)
    return [*out, *throughput]
