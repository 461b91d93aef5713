"""The worker pool under hostile host functions: host functions that run code themselves
(re-entrant ``run_code_sync``, nested two deep, or awaited), host functions that block, and
runs whose job fails before the guest starts never deadlock, starve or shrink the pool; every
run still ends with its own outcome and the next run works."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest
from _isolation import SLOW_MACHINE, Case, Ctx, case_id, run_case, table

from quickjail.bridge import run_code, run_code_sync
from quickjail.sandbox import CodeResult

INNER_TIMEOUT = 2.0 * SLOW_MACHINE
BLOCK = 1.0  # seconds a blocking host function holds its run


def _tools(ctx: Ctx) -> dict[str, Any]:
    release = threading.Event()
    ctx.extra["release"] = release

    def tool(src: str) -> Any:
        ctx.calls.append(src)
        r = run_code_sync(src, language="javascript", timeout=INNER_TIMEOUT)
        return [r.status, r.result]

    def nested_tool(src: str) -> Any:
        """Runs ``src`` with ``tool`` bridged in: two levels of code running code."""
        ctx.calls.append(src)
        r = run_code_sync(
            src, language="javascript", globals={"tool": tool}, timeout=2 * INNER_TIMEOUT
        )
        return [r.status, r.result]

    async def atool(src: str) -> Any:
        ctx.calls.append(src)
        r = await run_code(src, language="javascript", timeout=INNER_TIMEOUT)
        return [r.status, r.result]

    def nap(seconds: float) -> float:
        time.sleep(min(seconds, 0.5))
        return seconds

    def block() -> int:
        # blocks past the run's deadline: a sync host function cannot be interrupted, so it
        # delays its own run's end (never another run's); the run is then terminated
        release.wait(BLOCK)
        return 1

    def failing_tool() -> Any:
        r = run_code_sync("export default 1", execute={"fn": "\ud800"})
        return [r.status, r.error.name if r.error else None]

    return {
        "globals": {
            "tool": tool,
            "nested_tool": nested_tool,
            "atool": atool,
            "nap": nap,
            "block": block,
            "failing_tool": failing_tool,
        }
    }


def _next_run_works(r: CodeResult, ctx: Ctx) -> None:
    release = ctx.extra.get("release")
    if release is not None:
        release.set()
    after = run_code_sync("export default 6 * 7", timeout=INNER_TIMEOUT)
    assert (after.status, after.result) == ("success", 42), after.error


def _pool(id: str, src: str, expect: Any = "completes", **kw: Any) -> Case:
    kw.setdefault("check", _next_run_works)
    return Case(id, src, expect, opts=kw.pop("opts", _tools), **kw)


CASES = [
    _pool("reentrant-tool", "export default tool('export default 40 + 2')", result=["success", 42]),
    _pool(
        "reentrant-tool-many",
        "const out = [];\n"
        "for (let i = 0; i < 20; i++) out.push((await tool(`export default ${i}`))[1]);\n"
        "export default out.reduce((a, b) => a + b)",
        result=190,
    ),
    _pool(
        "reentrant-two-levels",
        "export default nested_tool(\"export default tool('export default 7')\")",
        result=["success", ["success", 7]],
    ),
    _pool(
        "reentrant-async-tool-concurrent",
        "const rs = await Promise.all(\n"
        "  Array.from({length: 16}, (_, i) => atool(`export default ${i}`)));\n"
        "export default rs.map((r) => r[1]).reduce((a, b) => a + b)",
        result=120,
    ),
    _pool(
        "reentrant-tool-inner-hog",
        "export default tool('while (true) {}')",
        result=["terminated", None],
        timeout=4.0 * SLOW_MACHINE,
    ),
    _pool(
        "blocking-host-fn-short", "for (let i = 0; i < 4; i++) nap(0.1); export default 1", result=1
    ),
    _pool(
        "blocking-host-fn-past-deadline",
        "block(); export default 1",
        "terminated",
        timeout=0.5,
        max_wall=BLOCK + 5.0,
    ),
    _pool(
        "blocking-host-fn-then-loop",
        "block(); while (true) {}",
        "terminated",
        timeout=0.5,
        max_wall=BLOCK + 5.0,
    ),
    _pool(
        "job-raises-bad-fn",
        "export default 1",
        "js_error",
        error="ReferenceError",
        opts=lambda ctx: {**_tools(ctx), "execute": {"fn": "a\udc00b"}},
    ),
    _pool(
        "job-raises-inside-tool",
        "export default failing_tool()",
        result=["error", "ReferenceError"],
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_hostile_host_functions_never_deadlock_or_starve_the_pool(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx)


@pytest.mark.timeout(180)
def test_concurrent_runs_that_block_and_reenter_all_end() -> None:
    """More concurrent runs than the pool's core, each blocking in a host function that runs
    code itself: every run ends with its own result (the pool grows, never deadlocks)."""
    from quickjail.sandbox import _engine

    run_code_sync("export default 0")
    n = _engine.get_engine().workers.core + 2
    barrier = threading.Barrier(n, timeout=60)

    def tool(i: int) -> Any:
        barrier.wait()  # every outer run is inside its host function at once
        time.sleep(0.05)
        return run_code_sync(f"export default {i} * 2", timeout=INNER_TIMEOUT).result

    async def main() -> list[CodeResult]:
        results: list[CodeResult] = []

        async def one(i: int) -> None:
            results.append(
                await run_code(f"export default tool({i})", globals={"tool": tool}, timeout=60.0)
            )

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i)
        return results

    results = anyio.run(main)
    assert sorted(r.result for r in results) == [2 * i for i in range(n)], [
        (r.status, r.error) for r in results
    ]
