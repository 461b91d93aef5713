"""Timing: warm-up, an adaptive number of repetitions, and order statistics over the samples.

Every sample is one call timed with ``time.perf_counter_ns``. The engines compared on a row
are timed round-robin (one call each, again and again), so a burst of load from elsewhere on a
shared machine lands on all of them rather than on whichever ran at that moment. The
repetition count is chosen from the warm-up so a measure takes about ``Config.budget_s`` per
engine (never fewer than ``min_reps`` samples, never more than ``max_reps``). In a dry run
every callable runs exactly once.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["REPO_ROOT", "Config", "Stats", "measure", "measure_async", "measure_spawn"]

REPO_ROOT = Path(__file__).resolve().parent.parent
K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class Config:
    """How hard to measure; ``dry`` means run once with tiny sizes and time nothing."""

    dry: bool = False
    budget_s: float = 0.6
    warmup_s: float = 0.15
    min_reps: int = 5
    max_reps: int = 5000
    spawn_reps: int = 5


@dataclass(frozen=True, slots=True)
class Stats:
    """Order statistics of one measure's samples, in nanoseconds."""

    median_ns: float
    p90_ns: float
    max_ns: float
    min_ns: float
    n: int

    @classmethod
    def of(cls, samples: list[int] | list[float]) -> Stats:
        ordered = sorted(samples)
        return cls(
            median_ns=float(statistics.median(ordered)),
            p90_ns=float(_percentile(ordered, 0.9)),
            max_ns=float(ordered[-1]),
            min_ns=float(ordered[0]),
            n=len(ordered),
        )

    def per_item(self, baseline_ns: float, items: int) -> Stats:
        """Per-item statistics of a batch: ``(sample - baseline) / items`` for each statistic."""

        def f(x: float) -> float:
            return (x - baseline_ns) / items

        return Stats(f(self.median_ns), f(self.p90_ns), f(self.max_ns), f(self.min_ns), self.n)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _percentile(ordered: list[int] | list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    rank = max(1, math.ceil(q * len(ordered)))
    return float(ordered[rank - 1])


def _reps(cfg: Config, warm: Mapping[K, list[int]]) -> int:
    """Samples per engine so one round-robin measure takes about ``budget_s`` per engine."""
    one_round = sum(max(statistics.median(w), 1) for w in warm.values()) or 1
    budget = cfg.budget_s * 1e9 * len(warm)
    return max(cfg.min_reps, min(cfg.max_reps, int(budget / one_round)))


def measure(cfg: Config, fns: Mapping[K, Callable[[], object]]) -> dict[K, Stats | Exception]:
    """Time each callable, interleaved round-robin so load on a shared machine hits all alike.

    Warm-up rounds run first (at least two calls each, about ``warmup_s`` per callable); then
    every callable gets the same number of timed calls. A callable that raises is dropped and
    its exception returned in its place; the others go on.
    """
    clock = time.perf_counter_ns
    samples: dict[K, list[int]] = {k: [] for k in fns}
    out: dict[K, Stats | Exception] = {}
    live = dict(fns)

    def one_round() -> None:
        for key, fn in list(live.items()):
            t0 = clock()
            try:
                fn()
            except Exception as exc:
                out[key] = exc
                del live[key]
                continue
            samples[key].append(clock() - t0)

    def rounds(count: int) -> None:
        for k in live:
            samples[k].clear()
        for _ in range(count):
            one_round()

    if cfg.dry:
        one_round()
    else:
        deadline = clock() + int(cfg.warmup_s * 1e9 * max(len(fns), 1))
        while live and (min(len(samples[k]) for k in live) < 2 or clock() < deadline):
            one_round()
        gc.collect()
        rounds(_reps(cfg, {k: samples[k] for k in live}))
    for key in live:
        out[key] = Stats.of(samples[key])
    return out


async def measure_async(
    cfg: Config, fns: Mapping[K, Callable[[], Awaitable[object]]]
) -> dict[K, Stats | Exception]:
    """:func:`measure` for coroutine functions, awaited one at a time on the current loop."""
    clock = time.perf_counter_ns
    samples: dict[K, list[int]] = {k: [] for k in fns}
    out: dict[K, Stats | Exception] = {}
    live = dict(fns)

    async def one_round() -> None:
        for key, fn in list(live.items()):
            t0 = clock()
            try:
                await fn()
            except Exception as exc:
                out[key] = exc
                del live[key]
                continue
            samples[key].append(clock() - t0)

    if cfg.dry:
        await one_round()
    else:
        deadline = clock() + int(cfg.warmup_s * 1e9 * max(len(fns), 1))
        while live and (min(len(samples[k]) for k in live) < 2 or clock() < deadline):
            await one_round()
        reps = _reps(cfg, {k: samples[k] for k in live})
        for k in live:
            samples[k].clear()
        gc.collect()
        for _ in range(reps):
            await one_round()
    for key in live:
        out[key] = Stats.of(samples[key])
    return out


def measure_spawn(cfg: Config, codes: Mapping[K, str]) -> dict[K, Stats | Exception]:
    """Wall time of ``python -c code`` in a new process, the codes taking turns.

    One untimed round first (disk caches, the compiled-module cache), then ``spawn_reps``
    timed rounds; a dry run does one timed round only.
    """
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    # a first run reads compiled bytecode as a user's would; without it, the row would time
    # the compilation of quickjail's sources
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    samples: dict[K, list[int]] = {k: [] for k in codes}
    out: dict[K, Stats | Exception] = {}
    live = dict(codes)
    for round_no in range(1 if cfg.dry else cfg.spawn_reps + 1):
        for key, code in list(live.items()):
            t0 = time.perf_counter_ns()
            proc = subprocess.run(
                [sys.executable, "-c", code],
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            elapsed = time.perf_counter_ns() - t0
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
                out[key] = RuntimeError(f"exit status {proc.returncode}: {tail}")
                del live[key]
            elif cfg.dry or round_no > 0:
                samples[key].append(elapsed)
    for key in live:
        out[key] = Stats.of(samples[key])
    return out
