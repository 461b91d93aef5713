"""CPU exhaustion: a 300 ms deadline ends every busy program (bytecode loops, backtracking
regexes, microtask spins, long native builtins, hooks run by the transfer) as ``terminated``
with reason ``timeout``, well within 2 s of wall time."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from _isolation import Case, Ctx, MiB, case_id, run_case, table

T = 0.3


async def _never() -> None:
    await anyio.sleep(3600)


def _slow_sync() -> int:
    time.sleep(0.8)
    return 1


def _cpu(id: str, src: str, **kw: Any) -> Case:
    return Case(id, src, "terminated", timeout=kw.pop("timeout", T), **kw)


HANG_BUG = (
    "BUG: the run deadline does not fire while the guest awaits an async host call that never "
    "settles: the deadline thread calls Run.terminate('timeout'), which sets stop_reason but "
    "never wakes the driver parked on `await self._wake.wait()` in CodeExecution._drive, so "
    "the run hangs forever (CodeExecution.terminate() pokes the driver; the deadline does not)"
)

CASES = [
    # ---- bytecode loops
    _cpu("empty-for", "for (;;) {}"),
    _cpu("while-true-export", "export default (() => { while (true) {} })()"),
    _cpu("loop-in-try-swallowing", "for (;;) { try { for (;;) {} } catch (e) {} }"),
    _cpu("finally-continue", "for (;;) { try { for (;;) {} } finally { continue } }"),
    _cpu("loop-in-catch", "try { throw 1 } catch { for (;;) {} }"),
    _cpu(
        "stack-overflow-retried-forever", "function f() { f() } for (;;) { try { f() } catch {} }"
    ),
    _cpu("generator-forever", "function* g() { for (;;) yield 1 } for (const x of g()) {}"),
    _cpu("proxy-trap-forever", "const p = new Proxy({}, { get: () => { for (;;) {} } }); p.x"),
    # ---- catastrophic regexes
    _cpu("regex-nested-plus", "/(a+)+$/.test('a'.repeat(40) + '!')"),
    _cpu("regex-alternation-star", "/^(a|a)*$/.test('a'.repeat(40) + 'b')"),
    _cpu("regex-double-plus", "/(x+x+)+y/.test('x'.repeat(60))"),
    # ---- microtasks
    _cpu("await-null-forever", "for (;;) await null"),
    _cpu(
        "then-recursion-and-wait",
        "const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})",
        memory=512 * MiB,
    ),
    _cpu(
        "then-recursion-without-chaining",
        "const f = () => { Promise.resolve().then(f) }; f(); await new Promise(() => {})",
    ),
    _cpu(
        "queue-microtask-recursion",
        "const f = () => queueMicrotask(f); f(); await new Promise(() => {})",
    ),
    _cpu("async-entry-spins", "export default async function () { for (;;) await null }"),
    _cpu(
        "async-generator-forever",
        "async function* g() { for (;;) yield 1 } for await (const x of g()) {}",
    ),
    _cpu("executor-loops", "await new Promise(() => { for (;;) {} })"),
    # ---- user code called back by builtins
    _cpu("sort-comparator-loops", "[3, 2, 1, 5, 4].sort(() => { for (;;) {} })"),
    _cpu("typed-sort-comparator-loops", "new Float64Array(100).sort(() => { for (;;) {} })"),
    _cpu("getter-loops", "const o = { get x() { for (;;) {} } }; o.x"),
    _cpu("tostring-in-template-loops", "const o = { toString() { for (;;) {} } }; `${o}`"),
    _cpu("replace-callback-loops", "'a'.repeat(100).replace(/a/g, () => { for (;;) {} })"),
    # ---- long native builtins (no bytecode runs while they work)
    _cpu(
        "array-fill-1e7-forever", "const a = new Array(1e7); for (;;) a.fill(0)", memory=256 * MiB
    ),
    _cpu("bigint-tostring-10-pow-200000", "for (;;) (10n ** 200000n).toString()"),
    _cpu("bigint-division", "const a = 7n ** 300000n, b = 3n ** 200000n; for (;;) a / b"),
    _cpu("bigint-decimal-tostring-1e6-bits", "for (;;) String(2n ** 1000000n).length"),
    _cpu("generic-includes-2-53", "Array.prototype.includes.call({ length: 2 ** 53 - 1 }, 1)"),
    _cpu(
        "generic-lastindexof-2-53", "Array.prototype.lastIndexOf.call({ length: 2 ** 53 - 1 }, 1)"
    ),
    _cpu(
        "naive-substring-search",
        "const h = 'a'.repeat(2 ** 23); for (;;) h.indexOf('a'.repeat(2 ** 12) + 'b')",
    ),
    _cpu(
        "sort-two-million",
        "const a = Array.from({ length: 2e6 }, Math.random); for (;;) a.sort()",
        memory=256 * MiB,
    ),
    _cpu(
        "json-stringify-huge",
        "const a = new Array(3e5).fill({ a: [1, 2, 3, 'xxxxxxxx'] }); for (;;) JSON.stringify(a)",
        memory=128 * MiB,
    ),
    # ---- hooks the transfer runs
    _cpu("getter-loops-during-result-transfer", "export default { get x() { for (;;) {} } }"),
    _cpu(
        "getter-loops-during-report-transfer",
        "report({ get x() { for (;;) {} } }); export default 1",
    ),
    _cpu(
        "getter-loops-during-host-call-args",
        "f({ get x() { for (;;) {} } })",
        opts={"globals": {"f": lambda x: x}},
    ),
    _cpu(
        "own-message-getter-loops-at-finish",
        "const e = new TypeError('x');\n"
        "Object.defineProperty(e, 'message', { get() { for (;;) {} } }); throw e",
    ),
    # ---- host-side waits
    _cpu(
        "slow-sync-host-call-then-loop",
        "f(); for (;;) {}",
        max_wall=2.5,
        opts={"globals": {"f": _slow_sync}},
    ),
    _cpu(
        "deadline-while-awaiting-never-settling-host-call",
        "await never(); export default 1",
        opts={"globals": {"never": _never}},
    ),
    _cpu(
        "deadline-while-entry-awaits-host-call",
        "export default async function () { await never() }",
        opts={"globals": {"never": _never}},
    ),
    # ---- terminate() from another task
    _cpu(
        "terminate-busy-loop",
        "for (;;) {}",
        timeout=30,
        terminate_after=0.1,
        reason="user cancelled",
        max_wall=2.0,
    ),
    _cpu(
        "terminate-long-native-builtin",
        "for (;;) (10n ** 200000n).toString()",
        timeout=30,
        terminate_after=0.1,
        reason="user cancelled",
        max_wall=2.0,
    ),
    _cpu(
        "terminate-while-awaiting-host-call",
        "await never()",
        timeout=30,
        terminate_after=0.1,
        reason="user cancelled",
        max_wall=2.0,
        opts={"globals": {"never": _never}},
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_cpu_hog_is_terminated_at_the_deadline(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx)


@pytest.mark.timeout(180)
def test_a_deadline_stops_only_its_own_run() -> None:
    """The epoch is engine-wide; the per-store decision must stop the late run and no other."""
    from quickjail.sandbox import run_code

    steady = "let s = 0; for (let i = 0; i < 3e6; i++) s = (s + i) % 1000003; export default s"
    expected = 0
    for i in range(int(3e6)):
        expected = (expected + i) % 1000003

    async def main() -> list[Any]:
        results: list[Any] = [None] * 6

        async def one(i: int) -> None:
            if i % 2:
                results[i] = await run_code("for (;;) {}", language="javascript", timeout=0.1)
            else:
                results[i] = await run_code(steady, language="javascript", timeout=20)

        async with anyio.create_task_group() as tg:
            for i in range(6):
                tg.start_soon(one, i)
        return results

    results = anyio.run(main)
    for i, r in enumerate(results):
        if i % 2:
            assert (r.status, r.reason) == ("terminated", "timeout"), r
        else:
            assert (r.status, r.result) == ("success", expected), r
