"""Limits and control: determinism, fuel, output caps, timeouts around host calls, stacks."""

from __future__ import annotations

import time

import anyio
import pytest

from quickjail import sandbox
from quickjail.bridge import run_code, run_code_sync
from quickjail.sandbox import OutputLimits

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sync_path")]


def test_deterministic_runs_give_the_same_clock_random_and_reports() -> None:
    src = "report(Math.random()); report(new Date().toISOString()); export default Date.now()"
    a = run_code_sync(src, deterministic=True)
    b = run_code_sync(src, deterministic=True)
    assert (a.result, a.reports) == (b.result, b.reports)
    assert a.reports[1].startswith("2025-01-01T00:00:00")  # type: ignore[union-attr]


def test_the_deterministic_clock_advances() -> None:
    r = run_code_sync(
        "const a = Date.now(); const b = Date.now(); export default b - a", deterministic=True
    )
    assert r.result == 1


def test_fuel_stops_an_endless_loop_with_reason_fuel_on_any_machine() -> None:
    r = run_code_sync("while (true) {}", fuel=5_000_000)
    assert r.status == "terminated" and r.reason == "fuel"
    assert r.metrics.fuel_used == 5_000_000


def test_fuel_used_is_measured_and_repeatable() -> None:
    src = "let s = 0; for (let i = 0; i < 5000; i++) s += i; export default s"
    a = run_code_sync(src, fuel=10**9, deterministic=True)
    b = run_code_sync(src, fuel=10**9, deterministic=True)
    assert a.result == sum(range(5000))
    assert a.metrics.fuel_used == b.metrics.fuel_used and a.metrics.fuel_used > 0  # type: ignore[operator]
    assert run_code_sync(src).metrics.fuel_used is None


def test_log_cap_drops_later_logs_with_one_marker() -> None:
    r = run_code_sync(
        "for (let i = 0; i < 50; i++) console.log(i); export default 'ok'",
        output_limits=OutputLimits(max_logs=10),
    )
    assert r.result == "ok"
    assert [e.args[0] for e in r.logs[:10]] == list(range(10))
    assert len(r.logs) == 11 and "limit" in r.logs[10].args[0]


def test_report_cap_throws_a_range_error_inside_js() -> None:
    src = (
        "let n = 0; try { for (;;) { report(n); n++ } } catch (e) { report.x = e } export default n"
    )
    r = run_code_sync(src, output_limits=OutputLimits(max_reports=5))
    assert r.result == 5 and r.reports == [0, 1, 2, 3, 4]


def test_result_size_cap_ends_the_run_with_an_error() -> None:
    r = run_code_sync(
        "export default 'x'.repeat(10000)", output_limits=OutputLimits(max_result_bytes=1000)
    )
    assert r.status == "error" and r.error is not None and "max_result_bytes" in r.error.message


def test_unhandled_rejections_are_recorded_as_error_logs_up_to_the_cap() -> None:
    r = run_code_sync(
        "for (let i = 0; i < 20; i++) Promise.reject(i); export default 1",
        output_limits=OutputLimits(max_rejections=3),
    )
    assert r.status == "success"
    assert [e.args for e in r.logs] == [["Unhandled promise rejection:", i] for i in range(3)]


