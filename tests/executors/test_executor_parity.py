"""A run on the process pool gives the same CodeResult as in-process: one table of programs
(every value type, errors, reports, logs, sync / async / sync_js host functions, concurrent
calls, validation and quota refusals, limits, terminate) run both ways, field by field.

The pool is shared by the module (no test here kills a worker)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from quickjail import bridge, runtime
from quickjail.bridge import HostError, Quotas, synchronous
from quickjail.executors import ProcessPool
from quickjail.sandbox import UNDEFINED, CodeExecution, CodeResult, OutputLimits

GENEROUS = 60.0  # seconds: far more than anything here takes on a loaded machine


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=2) as p:
        yield p


async def double(x: int) -> int:
    await anyio.lowlevel.checkpoint()
    return x * 2


def inc(x: int) -> int:
    return x + 1


async def slow_echo(x: Any) -> Any:
    await anyio.sleep(0.01)
    return x


async def nap(x: Any) -> Any:
    await anyio.sleep(0.5)
    return x


async def hold(x: Any) -> Any:
    """Long enough that every call the program starts at once is in flight together, however
    slow the way to a remote caller (10 ms let a Ray call finish before the third arrived)."""
    await anyio.sleep(2.0)
    return x


def fails(kind: str) -> None:
    if kind == "shown":
        raise HostError("not found: /x", js_name="NotFound")
    raise ValueError("secret detail")


async def fails_async(kind: str) -> None:
    fails(kind)


def typed(n: int, name: str) -> str:
    return f"{name}={n}"


HOST = {
    "h": {
        "double": double,
        "inc": inc,
        "now": synchronous(inc),
        "echo": slow_echo,
        "nap": nap,
        "hold": hold,
        "fails": fails,
        "failsAsync": fails_async,
        "typed": typed,
    }
}

VALUES = r"""
export default [
  1 + 1, 1.5, -0, 'héllo 😀', true, null, undefined, [1, 'a', null, undefined], [, 1],
  {a: {b: [1, {c: 2}]}}, new Uint8Array([0, 1, 255]), new Uint8Array([7, 8]).buffer,
  2n ** 100n, -5n, new Date(86400000), new Date(NaN), new Map([['k', 1], [2, 'v']]),
  new Set([1, 'x']), {'\0weird': 1, '': 2}, Infinity, -Infinity, NaN, '\ud800x',
  'long '.repeat(2000), new Map([[new Date(0), 'epoch']]),
];
"""

HOST_CALLS = """
import { double, inc, now, echo } from "h";
const sync_js = now(1);
const promised = await inc(1);
const concurrent = await Promise.all([1, 2, 3, 4, 5].map((i) => echo(i)));
export default [sync_js, promised, await double(21), concurrent, typeof now(0)];
"""

HOST_ERRORS = """
import { fails, failsAsync, typed } from "h";
const seen = [];
for (const call of [() => fails("shown"), () => fails("hidden"), () => failsAsync("shown"),
                    () => failsAsync("hidden"), () => typed("x", 1), () => typed(1)]) {
  try { await call(); seen.push("no error"); } catch (e) { seen.push([e.name, e.message]); }
}
export default seen;
"""

QUOTAS = """
import { inc, echo } from "h";
const seen = [];
for (let i = 0; i < 3; i++) {
  try { seen.push(await inc(i)); } catch (e) { seen.push([e.name, e.message]); }
}
export default seen;
"""

IN_FLIGHT = """
import { hold } from "h";
const all = await Promise.allSettled([hold(1), hold(2), hold(3)]);
export default all.map(
  (s) => s.status === "fulfilled" ? s.value : [s.reason.name, s.reason.message]);
