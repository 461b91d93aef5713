"""Containment over many runs: RSS, threads, fds and tasks return to a flat line."""

from __future__ import annotations

import gc
import threading
import time

import anyio
import anyio.lowlevel
import psutil
import pytest

from quickjail.bridge import run_code
from quickjail.sandbox._threads import IDLE_EXIT

# one cycle of programs covering every outcome class
MIX: list[tuple[str, dict[str, object], str]] = [
    ("export default 1 + 1", {}, "success"),
    ("export default [...Array(100).keys()].map((x) => ({x, s: 'v' + x}))", {}, "success"),
    ("console.log('x'); report({a: 1}); export default 'ok'", {}, "success"),
    ("throw new TypeError('boom')", {}, "error"),
    ("import 'nowhere'", {}, "link_error"),
    ("export default await host(3)", {"globals": "host"}, "success"),
    ("Promise.reject(new Error('unhandled')); export default 1", {}, "success"),
    ("let d = 0; function f() { d++; f() } f()", {}, "error"),
]
RARE: list[tuple[str, dict[str, object], str]] = [
    ("while (true) {}", {"timeout": 0.01}, "terminated"),
    (
        "const a = []; for (;;) a.push('x'.repeat(1e5) + a.length)",
        {"memory_limit_bytes": 16 * 2**20},
        "memory",
    ),
    ("while (true) {}", {"fuel": 200_000}, "terminated"),
]
RUNS = 10_000


async def _host(x: int) -> int:
    await anyio.lowlevel.checkpoint()
    return x * 2


async def _one(i: int, outcomes: dict[str, int]) -> None:
    if i % 250 == 0:
        src, opts, expected = RARE[(i // 250) % len(RARE)]
    else:
        src, opts, expected = MIX[i % len(MIX)]
    kwargs = dict(opts)
    if kwargs.pop("globals", None):
        kwargs["globals"] = {"host": _host}
    r = await run_code(src, language="javascript", **kwargs)  # type: ignore[arg-type]
    assert r.status == expected, (i, src, r.status, r.error)
    outcomes[r.status] = outcomes.get(r.status, 0) + 1


async def _batch(start: int, count: int, outcomes: dict[str, int]) -> None:
    limiter = anyio.Semaphore(8)

    async def guarded(i: int) -> None:
        async with limiter:
            await _one(i, outcomes)

    async with anyio.create_task_group() as tg:
        for i in range(start, start + count):
            tg.start_soon(guarded, i)


@pytest.mark.timeout(900)
def test_ten_thousand_mixed_runs_leave_rss_threads_and_fds_flat() -> None:
    proc = psutil.Process()
    outcomes: dict[str, int] = {}
    anyio.run(_batch, 0, 1000, outcomes)  # warm up: engine, workers, caches
    gc.collect()
    rss_start = proc.memory_info().rss
    threads_start = threading.active_count()
    fds_start = proc.num_fds()
    anyio.run(_batch, 1000, RUNS - 1000, outcomes)
    gc.collect()
    # on a busy machine the pool may have grown for a burst: extra workers exit once idle
    settle = time.monotonic() + 10 * IDLE_EXIT
    while threading.active_count() > threads_start and time.monotonic() < settle:
        time.sleep(0.5)
    rss_end = proc.memory_info().rss
    growth = rss_end - rss_start
    print(
        f"\nsoak: {RUNS} runs {outcomes}; RSS start {rss_start >> 20} MiB, "
        f"end {rss_end >> 20} MiB (growth {growth / 2**20:.1f} MiB); "
        f"threads {threads_start}->{threading.active_count()}; fds {fds_start}->"
        f"{proc.num_fds()}"
    )
    assert sum(outcomes.values()) == RUNS
    assert {"success", "error", "link_error", "terminated", "memory"} <= set(outcomes)
    assert growth < 48 * 2**20
    assert threading.active_count() <= threads_start
    assert proc.num_fds() <= fds_start