def test_bad_limits_are_refused_before_anything_runs() -> None:
    with pytest.raises(TypeError):
        run_code("1", limits={"max_nothing": 1})  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        run_code("1", output_limits={"max_logs": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        OutputLimits(max_logs=-1)
    with pytest.raises(TypeError):
        run_code("1", fuel=0)


@pytest.mark.anyio
async def test_time_awaiting_host_calls_counts_toward_the_timeout_by_default() -> None:
    async def slow() -> int:
        await anyio.sleep(0.5)
        return 1

    r = await run_code("export default await slow()", globals={"slow": slow}, timeout=0.2)
    assert r.status == "terminated" and r.reason == "timeout"


@pytest.mark.anyio
async def test_callers_can_exclude_host_call_time_from_the_timeout() -> None:
    async def slow() -> int:
        await anyio.sleep(0.4)
        return 1

    r = await run_code(
        "export default await slow() + await slow()",
        globals={"slow": slow},
        timeout=0.2,
        timeout_includes_host_calls=False,
    )
    assert r.status == "success" and r.result == 2


@pytest.mark.parametrize(
    "src",
    [
        "let d = 0; function f() { d++; f() } try { f() } catch (e) { report(e.name) }",
        "try { JSON.parse('['.repeat(1e5)) } catch (e) { report(e.name) }",
        "const o = { get x() { return this.x } }; try { o.x } catch (e) { report(e.name) }",
        "const a = []; a.push(a); try { String(a) } catch (e) { report(e.name) }",
        "let p = new Proxy({}, { get: (t, k) => p[k] }); try { p.x } catch (e) { report(e.name) }",
        "try { /(((((((((a)))))))))*/.exec('a'.repeat(1e6)) } catch (e) { report(e.name) }",
    ],
    ids=["recursion", "json", "getter", "toString", "proxy", "regex"],
)
def test_deep_recursion_is_a_catchable_error_and_the_run_continues(src: str) -> None:
    r = run_code_sync(src + "\nexport default 'continued'", language="javascript", timeout=10)
    assert r.status == "success", r.error
    assert r.result == "continued"
    assert r.reports and r.reports[0] in ("RangeError", "InternalError")


def test_recursion_reaches_a_useful_depth_before_the_stack_limit() -> None:
    r = run_code_sync("let d = 0; function f() { d++; f() } try { f() } catch {} export default d")
    assert r.result > 2000  # type: ignore[operator]


def test_deeply_nested_source_is_a_range_error_not_a_crash() -> None:
    r = run_code_sync("export default " + "[" * 100000 + "]" * 100000, language="javascript")
    assert r.status == "error" and r.error is not None and r.error.name == "RangeError"


@pytest.mark.parametrize(
    "src",
    [
        "while (true) {}",
        "for (;;) new Uint8Array(32e6).fill(1)",
        "for (;;) await null",
        "const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})",
        "/(a+)+$/.test('a'.repeat(40) + '!')",
        "(10n ** 300000n).toString()",
        "[...Array(1e4).keys()].sort(() => { for (;;) {} })",
    ],
    ids=["loop", "native-fill", "await-spin", "microtask-chain", "regex", "bigint", "sort"],
)
def test_timeout_stops_any_kind_of_busy_guest(src: str) -> None:
    t0 = time.monotonic()
    r = run_code_sync(src, timeout=0.3, language="javascript")
    elapsed = time.monotonic() - t0
    assert r.status == "terminated" and r.reason == "timeout", (r.status, r.error)
    assert elapsed < 3, elapsed


@pytest.mark.anyio
async def test_terminate_stops_a_run_waiting_on_host_calls() -> None:
    async def never() -> None:
        await anyio.sleep(60)

    run = run_code("await never(); export default 1", globals={"never": never})
    async with anyio.create_task_group() as tg:

        async def stop() -> None:
            await anyio.sleep(0.05)
            run.terminate("stop")

        tg.start_soon(stop)
        t0 = time.monotonic()
        r = await run
    assert r.status == "terminated" and r.reason == "stop"
    assert time.monotonic() - t0 < 2


def test_terminate_from_another_thread_stops_a_sync_run() -> None:
    import threading

    run = run_code("while (true) {}")
    timer = threading.Timer(0.05, run.terminate, args=("from a thread",))
    timer.start()
    r = run.run_sync()
    timer.join()
    assert r.status == "terminated" and r.reason == "from a thread"


def test_limits_are_reported_in_the_typed_result() -> None:
    r = run_code_sync("export default 1")
    assert isinstance(r.metrics, sandbox.RunMetrics)


@pytest.mark.timeout(120)
def test_many_deadlines_firing_together_stop_every_busy_run() -> None:
    """Epoch advances are engine-wide: a stop requested while another store's callback is
    deciding must not be lost (every run ends, none spins on)."""

    async def main() -> list[sandbox.CodeResult]:
        results: list[sandbox.CodeResult] = []

        async def one(i: int) -> None:
            results.append(
                await run_code("for (;;) {}", language="javascript", timeout=0.02 + (i % 7) * 0.01)
            )

        with anyio.fail_after(30):  # a lost stop would spin forever
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(one, i)
        return results

    for _ in range(3):
        results = anyio.run(main)
        assert [r.status for r in results] == ["terminated"] * 40
