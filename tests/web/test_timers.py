"""HTML timers inside a run: setTimeout/setInterval and their clears, what keeps a run alive,
what the end of a run cancels, and time: real (bounded by the run's stop, holding no worker
while it waits) or virtual under ``deterministic=True``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import anyio
import pytest

from quickjail import run_code_sync
from quickjail.bridge import run_code
from quickjail.sandbox import CodeExecution, CodeResult, _engine

GENEROUS = 60.0


def _ok(code: str, **kw: object) -> object:
    r = run_code_sync(code, **kw)  # type: ignore[arg-type]
    assert r.ok, r.error
    return r.result


def test_timers_fire_in_due_order_then_set_order() -> None:
    code = """
    export default () => new Promise((done) => {
      const out = [];
      setTimeout(() => out.push("c"), 20);
      setTimeout(() => out.push("a"), 0);
      setTimeout(() => out.push("b"), 0);
      setTimeout(() => { out.push("d"); done(out); }, 40);
    });
    """
    assert _ok(code) == ["a", "b", "c", "d"]


def test_timer_callbacks_get_the_extra_arguments() -> None:
    code = """
    export default () =>
      new Promise((done) => setTimeout((a, b, c) => done([a, b, c]), 1, 1, "x", null));
    """
    assert _ok(code) == [1, "x", None]


def test_ids_are_positive_integers_and_clearing_one_cancels_it() -> None:
    code = """
    export default () => new Promise((done) => {
      const fired = [];
      const a = setTimeout(() => fired.push("a"), 5);
      const b = setTimeout(() => fired.push("b"), 5);
      clearTimeout(a);
      clearTimeout(123456);  // unknown: nothing happens
      clearTimeout();
      clearInterval("nope");
      setTimeout(() => done([Number.isInteger(a) && a > 0, b > a, fired]), 20);
    });
    """
    assert _ok(code) == [True, True, ["b"]]


def test_intervals_repeat_until_cleared_even_from_their_own_callback() -> None:
    code = """
    export default () => new Promise((done) => {
      let n = 0;
      const id = setInterval((step) => {
        n += step;
        if (n === 3) { clearInterval(id); setTimeout(() => done(n), 20); }
      }, 1, 1);
    });
    """
    assert _ok(code) == 3


def test_delays_are_clamped_and_converted_like_webidl_longs() -> None:
    code = """
    export default () => new Promise((done) => {
      const out = [];
      setTimeout(() => out.push("neg"), -50);
      setTimeout(() => out.push("nan"), NaN);
      setTimeout(() => out.push("str"), "2");
      setTimeout(() => { out.push("end"); done(out); }, 10);
    });
    """
    assert _ok(code) == ["neg", "nan", "str", "end"]


def test_timers_nested_past_five_levels_wait_at_least_four_milliseconds() -> None:
    code = """
    export default () => new Promise((done) => {
      const t0 = Date.now();
      let n = 0;
      const step = () => { if (++n === 20) done(Date.now() - t0); else setTimeout(step, 0); };
      setTimeout(step, 0);
    });
    """
    # levels 6..19 are clamped to 4 ms each: a lower bound, whatever the machine's load
    elapsed = _ok(code, timeout=GENEROUS)
    assert isinstance(elapsed, int) and elapsed >= 14 * 4


def test_a_string_handler_is_refused_without_dynamic_code() -> None:
    code = """
    export default () => {
      try { setTimeout("report(1)", 0); return "set"; } catch (e) { return e.name; }
    };
    """
    assert _ok(code) == "TypeError"


def test_a_string_handler_runs_with_dynamic_code() -> None:
    code = """
    export default () =>
      new Promise((done) => { globalThis.done = done; setTimeout("done(6 * 7)", 0); });
    """
    assert _ok(code, dynamic_code=True) == 42


def test_pending_timers_keep_the_run_alive_until_they_fire() -> None:
    code = """
    export default async () => {
      await new Promise((r) => setTimeout(r, 30));
      report("after");
      return "done";
    };
    """
    r = run_code_sync(code, timeout=GENEROUS)
    assert r.ok, r.error
    assert r.reports == ["after"]
    assert r.metrics.timers_fired == 1 and r.metrics.timers_cancelled == 0


def test_timers_still_pending_when_the_entry_settles_are_cancelled_and_counted() -> None:
    code = """
    export default () => {
      setTimeout(() => report("never"), 50);
      setInterval(() => report("never either"), 10);
      setTimeout(() => report("now"), 0);
      return "done";
    };
    """
    r = run_code_sync(code, timeout=GENEROUS)
    assert r.ok, r.error
    assert r.reports == []  # the entry settled before any timer was due
    assert r.metrics.timers_cancelled == 3 and r.metrics.timers_fired == 0


def test_a_throwing_callback_is_logged_and_the_run_goes_on() -> None:
    code = """
    export default () => new Promise((done) => {
      setTimeout(() => { throw new Error("boom"); }, 0);
      setTimeout(() => done("still here"), 5);
    });
    """
    r = run_code_sync(code)
    assert r.ok, r.error
    assert r.result == "still here"
    assert any("boom" in str(e.args) for e in r.logs if e.level == "error")


def test_microtasks_run_between_timer_callbacks() -> None:
    code = """
    export default () => new Promise((done) => {
      const out = [];
      setTimeout(() => { out.push(1); Promise.resolve().then(() => out.push("micro")); }, 0);
      setTimeout(() => { out.push(2); done(out); }, 0);
    });
    """
    assert _ok(code) == [1, "micro", 2]


def test_internal_timers_are_immune_to_replaced_globals_and_guessed_ids() -> None:
    # setTimeout/clearTimeout replaced, ids guessed: a promise the program's own code made
    # from the originals still settles
    code = """
    const st = setTimeout;
    export default () => new Promise((done) => {
      const id = st(() => done("fired"), 5);
      globalThis.setTimeout = () => 0;
      globalThis.clearTimeout = () => {};
      for (let i = 0; i < 100; i++) if (i !== id) clearInterval(i);
    });
    """
    assert _ok(code) == "fired"


def test_deterministic_time_is_virtual_and_the_guest_clock_jumps() -> None:
    code = """
    export default async () => {
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 10 * 60 * 1000));
      const jumped = Date.now() - t0;
      const order = [];
      await new Promise((r) => {
        setTimeout(() => order.push(3), 3000);
        setTimeout(() => order.push(1), 1000);
        setTimeout(() => { order.push(2); }, 2000);
        setTimeout(r, 4000);
      });
      return [jumped >= 600000, jumped < 600100, order];
    };
    """
    # ten minutes of timers inside a one-minute timeout: only virtual time fits
    r = run_code_sync(code, deterministic=True, timeout=GENEROUS)
    assert r.ok, r.error
    assert r.result == [True, True, [1, 2, 3]]


def test_deterministic_timers_repeat_the_same_run() -> None:
    code = """
    export default () => new Promise((done) => {
      const seen = [];
      const id = setInterval(() => {
        seen.push(Date.now());
        if (seen.length === 3) { clearInterval(id); done(seen); }
      }, 250);
    });
    """
    a = run_code_sync(code, deterministic=True)
    b = run_code_sync(code, deterministic=True)
    assert a.ok and b.ok, (a.error, b.error)
    assert a.result == b.result


def test_deterministic_time_saturates_at_the_clocks_end_and_every_timer_still_fires() -> None:
    # 2**64 ns from 2025 is ~7,800 maximal setTimeout jumps: the clock wrapped to the past and
    # the timer straddling the wrap never fired, the run spun until its timeout (issue 28,
    # item 12). Past its end the clock stands still and pending timers fire in due order.
    code = """
    export default async () => {
      const MAX = 2 ** 31 - 1;
      let last = Date.now(), backwards = 0, jumps = 0;
      while (jumps < 9000) {
        await new Promise((r) => setTimeout(r, MAX));
        jumps++;
        const now = Date.now();
        if (now < last) backwards++;
        last = now;
      }
      const order = [];
      await new Promise((r) => {
        setTimeout(() => order.push("late"), MAX);
        setTimeout(() => order.push("soon"), 1000);
        setTimeout(r, MAX);
      });
      const end = Date.now();
      return [jumps, backwards, order, end === last, end > 1.8e13];
    };
    """
    r = run_code_sync(code, deterministic=True, timeout=GENEROUS)
    assert r.status == "success", (r.status, r.reason, r.error)
    assert r.result == [9000, 0, ["soon", "late"], True, True]


def test_a_long_timer_wait_is_stopped_by_the_timeout() -> None:
    code = "export default () => new Promise((r) => setTimeout(r, 3_600_000))"
    r = run_code_sync(code, timeout=0.3)
    assert r.status == "terminated" and r.reason == "timeout"
    assert r.metrics.timers_fired == 0


def _wait_for(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + GENEROUS
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_runs_waiting_on_timers_hold_no_worker_and_terminate_stops_them() -> None:
    workers = _engine.get_engine().workers
    run_code_sync("export default 0")  # the pool exists
    n = workers.core + 2  # more waiting runs than the pool keeps threads
    seen = threading.Semaphore(0)
    code = "export default () => { report(1); return new Promise((r) => setTimeout(r, 3e6)); }"
    execs = [run_code(code, report=lambda _v: seen.release()) for _ in range(n)]
    results: list[CodeResult] = []

    async def collect(e: CodeExecution) -> None:
        results.append(await e)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for e in execs:
                tg.start_soon(collect, e)
            for _ in range(n):
                assert await anyio.to_thread.run_sync(seen.acquire, True, GENEROUS)
            # every run reached its wait, and no worker thread is busy with any of them
            await anyio.to_thread.run_sync(_wait_for, lambda: workers.idle == workers.threads)
            assert all(e.running for e in execs)
            for e in execs:
                e.terminate("stop")

    anyio.run(main)
    assert [(r.status, r.reason) for r in results] == [("terminated", "stop")] * n


def test_a_sync_run_waiting_on_a_timer_holds_no_worker() -> None:
    workers = _engine.get_engine().workers
    run_code_sync("export default 0")
    started = threading.Event()
    box: list[object] = []
    code = "export default () => { report(1); return new Promise((r) => setTimeout(r, 3e6)); }"
    execution = run_code(code, report=lambda _v: started.set(), timeout=GENEROUS)
    t = threading.Thread(target=lambda: box.append(execution.run_sync()))
    t.start()
    assert started.wait(GENEROUS)
    _wait_for(lambda: workers.idle == workers.threads)
    execution.terminate("stop")
    t.join(GENEROUS)
    r = box[0]
    assert isinstance(r, CodeResult)
    assert (r.status, r.reason) == ("terminated", "stop")


@pytest.mark.parametrize("deterministic", [False, True])
def test_timers_and_async_host_calls_interleave(deterministic: bool) -> None:
    async def slow(x: int) -> int:
        await anyio.sleep(0.01)
        return x

    code = """
    export default async () => {
      const out = [];
      const t = new Promise((r) => setTimeout(() => { out.push("timer"); r(); }, 1));
      const v = await slow(5);
      out.push(v);
      await t;
      return out.sort();
    };
    """
    r = run_code_sync(code, globals={"slow": slow}, deterministic=deterministic, timeout=GENEROUS)
    assert r.ok, r.error
    assert r.result == [5, "timer"]


async def test_a_timer_wait_beside_async_host_calls_is_stopped_by_the_timeout(
    anyio_backend: str,
) -> None:
    async def quick() -> int:
        return 1

    code = "await quick(); await new Promise((r) => setTimeout(r, 3e6)); export default 1"
    r = await run_code(code, globals={"quick": quick}, timeout=0.3)
    assert (r.status, r.reason) == ("terminated", "timeout")
    assert r.metrics.host_calls == 1
