"""Row 9: memory per live idle sandbox, as the PSS delta over N held sandboxes divided by N.

quickjail has no API to hold a sandbox open, so N runs are started concurrently and each
awaits an async host function that parks on an ``anyio.Event`` until all N are alive; PSS is
read once they have all waited a little (a parked run gives back its idle pages after
``IDLE_DROP_DELAY``, 20 ms). The peers hold N contexts in a list. Each engine is measured in
its own child process (``python -m benchmarks._memory ENGINE N``) so that memory freed by
one engine cannot be reused by the next and flatter it.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from benchmarks._engines import NG, RS
from benchmarks._harness import REPO_ROOT, Config
from benchmarks._report import Cell, Row, Target, attempt

__all__ = ["rows"]

_MODULES = {"quickjail": "quickjail.sandbox", NG: "quickjs", RS: "quickjs_rs"}


def _pss() -> tuple[int, str]:
    import psutil  # type: ignore[import-untyped]

    info = psutil.Process().memory_full_info()
    for metric in ("pss", "uss", "rss"):
        value = getattr(info, metric, None)
        if value is not None:
            return int(value), metric
    raise RuntimeError("psutil reports no memory figure")


# ------------------------------------------------------------------ child side


def _hold_quickjail(n: int) -> dict[str, Any]:
    import anyio

    from quickjail import bridge, sandbox
    from quickjail.sandbox._idle import IDLE_DROP_DELAY

    async def hold(count: int) -> int:
        arrived = 0
        everyone, release = anyio.Event(), anyio.Event()
        results: list[sandbox.CodeResult] = []
        held = 0

        async def park() -> int:
            nonlocal arrived
            arrived += 1
            if arrived == count:
                everyone.set()
            await release.wait()
            return 1

        async def one() -> None:
            results.append(
                await bridge.run_code("export default await park();", globals={"park": park})
            )

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for _ in range(count):
                    tg.start_soon(one)
                await everyone.wait()
                # idle means parked a while: a run gives back its idle pages once it has waited
                # IDLE_DROP_DELAY (a quick host call keeps them, see sandbox/_run.py)
                await anyio.sleep(3 * IDLE_DROP_DELAY)
                gc.collect()
                held, _ = _pss()
                release.set()
        bad = [r for r in results if r.status != "success" or r.result != 1]
        if len(results) != count or bad:
            raise RuntimeError(f"{len(bad)} of {count} parked runs failed: {bad[:1]}")
        return held

    anyio.run(hold, min(n, 16))  # engine, worker threads and caches, outside the delta
    gc.collect()
    base, metric = _pss()
    held = anyio.run(hold, n)
    return {"base": base, "held": held, "metric": metric}


def _hold_native(n: int) -> dict[str, Any]:
    import quickjs  # type: ignore[import-untyped]

    quickjs.Context().eval("1+1")
    gc.collect()
    base, metric = _pss()
    contexts = []
    for _ in range(n):
        ctx = quickjs.Context()
        ctx.eval("1+1")
        contexts.append(ctx)
    gc.collect()
    held, _ = _pss()
    return {"base": base, "held": held, "metric": metric, "alive": len(contexts)}


def _hold_rs(n: int) -> dict[str, Any]:
    import quickjs_rs

    with quickjs_rs.Runtime() as rt, rt.new_context() as ctx:
        ctx.eval("1+1")
    gc.collect()
    base, metric = _pss()
    held_pairs = []
    for _ in range(n):
        rt = quickjs_rs.Runtime()
        ctx = rt.new_context()
        ctx.eval("1+1")
        held_pairs.append((rt, ctx))
    gc.collect()
    held, _ = _pss()
    for rt, _ctx in held_pairs:
        rt.close()
    return {"base": base, "held": held, "metric": metric, "alive": len(held_pairs)}


def _child(engine: str, n: int) -> None:
    hold = {"quickjail": _hold_quickjail, NG: _hold_native, RS: _hold_rs}[engine]
    out = hold(n)
    out["per_sandbox"] = (out["held"] - out["base"]) / n
    print(json.dumps(out))


# ------------------------------------------------------------------ parent side


def _spawn(engine: str, n: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks._memory", engine, str(n)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise RuntimeError(f"child exit status {proc.returncode}: {tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _cell(cfg: Config, engine: str, n: int) -> Cell:
    if importlib.util.find_spec(_MODULES[engine]) is None:
        return Cell(error=f"not installed ({_MODULES[engine]})")
    runs = [_spawn(engine, n) for _ in range(1 if cfg.dry else 3)]
    value = statistics.median(r["per_sandbox"] for r in runs)
    return Cell(value, extra={"n": n, "runs": runs, "metric": runs[0]["metric"]})


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    n = 5 if cfg.dry else 200
    qj_cell = attempt(lambda: _cell(cfg, "quickjail", n), failures, "memory/quickjail")
    metric = qj_cell.extra.get("metric", "pss").upper()
    return [
        Row(
            "idle_memory",
            f"memory per live idle sandbox ({metric}, N={n})",
            "bytes",
            qj_cell,
            {
                NG: attempt(lambda: _cell(cfg, NG, n), failures, "memory/quickjs-ng"),
                RS: attempt(lambda: _cell(cfg, RS, n), failures, "memory/quickjs-rs"),
            },
            Target("<=", 0.75, "≤ 0.75× native", NG),
            note=f"{metric} delta / N in a child process per engine, median of "
            f"{1 if cfg.dry else 3}; quickjail: N runs parked in an async host call; "
            "quickjs-ng: N `Context()`s; quickjs-rs: N Runtime + Context pairs.",
        )
    ]


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]))
