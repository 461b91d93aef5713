"""The worker pool and a run's control: no run, host function or callback can deadlock, starve
or kill the pool, or hang a run past its stop.

Most tests go through the public API; the pool's own behaviour (growth, cap, shrinking, a
failing job) is checked on a private :class:`Workers`, and host failures the public API cannot
provoke are injected by patching :class:`Run` (said where).
"""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _support import a_cancellation

from quickjail.bridge import run_code, run_code_sync
from quickjail.sandbox import CodeResult, _engine
from quickjail.sandbox._abi import QJ_FAIL
from quickjail.sandbox._run import NUDGE_INTERVAL, Run
from quickjail.sandbox._threads import Deadlines, Workers

GENEROUS = 60.0  # seconds: far more than anything here takes on a loaded machine
_TEST_POOL = "quickjail-test-pool"  # private pools' threads, told apart from the engine's


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Call ``fn`` on a daemon thread; the box gets its result or exception."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(fn())
        except BaseException as exc:
            box.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, box


def _outcome(t: threading.Thread, box: list[Any]) -> CodeResult:
    t.join(GENEROUS)
    assert box, "the run did not end"
    out = box[0]
    assert isinstance(out, CodeResult), out
    return out


def _eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + GENEROUS
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _pool() -> Workers:
    run_code_sync("export default 0")  # the engine exists
    return _engine.get_engine().workers


async def _noop_report(_value: Any) -> None:
    await anyio.lowlevel.checkpoint()


def _pool_threads_alive() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "quickjail-worker" and t.is_alive())


def _pool_threads_counted() -> int:
    return sum(e.workers.threads for e in _engine._engines.values())


def test_host_functions_that_run_code_cannot_deadlock_the_pool() -> None:
    n = _pool().core + 2
    barrier = threading.Barrier(n, timeout=GENEROUS)

    def tool() -> Any:
        barrier.wait()  # every outer run holds a worker at the same time
        return run_code_sync("export default 40 + 2", timeout=GENEROUS).result

    def outer() -> CodeResult:
        return run_code_sync("export default host()", globals={"host": tool}, timeout=GENEROUS)

    runs = [_in_thread(outer) for _ in range(n)]
    results = [_outcome(t, box) for t, box in runs]
    assert [(r.status, r.result) for r in results] == [("success", 42)] * n, results[0].error


def test_blocking_host_functions_do_not_starve_other_runs() -> None:
    n = _pool().core + 2
    release = threading.Event()
    entered = threading.Semaphore(0)

    def block() -> int:
        entered.release()
        release.wait(3 * GENEROUS)  # longer than the test waits for the other run
        return 1

    def blocked() -> CodeResult:
        return run_code_sync("export default host()", globals={"host": block})

    blockers = [_in_thread(blocked) for _ in range(n)]
    try:
        for _ in range(n):  # every blocking host function holds its worker
            assert entered.acquire(timeout=GENEROUS)
        other = _outcome(*_in_thread(lambda: run_code_sync("export default 'free'")))
        assert (other.status, other.result) == ("success", "free")
    finally:
        release.set()
    assert [_outcome(t, box).result for t, box in blockers] == [1] * n


def test_the_pool_grows_past_its_core_and_extra_threads_exit_when_idle() -> None:
    pool = Workers(
        core=1, cap=4, deadlines=Deadlines(), grow_after=0.01, idle_exit=0.05, name=_TEST_POOL
    )
    release = threading.Event()
    started = threading.Semaphore(0)

    def job() -> None:
        started.release()
        release.wait(GENEROUS)

    for _ in range(4):
        pool.submit(job)
    for _ in range(4):  # all four run at once although the core is one thread
        assert started.acquire(timeout=GENEROUS)
    assert pool.threads == 4
    release.set()
    assert _eventually(lambda: pool.threads == 1 and pool.idle == 1)