"""

REPORTS_AND_LOGS = """
for (let i = 0; i < 5; i++) report({i, sq: i * i});
console.log("log", 1, {a: [1, 2]});
console.info("info"); console.warn("warn"); console.error("error"); console.debug("debug");
console.log(Symbol("s"), () => 1, 10n, new Date(0));
Promise.reject(new Error("nobody catches me"));
let refused = null;
try { for (let i = 0; i < 10; i++) report(i); } catch (e) { refused = [e.name, e.message]; }
export default refused;
"""


def _terminating(executor: ProcessPool | None) -> CodeExecution:
    box: list[CodeExecution] = []

    def stop() -> None:
        box[0].terminate("stopped by the host " * 20)  # longer than a stop frame carries

    box.append(
        bridge.run_code(
            'import { stop } from "h"; await stop(); while (true) {}',
            imports={"h": {"stop": stop}},
            executor=executor,
        )
    )
    return box[0]


def _run(src: str, **kw: Any) -> Callable[[ProcessPool | None], CodeExecution]:
    return lambda executor: bridge.run_code(src, executor=executor, **kw)


CASES: dict[str, Callable[[ProcessPool | None], CodeExecution]] = {
    "every value type": _run(VALUES),
    "a thrown Error with its position in TypeScript": _run(
        "const n: number = 1;\nfunction f(): never { throw new RangeError('bad ' + n); }\nf();"
    ),
    "a thrown non-Error value": _run("throw {code: 7, why: 'because'};"),
    "a module that cannot be linked": _run('import { x } from "./missing.js"; export default x;'),
    "a syntax error": _run("export default )"),
    "a TypeScript refusal before the run": _run("enum E { A }\nexport default E.A;"),
    "a module graph with an export called with args": _run(
        'import { k } from "./util.ts"; export function main(a: number, b: number) '
        "{ return k * (a + b); }",
        modules={"./util.ts": "export const k: number = 10;"},
        execute={"fn": "main", "args": [1, 2]},
    ),
    "kind auto: a function body": _run("const x = 20;\nreturn x + 22;", kind="auto"),
    "a classic script": _run("var a = 40; a + 2", kind="script"),
    "reports, every log level and rejections": _run(
        REPORTS_AND_LOGS, output_limits=OutputLimits(max_reports=8)
    ),
    "the report callback is called in order, its failure kept": _run(
        "report(1); report(2); report(3); export default 0;",
        report=lambda v: (_ for _ in ()).throw(KeyError(v)) if v == 2 else None,
    ),
    "sync, sync_js, async and concurrent host calls": _run(HOST_CALLS, imports=HOST),
    "host errors shown, hidden and validation refusals": _run(HOST_ERRORS, imports=HOST),
    "a quota on calls refuses the third": _run(
        QUOTAS, imports=HOST, quotas=Quotas(max_host_calls=2)
    ),
    "a quota on calls in flight": _run(
        IN_FLIGHT, imports=HOST, quotas=Quotas(max_calls_in_flight=2)
    ),
    "a quota on bytes in": _run(
        'import { echo } from "h"; try { await echo("x".repeat(4000)); } catch (e) '
        "{ export_ = [e.name, e.message]; } var export_; export default export_;",
        imports=HOST,
        quotas=Quotas(max_bytes_in=1000),
    ),
    "a 5 MiB result and a 1 MiB host call each way": _run(
        'import { echo } from "h"; const big = await echo("y".repeat(2 ** 20));'
        "export default [new Uint8Array(5 * 2 ** 20), big.length];",
        imports=HOST,
    ),
    "memory status": _run(
        "const a = []; while (true) a.push(new Array(100000).fill(1));",
        memory_limit_bytes=16 * 2**20,
    ),
    "fuel used by a finished run": _run(
        "let s = 0; for (let i = 0; i < 10000; i++) s += i; export default s;", fuel=10**9
    ),
    "fuel exhausted": _run("while (true) {}", fuel=10**7),
    "timeout": _run("while (true) {}", timeout=0.5),
    "time awaiting host calls outside the timeout": _run(
        # 1.5 s awaited against a 1 s timeout, in three slices (few, so a loaded machine's
        # scheduling cannot add up to the timeout by itself)
        'import { nap } from "h"; for (let i = 0; i < 3; i++) await nap(i); export default 1;',
        imports=HOST,
        timeout=1.0,
        timeout_includes_host_calls=False,
    ),
    "timers and deterministic time": _run(
        "await new Promise((r) => setTimeout(r, 20));"
        "export default [Date.now(), Math.random(), new Date().toISOString()];",
        deterministic=True,
    ),
    "seeded random": _run("export default [Math.random(), Math.random()];", seed=1234),
    "a result over max_result_bytes": _run(
        "export default 'x'.repeat(100);", output_limits=OutputLimits(max_result_bytes=50)
    ),
    "a host function terminates the run": _terminating,
    "globals, a long source and text JSON cannot carry in frame heads": _run(
        f"// a lone surrogate in the source: \ud800\nconst pad = `{'x' * 3000}`;\n"
        "throw new Error(`lone \\ud800 surrogate ${g.k.length} ${pad.length}`);",
        globals={"g": {"k": [1, 2], "\0odd": "\ud800"}},
    ),
}


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types, NaN equal to NaN, -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _view(r: CodeResult) -> dict[str, Any]:
    err = r.error
    return {
        "status": r.status,
        "reason": r.reason,
        "result": r.result,
        "error": None
        if err is None
        else (err.name, err.message, err.line, err.column, err.filename, err.value),
        "reports": r.reports,
        "logs": [(e.level, e.args) for e in r.logs],
        "host_errors": sorted((type(e).__name__, str(e)) for e in r.host_errors),
        "host_calls": r.metrics.host_calls,
        "quota_refusals": r.metrics.quota_refusals,
        "fuel_used": r.metrics.fuel_used,
        "metric_reports": r.metrics.reports,
        "metric_logs": r.metrics.logs,
        "timers_fired": r.metrics.timers_fired,
    }


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_run_on_the_pool_gives_the_same_result_as_in_process(
    case: str, pool: ProcessPool
) -> None:
    local = CASES[case](None).run_sync()
    remote = CASES[case](pool).run_sync()
    want, got = _view(local), _view(remote)
    for key in want:
        assert _same(got[key], want[key]), (key, got[key], want[key])


@pytest.mark.anyio
@pytest.mark.parametrize("case", ["sync, sync_js, async and concurrent host calls"])
async def test_awaited_on_either_backend_the_pool_gives_the_same_result(
    case: str, pool: ProcessPool
) -> None:
    local = await CASES[case](None)
    remote = await CASES[case](pool)
    assert _view(remote) == _view(local)


@pytest.mark.anyio
async def test_reports_stream_live_from_the_worker_and_the_handle_behaves_the_same(
    pool: ProcessPool,
) -> None:
    gate = threading.Event()

    def wait() -> int:
        assert gate.wait(GENEROUS)
        return 1

    source = (
        'import { wait } from "h"; report("first"); await wait(); report("second");'
        "export default 1;"
    )
    h = bridge.run_code(source, imports={"h": {"wait": wait}}, executor=pool)
    assert isinstance(h, CodeExecution)
    assert not h.running and h.result is None
    seen: list[Any] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(h.wait)
        async for value in h.reports():
            seen.append(value)
            if value == "first":
                assert h.running
                assert h.reports_so_far == ["first"]  # streamed before the run went on
                gate.set()
    assert seen == ["first", "second"]
    assert h.result is not None and h.result.result == 1 and not h.running
    assert await h == h.result
    assert h.content_id == bridge.run_code(source, imports={"h": {"wait": wait}}).content_id


@pytest.mark.anyio
async def test_run_code_sync_on_the_pool_works_from_async_code_as_in_process(
    pool: ProcessPool,
) -> None:
    local = bridge.run_code_sync("export default 5")
    remote = bridge.run_code_sync("export default 5", executor=pool)
    assert _view(remote) == _view(local)


def test_values_cross_as_python_values_not_pickles(pool: ProcessPool) -> None:
    r = bridge.run_code_sync(
        "export default (x) => x;",
        execute={"args": [{"k": (1, 2), "s": {3}, "b": b"\x00", "u": UNDEFINED}]},
        executor=pool,
    )
    assert r.result == {"k": [1, 2], "s": frozenset({3}), "b": b"\x00", "u": UNDEFINED}


@pytest.mark.anyio
async def test_the_runtimes_run_code_takes_the_executor_and_still_redacts(
    pool: ProcessPool, tmp_path: Path
) -> None:
    async with runtime.Runtime(tmp_path / "agent.db", secret_key=b"k" * 32) as rt:
        state = (await rt.thread()).state
        await state.set_env("TOKEN", "tok-secret-123", type="secret")
        secret = await state.env("TOKEN")
        code = 'import { token } from "env"; console.log("t=" + token); export default token;'
        result = await state.run_code(code, imports={"env": {"token": secret}}, executor=pool)
    assert result.status == "success", result.error
    assert result.result == "[REDACTED]"
    assert result.logs[0].args == ["t=[REDACTED]"]


def test_run_code_refuses_an_executor_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="executor"):
        bridge.run_code("export default 1", executor=object())  # type: ignore[arg-type]


def test_an_honest_run_at_its_output_limits_is_no_protocol_violation(pool: ProcessPool) -> None:
    # values the host encodes longer than the guest (Dates) up to each output limit: the
    # caller's own checks leave room for that, and the run is the in-process run
    source = """
    const dates = Array.from({ length: 1000 }, (_, i) => new Date(i * 1e9));
    let sent = 0;
    try { for (;;) { report(dates); sent++; } } catch (e) {}
    for (let i = 0; i < 100000; i++) console.log(new Date(i));
    export default [sent, Array.from({ length: 32000 }, (_, i) => new Date(i * 1e9))];
    """
    limits = OutputLimits(max_report_bytes=2**20, max_log_bytes=2**20, max_result_bytes=2**20)
    here = bridge.run_code_sync(source, language="javascript", output_limits=limits)
    there = bridge.run_code_sync(source, language="javascript", output_limits=limits, executor=pool)
    assert here.status == "success", here.error
    assert (there.status, there.result, there.reports) == (here.status, here.result, here.reports)
    assert [e.args for e in there.logs] == [e.args for e in here.logs]
