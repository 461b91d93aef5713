"""Limits: how fast a timeout, a memory cap and ``terminate`` stop a run, and what fuel costs.

- **timeout**: ``while(true){}`` with ``timeout=0.1``, wall time of the whole run (fresh
  sandbox included), 20 samples round-robin with the peers; every sample checks status
  ``terminated`` / reason ``timeout``. quickjs-rs: ``new_context(timeout=0.1)`` (wall clock,
  ``TimeoutError``); native quickjs-ng: ``Context.set_time_limit(0.1)``, which counts the
  process's CPU time (C ``clock()``) and ends in ``InternalError: interrupted``.
- **memory cap**: a runaway allocation under a 64 MiB cap, time until the run ends with status
  ``memory``, and the host's RSS growth: the largest RSS seen by a thread sampling every 1 ms
  during the runs, minus the RSS before them (after a trivial warm-up run). Each engine runs
  in its own child process (``python -m benchmarks._limits memory ENGINE N``) so one engine's
  heap cannot hide in another's. The kernel's own peak (``VmHWM``, reset before the runs) is
  kept in the JSON as a cross-check of the sampler.
- **terminate**: ``run = bridge.run_code("while(true){}")`` driven by a task in an anyio
  task group; 50 ms later another task calls ``run.terminate(...)``; the sample is the time
  from that call until ``await run`` has returned in the driving task.
- **fuel metering**: the seven compute kernels with ``fuel=10**12`` against the same kernels
  without fuel (round-robin, fresh sandbox per sample); the row is the ratio of medians.
  ``fuel=`` runs on a second, fuel-metered wasmtime engine. Epoch interruption (what the
  timeout and ``terminate`` use) is always on and has no switch, so its cost is already in
  every compute row and is not isolated here.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import anyio

from benchmarks._engines import NG, QUICKJAIL, RS, BenchFailure, rs_eval
from benchmarks._harness import REPO_ROOT, Config, Stats
from benchmarks._kernels import KERNELS, Kernel, module_source
from benchmarks._report import Cell, Row, Target, attempt, compare, fmt_time, geomean
from quickjail import bridge

__all__ = ["rows"]

SPIN = "while(true){}"
BOMB = "const a = []; for (;;) a.push(new Array(1e5).fill(1.5));"
CAP = 64 * 2**20
TIMEOUT_S = 0.1
TIMEOUT_SAMPLES = 20
MEMORY_SAMPLES = 10
RS_MEMORY_SAMPLES = 3
TERMINATE_SAMPLES = 20
TERMINATE_AFTER_S = 0.05
FUEL = 10**12
MiB = 2**20
_MODULES = {QUICKJAIL: "quickjail.sandbox", NG: "quickjs", RS: "quickjs_rs"}


# ------------------------------------------------------------------ timeout


def _qj_timeout() -> None:

    res = bridge.run_code_sync(SPIN, timeout=TIMEOUT_S)
    if res.status != "terminated" or res.reason != "timeout":
        raise BenchFailure(f"expected terminated/timeout, got {res.status}/{res.reason}")


def _ng_timeout() -> None:
    import quickjs  # type: ignore[import-untyped]

    ctx = quickjs.Context()
    ctx.set_time_limit(TIMEOUT_S)
    try:
        ctx.eval(SPIN)
    except quickjs.JSException as exc:
        if "interrupted" in str(exc):
            return
        raise BenchFailure(f"expected 'interrupted', got {exc}") from None
    raise BenchFailure("the endless loop returned")


def _rs_timeout() -> None:
    import quickjs_rs

    try:
        rs_eval(SPIN, limit_s=TIMEOUT_S)
    except quickjs_rs.TimeoutError:
        return
    raise BenchFailure("the endless loop returned")


def _timeout_rows(cfg: Config, failures: list[str]) -> list[Row]:
    twenty = (
        cfg
        if cfg.dry
        else dataclasses.replace(cfg, min_reps=TIMEOUT_SAMPLES, max_reps=TIMEOUT_SAMPLES)
    )
    cells = compare(
        twenty,
        failures,
        "limits_timeout",
        {QUICKJAIL: _qj_timeout, NG: _ng_timeout, RS: _rs_timeout},
    )

    def worst(cell: Cell) -> Cell:
        if cell.stats is None or not cell.ok:
            return Cell(error=cell.error or "not measured")
        return Cell(cell.stats.max_ns, extra={"n": cell.stats.n})

    n = TIMEOUT_SAMPLES if not cfg.dry else 1
    how = (
        "quickjail: `run_code_sync(..., timeout=0.1)`, status/reason checked on every "
        "sample; quickjs-rs: `new_context(timeout=0.1)` (wall clock); native quickjs-ng: "
        "`set_time_limit(0.1)`, which counts process CPU time (C `clock()`), not wall "
        "time. Fresh sandbox/context per sample, engines in turn."
    )
    return [
        Row(
            "timeout_wall",
            f"`while(true){{}}` with timeout 100 ms: wall time, median of {n}",
            "time",
            cells[QUICKJAIL],
            {NG: cells[NG], RS: cells[RS]},
            Target("<=", 105e6, "≤ 105 ms"),
            note=how,
        ),
        Row(
            "timeout_wall_max",
            f"same, max of {n} (stands in for p99)",
            "time",
            worst(cells[QUICKJAIL]),
            {NG: worst(cells[NG]), RS: worst(cells[RS])},
            Target("<=", 110e6, "≤ 110 ms (p99)"),
            note=f"with {n} samples the nearest-rank p99 is the maximum, so this row is "
            "stricter than a p99 would be.",
        ),
    ]


# ------------------------------------------------------------------ memory cap (child side)


class _RssSampler:
    """Largest RSS of this process, read every ``period_s`` on a background thread."""

    def __init__(self, period_s: float = 0.001) -> None:
        import psutil  # type: ignore[import-untyped]

        self._proc = psutil.Process()
        self._period = period_s
        self._stop = threading.Event()
        self.max_rss = self._proc.memory_info().rss
        self.count = 1
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._period):
            self._sample()

    def _sample(self) -> None:
        self.max_rss = max(self.max_rss, self._proc.memory_info().rss)
        self.count += 1

    def __enter__(self) -> _RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS mark (``VmHWM``) to the current RSS, if allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _hwm() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _qj_bomb() -> None:

    res = bridge.run_code_sync(BOMB, memory_limit_bytes=CAP)
    if res.status != "memory":
        raise BenchFailure(f"expected status 'memory', got {res.status}/{res.reason} ({res.error})")


def _ng_bomb() -> None:
    import quickjs

    ctx = quickjs.Context()
    ctx.set_memory_limit(CAP)
    try:
        ctx.eval(BOMB)
    except quickjs.JSException as exc:
        if "out of memory" in str(exc):
            return
        raise BenchFailure(f"expected 'out of memory', got {exc}") from None
    raise BenchFailure("the runaway allocation returned")


def _rs_bomb() -> None:
    import quickjs_rs

    with quickjs_rs.Runtime(memory_limit=CAP) as rt, rt.new_context(timeout=240) as ctx:
        try:
            ctx.eval(BOMB)
        except quickjs_rs.MemoryLimitError:
            return
    raise BenchFailure("the runaway allocation returned")


def _warm(engine: str) -> None:
    if engine == QUICKJAIL:
        bridge.run_code_sync("export default 1", memory_limit_bytes=CAP)
    elif engine == NG:
        import quickjs

        quickjs.Context().eval("1")
    else:
        rs_eval("1")


def _child_memory(engine: str, n: int) -> dict[str, Any]:
    bomb = {QUICKJAIL: _qj_bomb, NG: _ng_bomb, RS: _rs_bomb}[engine]
    _warm(engine)
    gc.collect()
    sampler = _RssSampler()
    before = sampler.max_rss
    hwm_ok = _reset_hwm()
    samples: list[int] = []
    with sampler:
        for _ in range(n):
            t0 = time.perf_counter_ns()
            bomb()
            samples.append(time.perf_counter_ns() - t0)
    hwm = _hwm() if hwm_ok else None
    return {
        "samples_ns": samples,
        "rss_before": before,
        "rss_max": sampler.max_rss,
        "rss_growth": sampler.max_rss - before,
        "rss_samples": sampler.count,
        "hwm_growth": None if hwm is None else hwm - before,
    }


# ------------------------------------------------------------------ memory cap (parent side)


def _spawn(*args: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks._limits", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"child exit status {proc.returncode}: {tail}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _memory_child_cells(cfg: Config, engine: str) -> tuple[Cell, Cell]:
    if importlib.util.find_spec(_MODULES[engine]) is None:
        missing = Cell(error=f"not installed ({_MODULES[engine]})")
        return missing, missing
    n = 1 if cfg.dry else (RS_MEMORY_SAMPLES if engine == RS else MEMORY_SAMPLES)
    out = _spawn("memory", engine, str(n))
    stats = Stats.of(out["samples_ns"])
    growth = float(out["rss_growth"])
    extra = {k: v for k, v in out.items() if k != "samples_ns"}
    return (
        Cell(stats.median_ns, stats, extra=extra),
        Cell(growth, display=f"{growth / MiB:,.1f} MiB", extra=extra),
    )


def _memory_rows(cfg: Config, failures: list[str]) -> list[Row]:
    times: dict[str, Cell] = {}
    rss: dict[str, Cell] = {}
    for engine in (QUICKJAIL, NG, RS):
        if cfg.dry and engine == RS:
            skipped = Cell(
                error="skipped in a dry run (10+ s a run)", display="— (dry run: skipped)"
            )
            times[engine] = rss[engine] = skipped
            continue
        box: list[Cell] = []

        def measure_engine(engine: str = engine, box: list[Cell] = box) -> Cell:
            t, r = _memory_child_cells(cfg, engine)
            box.append(r)
            return t

        times[engine] = attempt(measure_engine, failures, f"limits_memory/{engine}")
        rss[engine] = box[0] if box else Cell(error=times[engine].error)
    n_qj = 1 if cfg.dry else MEMORY_SAMPLES
    n_rs = 1 if cfg.dry else RS_MEMORY_SAMPLES
    rs_growth = rss[RS].value
    rs_note = ""
    if rs_growth is not None and rs_growth > 4 * CAP:
        rs_note = (
            f" quickjs-rs's `Runtime(memory_limit=64 MiB)` did not stop the heap at "
            f"64 MiB (RSS grew {rs_growth / MiB:,.0f} MiB): its error came only when "
            "the guest's linear memory could not grow further."
        )
    return [
        Row(
            "memory_cap_time",
            f"runaway allocation under a 64 MiB cap: time to status `memory`, median of {n_qj}",
            "time",
            times[QUICKJAIL],
            {NG: times[NG], RS: times[RS]},
            Target("<=", 200e6, "≤ 200 ms"),
            note=f"`{BOMB}` with `memory_limit_bytes=64 MiB`, fresh sandbox per run, status "
            "checked `memory`; quickjs-ng: fresh `Context` + `set_memory_limit(64 MiB)` "
            "(`InternalError: out of memory`); quickjs-rs: fresh `Runtime(memory_limit="
            f"64 MiB)` (`MemoryLimitError`), {n_rs} runs. One child process per engine, "
            "runs back to back (not round-robin)." + rs_note,
        ),
        Row(
            "memory_cap_rss",
            "same: host RSS growth (max during the runs − before)",
            "bytes",
            rss[QUICKJAIL],
            {NG: rss[NG], RS: rss[RS]},
            Target("<=", CAP + 32 * MiB, "≤ cap + 32 MiB (96 MiB)"),
            note="RSS read by a background thread every 1 ms during all the runs of the row "
            "above, max − RSS before them (after one trivial warm-up run); the kernel's "
            "VmHWM peak is kept in the JSON (`hwm_growth`) as a cross-check.",
        ),
    ]


# ------------------------------------------------------------------ terminate from another task


async def _terminate_once() -> int:
    from quickjail import bridge, sandbox

    run = bridge.run_code(SPIN)
    done: list[tuple[int, sandbox.CodeResult]] = []

    async def drive() -> None:
        res = await run
        done.append((time.perf_counter_ns(), res))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            await anyio.sleep(TERMINATE_AFTER_S)
            was_running = run.running
            t0 = time.perf_counter_ns()
            run.terminate("bench-stop")
    ended, res = done[0]
    if not was_running:
        raise BenchFailure(f"the loop was not running after {TERMINATE_AFTER_S} s")
    if res.status != "terminated" or res.reason != "bench-stop":
        raise BenchFailure(f"expected terminated/bench-stop, got {res.status}/{res.reason}")
    return ended - t0


def _terminate_cell(cfg: Config) -> Cell:
    async def main() -> list[int]:
        if not cfg.dry:
            await _terminate_once()  # warm-up: engine, worker threads
        return [await _terminate_once() for _ in range(1 if cfg.dry else TERMINATE_SAMPLES)]

    samples = anyio.run(main)
    stats = Stats.of(samples)
    return Cell(stats.median_ns, stats)


def _terminate_row(cfg: Config, failures: list[str]) -> Row:
    n = 1 if cfg.dry else TERMINATE_SAMPLES
    return Row(
        "terminate_latency",
        f"`run.terminate()` from another task until `await run` returns, median of {n}",
        "time",
        attempt(lambda: _terminate_cell(cfg), failures, "limits_terminate/quickjail"),
        {
            NG: Cell(error="no way to stop eval from elsewhere", display="n/a (no interrupt API)"),
            RS: Cell(error="eval_async blocks the event loop", display="n/a (loop blocked)"),
        },
        None,
        note="`run = bridge.run_code('while(true){}')` awaited in a task group task; 50 ms "
        "later the parent task calls `run.terminate('bench-stop')`; reason checked. "
        "Native quickjs-ng can only stop on its own `set_time_limit`; quickjs-rs runs "
        "the guest of `eval_async` on the event-loop thread, so no other task runs until "
        "its own deadline ends it (checked: a 50 ms sleeper never woke in a 1 s "
        "`while(true){}`).",
    )


# ------------------------------------------------------------------ fuel metering


def _checksum(_key: str, value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _fuel_row(cfg: Config, kernel: Kernel, failures: list[str]) -> Row:

    n = kernel.dry_size if cfg.dry else kernel.size
    module = module_source(kernel, n)
    used: list[int] = []

    def plain() -> Any:
        res = bridge.run_code_sync(module)
        if res.status != "success":
            raise BenchFailure(f"status {res.status} ({res.error or res.reason})")
        return res.result

    def fueled() -> Any:
        res = bridge.run_code_sync(module, fuel=FUEL)
        if res.status != "success":
            raise BenchFailure(f"status {res.status} ({res.error or res.reason})")
        if not res.metrics.fuel_used:
            raise BenchFailure(f"fuel_used is {res.metrics.fuel_used!r} on a fuel run")
        used.append(res.metrics.fuel_used)
        return res.result

    # keys are engine labels: a failure reads "fuel_<kernel>/quickjail[:fuel]: ..." (fatal)
    label = f"fuel_{kernel.name}"
    cells = compare(
        cfg, failures, label, {QUICKJAIL: plain, f"{QUICKJAIL}:fuel": fueled}, _checksum
    )
    base, metered = cells[QUICKJAIL], cells[f"{QUICKJAIL}:fuel"]
    sums = {k: c.extra["checked"] for k, c in cells.items() if "checked" in c.extra}
    if len({repr(v) for v in sums.values()}) > 1:
        failures.append(f"{label}: CHECKSUM MISMATCH with and without fuel: {sums}")
    if base.ok and metered.ok:
        assert base.value is not None and metered.value is not None
        ratio = metered.value / base.value
        cell = Cell(
            ratio,
            display=f"{ratio:.2f}× ({fmt_time(base.value)} → {fmt_time(metered.value)})",
            extra={
                "no_fuel": base.stats.to_json() if base.stats else None,
                "fuel": metered.stats.to_json() if metered.stats else None,
                "fuel_used": used[-1] if used else None,
            },
        )
    else:
        cell = Cell(error=base.error or metered.error or "not measured")
    return Row(
        f"fuel_{kernel.name}",
        f"fuel metering overhead: {kernel.name} (n={n:,})",
        "factor",
        cell,
        _no_fuel(),
        None,
        ratios=False,
    )


def _no_fuel() -> dict[str, Cell]:
    return {p: Cell(error="no instruction metering", display="n/a (no fuel)") for p in (NG, RS)}


def _fuel_rows(cfg: Config, failures: list[str]) -> list[Row]:
    kernel_rows = [_fuel_row(cfg, k, failures) for k in KERNELS]
    ratios = [r.quickjail.value for r in kernel_rows if r.quickjail.ok]
    geo = (
        Cell(geomean([v for v in ratios if v is not None]), extra={"ratios": ratios})
        if len(ratios) == len(kernel_rows)
        else Cell(error="a kernel is missing")
    )
    return [
        *kernel_rows,
        Row(
            "fuel_geomean",
            "fuel metering overhead, geomean of 7 kernels",
            "factor",
            geo,
            _no_fuel(),
            None,
            ratios=False,
            note=f"per kernel: median with `fuel={FUEL:.0e}` / median without, fresh sandbox per "
            "sample, both timed in turn, checksums checked equal and `fuel_used` checked "
            "> 0; a fuel run uses the second, fuel-metered wasmtime engine. Epoch "
            "interruption (timeouts, `terminate`) is always on and has no switch: its "
            "checks are in every quickjail compute row already, and no row isolates them.",
        ),
    ]


# ------------------------------------------------------------------ the area


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    return [
        *_timeout_rows(cfg, failures),
        *_memory_rows(cfg, failures),
        _terminate_row(cfg, failures),
        *_fuel_rows(cfg, failures),
    ]


def _child(argv: list[str]) -> None:
    what, engine, n = argv
    if what != "memory":
        raise SystemExit(f"unknown child measure {what!r}")
    print(json.dumps(_child_memory(engine, int(n))))


if __name__ == "__main__":
    _child(sys.argv[1:])