def test_every_job_submitted_from_many_threads_runs_once_and_the_pool_settles_idle() -> None:
    """Wake-ups and claims stay matched under contention: idle workers claimed by a submit,
    new threads, backlog jobs taken by busy workers and the reaper's exit tokens."""
    pool = Workers(
        core=2, cap=6, deadlines=Deadlines(), grow_after=0.001, idle_exit=0.02, name=_TEST_POOL
    )
    lock = threading.Lock()
    ran: list[int] = []
    done = threading.Semaphore(0)
    per_thread, submitters = 300, 6

    def job(i: int) -> None:
        with lock:
            ran.append(i)
        if i % 7 == 0:
            time.sleep(0.001)  # some jobs hold their worker: a backlog builds, the pool grows
        done.release()

    def submit_many(base: int) -> None:
        for i in range(per_thread):
            pool.submit(lambda i=base + i: job(i))

    threads = [
        threading.Thread(target=submit_many, args=(t * per_thread,)) for t in range(submitters)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(GENEROUS)
    for _ in range(per_thread * submitters):
        assert done.acquire(timeout=GENEROUS)
    assert sorted(ran) == list(range(per_thread * submitters))
    assert _eventually(lambda: pool.threads == 2 and pool.idle == 2)


def test_the_pool_never_exceeds_its_cap_and_jobs_over_it_still_run() -> None:
    pool = Workers(
        core=1, cap=2, deadlines=Deadlines(), grow_after=0.01, idle_exit=GENEROUS, name=_TEST_POOL
    )
    release = threading.Event()
    started = threading.Semaphore(0)
    finished = threading.Semaphore(0)

    def job() -> None:
        started.release()
        release.wait(GENEROUS)
        finished.release()

    for _ in range(3):
        pool.submit(job)
    for _ in range(2):
        assert started.acquire(timeout=GENEROUS)
    time.sleep(0.2)  # 20x the growth delay: a pool that ignored its cap would have grown
    assert pool.threads == 2
    release.set()
    for _ in range(3):
        assert finished.acquire(timeout=GENEROUS)
    assert _eventually(lambda: pool.idle == 2)


@pytest.mark.parametrize("failure", [RuntimeError, SystemExit])
def test_a_job_that_raises_does_not_cost_the_pool_its_worker(failure: type[BaseException]) -> None:
    pool = Workers(core=1, cap=1, deadlines=Deadlines(), name=_TEST_POOL)
    ran = threading.Event()

    def bad() -> None:
        raise failure("a job that fails")

    pool.submit(bad)
    pool.submit(ran.set)
    assert ran.wait(GENEROUS)
    assert _eventually(lambda: pool.idle == 1)
    assert pool.threads == 1


@pytest.mark.parametrize("driver", ["whole-run", "sliced"])
def test_an_unencodable_fn_is_a_reference_error_and_leaves_every_worker_alive(
    driver: str,
) -> None:
    kw: dict[str, Any] = {"report": _noop_report} if driver == "sliced" else {}
    for _ in range(_pool().core + 2):  # more runs than the pool has core threads
        r = _outcome(
            *_in_thread(lambda: run_code_sync("export default 1", execute={"fn": "\ud800"}, **kw))
        )
        assert r.status == "error" and r.error is not None
        assert r.error.name == "ReferenceError" and "not valid Unicode" in r.error.message
    assert run_code_sync("export default 2", timeout=GENEROUS).result == 2
    assert _eventually(lambda: _pool_threads_alive() == _pool_threads_counted())


@pytest.mark.parametrize("driver", ["whole-run", "sliced"])
def test_a_host_failure_inside_a_slice_ends_the_run_as_an_error_naming_it(
    driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # injected: a host bug in the slice (the public API has no way left to provoke one)
    def broken(self: Run) -> int:
        raise LookupError("a host bug")

    monkeypatch.setattr(Run, "slice_start", broken)
    kw: dict[str, Any] = {"report": _noop_report} if driver == "sliced" else {}
    r = _outcome(*_in_thread(lambda: run_code_sync("export default 1", **kw)))
    monkeypatch.undo()
    assert r.status == "error" and r.error is not None
    assert r.error.name == "InternalError" and "LookupError" in r.error.message
    assert any(isinstance(e, LookupError) for e in r.host_errors)
    assert run_code_sync("export default 2", timeout=GENEROUS).result == 2
    assert _eventually(lambda: _pool_threads_alive() == _pool_threads_counted())


@pytest.mark.parametrize("driver", ["whole-run", "sliced"])
def test_a_stopped_run_that_never_finished_stops_nudging_and_is_not_kept_alive(
    driver: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # injected: the run is told to stop (the epoch nudge starts), then its job fails before
    # finish() decided anything
    _pool()
    engine = _engine.get_engine()
    seen: list[weakref.ref[Run]] = []

    def stopped(self: Run) -> int:
        seen.append(weakref.ref(self))
        self.terminate("stop requested")
        return QJ_FAIL

    def finish_fails(self: Run, status: int | None, *, release: bool = True) -> CodeResult:
        raise LookupError("a host bug before finish")

    monkeypatch.setattr(Run, "slice_start", stopped)
    monkeypatch.setattr(Run, "finish", finish_fails)
    before = engine.deadlines.pending
    kw: dict[str, Any] = {"report": _noop_report} if driver == "sliced" else {}
    t, box = _in_thread(lambda: run_code_sync("export default 1", **kw))
    t.join(GENEROUS)
    monkeypatch.undo()
    assert box and isinstance(box[0], LookupError)
    del box

    def quiet() -> bool:  # the nudge re-adds itself every NUDGE_INTERVAL until it stops
        for _ in range(20):
            if engine.deadlines.pending > before:
                return False
            time.sleep(NUDGE_INTERVAL)
        return True

    assert _eventually(quiet)

    def collected() -> bool:
        gc.collect()
        return seen[0]() is None

    assert _eventually(collected)


@pytest.mark.anyio
async def test_a_report_callback_that_never_returns_ends_at_the_run_deadline() -> None:
    async def stuck(_value: Any) -> None:
        await anyio.sleep_forever()

    with anyio.fail_after(GENEROUS):
        r = await run_code(
            "report(1); report(2); export default 'done'",
            language="javascript",
            report=stuck,
            timeout=2.0,
        )
    assert (r.status, r.result, r.reports) == ("success", "done", [1, 2])
    assert any("cancelled" in str(e) and "0 of 2" in str(e) for e in r.host_errors)


@pytest.mark.anyio
async def test_terminate_ends_a_run_whose_report_callback_never_returns() -> None:
    got = anyio.Event()

    async def stuck(_value: Any) -> None:
        got.set()
        await anyio.sleep_forever()

    execution = run_code("report(1); export default 'done'", language="javascript", report=stuck)
    results: list[CodeResult] = []

    async def drive() -> None:
        results.append(await execution)

    with anyio.fail_after(GENEROUS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            await got.wait()
            execution.terminate("enough")
    # the guest may or may not have ended when terminate came; either way the run ended
    assert results[0].status in ("success", "terminated") and results[0].reports == [1]
    assert any("(enough)" in str(e) for e in results[0].host_errors)


@pytest.mark.anyio
async def test_a_host_function_raising_the_cancellation_exception_fails_only_that_call() -> None:
    async def flaky() -> int:
        raise await a_cancellation()

    async def fine() -> int:
        await anyio.lowlevel.checkpoint()
        return 7

    src = """
        let m
        try { await flaky() } catch (e) { m = 'rejected' }
        export default [m, await fine()]
    """
    with anyio.fail_after(GENEROUS):
        r = await run_code(src, language="javascript", globals={"flaky": flaky, "fine": fine})
    assert (r.status, r.result) == ("success", ["rejected", 7]), r.error
    assert len(r.host_errors) == 1


def _exit_sync() -> None:
    raise SystemExit(3)


async def _exit_async() -> None:
    raise SystemExit(3)


def _exit_report(_value: Any) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("program", "kw"),
    [
        ("import { exit } from 'h'; export default exit();", {"h": _exit_sync}),
        ("import { exit } from 'h'; export default await exit();", {"h": _exit_async}),
        ("report(1); export default await new Promise(() => {});", {"report": _exit_report}),
    ],
    ids=["sync-host-function", "async-host-function", "report-callback"],
)
def test_system_exit_from_host_code_stops_the_run_and_reaches_the_caller_bare(
    program: str, kw: dict[str, Any]
) -> None:
    opts: dict[str, Any] = {"timeout": GENEROUS}
    if "h" in kw:
        opts["imports"] = {"h": {"exit": kw["h"]}}
    else:
        opts["report"] = kw["report"]

    async def main() -> BaseException | None:
        try:
            await run_code(program, **opts)
        except BaseException as exc:  # what the caller of `await run` sees
            return exc
        return None

    seen = anyio.run(main)
    # bare: not wrapped in a task group's BaseExceptionGroup
    assert type(seen) in (SystemExit, KeyboardInterrupt), repr(seen)
    assert run_code_sync("export default 2", timeout=GENEROUS).result == 2
    assert _eventually(lambda: _pool_threads_alive() == _pool_threads_counted())


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # 1,000 runs: one backend is enough
async def test_a_run_beyond_the_live_sandbox_cap_is_an_error_outcome_not_a_raise() -> None:
    cap = _engine.MAX_LIVE_SANDBOXES
    gate = anyio.Event()
    live = 0
    all_live = anyio.Event()

    async def hold() -> None:
        nonlocal live
        live += 1
        if live == cap:
            all_live.set()
        await gate.wait()

    holder = "import { hold } from 'h'; await hold(); export default 1;"
    results: list[CodeResult] = []

    async def one() -> None:
        results.append(await run_code(holder, imports={"h": {"hold": hold}}, timeout=GENEROUS))

    async with anyio.create_task_group() as tg:
        for _ in range(cap):
            tg.start_soon(one)
        with anyio.fail_after(GENEROUS):
            await all_live.wait()
        extra_async = await run_code("export default 2", report=_noop_report)
        extra_sync = await anyio.to_thread.run_sync(lambda: run_code_sync("export default 2"))
        gate.set()
    for extra in (extra_async, extra_sync):
        assert extra.status == "error" and extra.error is not None
        assert extra.error.name == "InternalError" and str(cap) in extra.error.message
        assert any(isinstance(e, MemoryError) for e in extra.host_errors)
    assert len(results) == cap and all(r.result == 1 for r in results)
    assert run_code_sync("export default 3", timeout=GENEROUS).result == 3
