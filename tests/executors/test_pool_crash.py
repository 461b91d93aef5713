"""Crash containment of the process pool, through the public API: a worker killed, stopped or
cancelled mid-run ends only its own run, is replaced, and nothing leaks; the queue is bounded;
close leaves no process behind. (A real segmentation fault, which ``kill -SEGV`` is not for a
process whose wasmtime handles SIGSEGV, is in ``test_pool_hostile.py``.)

Every test that kills a worker has its own pool."""

from __future__ import annotations

import gc
import os
import random
import signal
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from quickjail import bridge
from quickjail.executors import ExecutorClosed, ProcessPool, QueueFull
from quickjail.sandbox import CodeExecution, CodeResult

GENEROUS = 60.0  # seconds: far more than anything here takes on a loaded machine


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _until(predicate: Any) -> None:
    """Wait for a fact the pool establishes on its own threads (bounded, not timed)."""
    for _ in range(int(GENEROUS / 0.01)):
        if predicate():
            return
        threading.Event().wait(0.01)
    raise AssertionError("the pool never got there")


class Hold:
    """A host function that tells the test it was entered and blocks until released."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.gate = threading.Event()

    def __call__(self) -> int:
        self.entered.release()
        assert self.gate.wait(GENEROUS)
        return 1

    def wait_entered(self, n: int = 1) -> None:
        for _ in range(n):
            assert self.entered.acquire(timeout=GENEROUS)


def _held_run(pool: ProcessPool, hold: Hold, **kw: Any) -> CodeExecution:
    return bridge.run_code(
        'import { hold } from "h"; report("before"); export default await hold();',
        imports={"h": {"hold": hold}},
        executor=pool,
        **kw,
    )


def _in_thread(h: CodeExecution) -> tuple[threading.Thread, list[CodeResult]]:
    out: list[CodeResult] = []
    t = threading.Thread(target=lambda: out.append(h.run_sync()))
    t.start()
    return t, out


def _in_thread_awaited(h: CodeExecution) -> tuple[threading.Thread, list[CodeResult]]:
    out: list[CodeResult] = []

    async def wait() -> None:
        out.append(await h)

    t = threading.Thread(target=anyio.run, args=(wait,))
    t.start()
    return t, out


@pytest.fixture
def pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=2) as p:
        p.start()
        _until(lambda: len(p.pids) == 2)
        yield p


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGABRT])
def test_a_worker_dying_mid_run_ends_only_its_run_as_worker_lost_and_is_replaced(
    pool: ProcessPool, sig: signal.Signals
) -> None:
    hold = Hold()
    runs = [_held_run(pool, hold), _held_run(pool, hold)]
    threads = [_in_thread(h) for h in runs]
    hold.wait_entered(2)  # both workers are inside a run
    victim = pool.pids[0]
    os.kill(victim, sig)
    # the dead worker's run ends at once, while its host call is still blocked here
    _until(lambda: any(h.result is not None for h in runs))
    hold.gate.set()
    for t, _ in threads:
        t.join(GENEROUS)
    results = sorted((out[0] for _, out in threads), key=lambda r: r.status)
    lost, survivor = results
    assert lost.status == "error" and lost.reason == "worker_lost"
    assert lost.error is not None and lost.error.name == "WorkerLost"
    assert f"killed by {sig.name}" in lost.error.message
    assert lost.reports == ["before"]
    assert survivor.status == "success" and survivor.result == 1
    _until(lambda: len(pool.pids) == 2 and victim not in pool.pids)
    assert not _alive(victim)
    assert bridge.run_code_sync("export default 7", executor=pool).result == 7


def test_a_hung_worker_is_killed_at_the_deadline_plus_grace(pool: ProcessPool) -> None:
    def freeze() -> int:
        for pid in pool.pids:  # the one running this run stops; the other is idle anyway
            os.kill(pid, signal.SIGSTOP)
        return 1

    before = pool.pids
    r = bridge.run_code_sync(
        'import { freeze } from "h"; await freeze(); while (true) {}',
        imports={"h": {"freeze": freeze}},
        timeout=0.2,
        executor=pool,
    )
    assert r.status == "terminated" and r.reason == "timeout"
    assert any("killed" in str(e) for e in r.host_errors), r
    for pid in before:
        if _alive(pid):
            os.kill(pid, signal.SIGCONT)
    _until(lambda: len(pool.pids) == 2)
    assert bridge.run_code_sync("export default 1", executor=pool).result == 1


def test_terminate_reaches_a_stopped_worker_and_kills_it_after_the_grace(
    pool: ProcessPool,
) -> None:
    hold = Hold()
    h = _held_run(pool, hold)
    t, out = _in_thread(h)
    hold.wait_entered()
    for pid in pool.pids:
        os.kill(pid, signal.SIGSTOP)
    h.terminate("enough")
    t.join(GENEROUS)
    hold.gate.set()
    assert out[0].status == "terminated" and out[0].reason == "enough"
    for pid in pool.pids:
        os.kill(pid, signal.SIGCONT)
    assert bridge.run_code_sync("export default 1", executor=pool).result == 1


@pytest.mark.anyio
async def test_cancelling_the_awaiting_task_stops_the_remote_run(pool: ProcessPool) -> None:
    h = bridge.run_code('report("spinning"); while (true) {}', executor=pool)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(h.wait)
            async for _ in h.reports():
                scope.cancel()  # the run is spinning on its worker now
    assert scope.cancelled_caught
    assert h.result is not None
    assert h.result.status == "terminated" and h.result.reason == "cancelled"
    assert not h.running
    r = await bridge.run_code("export default 2", executor=pool)
    assert r.result == 2


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_a_host_call_returning_after_its_run_ended_never_reaches_the_next_run(
    drive: str,
) -> None:
    hold = Hold()
    returned = threading.Event()

    def late() -> int:
        try:
            return hold()
        finally:
            returned.set()

    asked = threading.Event()

    def ask() -> int:
        asked.set()
        assert returned.wait(GENEROUS)
        threading.Event().wait(0.2)  # room for the late reply to be sent (if it ever were)
        return 2

    with ProcessPool(workers=1) as pool:
        first = bridge.run_code(
            'import { late } from "h"; export default await late();',
            imports={"h": {"late": late}},
            executor=pool,
        )
        if drive == "run_sync":
            t, out = _in_thread(first)
        else:
            t, out = _in_thread_awaited(first)
        hold.wait_entered()
        first.terminate("enough")
        t.join(GENEROUS)
        assert out[0].status == "terminated"
        # the same worker runs the next run, whose first call has the same call id
        second = bridge.run_code(
            'import { ask } from "h"; export default await ask();',
            imports={"h": {"ask": ask}},
            executor=pool,
        )
        t2, out2 = _in_thread(second)
        assert asked.wait(GENEROUS)  # the second run's call is in flight
        hold.gate.set()  # the first run's call returns now: its reply must go nowhere
        t2.join(GENEROUS)
        assert out2[0].status == "success" and out2[0].result == 2


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_terminate_stops_a_spinning_run_without_host_functions_and_its_worker_serves_on(
    drive: str,
) -> None:
    """Such a run occupies the worker's thread that reads the caller's pipe: the stop goes by
    the control pipe, and the same worker process runs the next run."""
    spinning = threading.Event()
    reason = "enough " * 100  # longer than a stop frame carries: the caller keeps it whole
    with ProcessPool(workers=1) as pool:
        h = bridge.run_code(
            'report("spinning"); while (true) {}',
            executor=pool,
            report=lambda _: spinning.set(),
        )
        t, out = (_in_thread if drive == "run_sync" else _in_thread_awaited)(h)
        assert spinning.wait(GENEROUS)
        (pid,) = pool.pids
        h.terminate(reason)
        t.join(GENEROUS)
        assert out[0].status == "terminated" and out[0].reason == reason
        assert bridge.run_code_sync("export default 3", executor=pool).result == 3
        assert pool.pids == [pid]


def test_terminate_before_the_run_starts_runs_nothing(pool: ProcessPool) -> None:
    h = bridge.run_code("export default 1", executor=pool)
    h.terminate("never mind")
    r = h.run_sync()
    assert r.status == "terminated" and r.reason == "never mind"


def test_a_full_queue_refuses_the_run_at_once_and_queued_runs_all_run() -> None:
    hold = Hold()
    with ProcessPool(workers=1, max_queued=0) as pool:
        h = _held_run(pool, hold)
        t, out = _in_thread(h)
        hold.wait_entered()
        with pytest.raises(QueueFull, match="busy"):
            bridge.run_code_sync("export default 1", executor=pool)
        hold.gate.set()
        t.join(GENEROUS)
        assert out[0].result == 1

    hold = Hold()
    with ProcessPool(workers=1, max_queued=1) as pool:
        h = _held_run(pool, hold)
        t, out = _in_thread(h)
        hold.wait_entered()
        queued = bridge.run_code("export default 1", executor=pool)
        q, queued_out = _in_thread(queued)
        _until(lambda: queued.running)
        queued.terminate("not waiting")  # waiting for the worker, or just about to
        q.join(GENEROUS)
        assert queued_out[0].status == "terminated" and queued_out[0].reason == "not waiting"
        hold.gate.set()
        t.join(GENEROUS)
        assert out[0].result == 1

    async def many() -> list[Any]:
        order: list[int] = []
        with ProcessPool(workers=1, max_queued=10) as queued:

            async def one(i: int) -> None:
                r = await bridge.run_code(f"export default {i}", executor=queued)
                order.append(r.result)

            async with anyio.create_task_group() as tg:
                for i in range(6):
                    tg.start_soon(one, i)
                    await anyio.lowlevel.checkpoint()
        return order

    assert sorted(anyio.run(many)) == list(range(6))


@pytest.mark.parametrize("ahead", ["alone", "with a host function"])
def test_a_queued_run_gets_the_worker_once_the_run_ahead_sent_its_result_not_once_it_was_read(
    ahead: str,
) -> None:
    """The pool hands the worker on from the thread that reads the result: the run ahead's
    own thread (here held in its report callback, as by a busy caller) is not waited for."""
    held, gate = threading.Event(), threading.Event()

    def hold_reports(_: Any) -> None:
        held.set()
        assert gate.wait(GENEROUS)

    imports = {"h": {"one": lambda: 1}} if ahead != "alone" else None
    source = 'import { one } from "h"; report(await one());' if imports else "report(1);"
    with ProcessPool(workers=1, max_queued=1) as pool:
        first = bridge.run_code(
            f"{source} export default 7", executor=pool, imports=imports, report=hold_reports
        )
        t, out = _in_thread(first)
        assert held.wait(GENEROUS)
        queued = bridge.run_code("export default 8", executor=pool)
        q, queued_out = _in_thread(queued)
        q.join(GENEROUS)  # while the first run's thread is still held
        assert queued_out and queued_out[0].result == 8
        assert first.running
        gate.set()
        t.join(GENEROUS)
        assert out[0].status == "success" and out[0].result == 7 and out[0].reports == [1]


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_the_time_a_run_waits_for_a_worker_counts_toward_its_timeout(drive: str) -> None:
    """As in-process, a run's timeout counts from its await: a ``timeout=1`` run queued
    behind a run that holds the only worker ends ``terminated`` / ``"timeout"`` without
    running, while the run ahead still holds the worker (bounded by GENEROUS, not timed)."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> int:
        holding.set()
        release.wait(GENEROUS)  # old code: the queued run waits this long, then succeeds
        return 1

    with ProcessPool(workers=1) as pool:
        ahead = bridge.run_code(
            "export default await hold()", globals={"hold": hold}, executor=pool
        )
        t, out = _in_thread(ahead)
        assert holding.wait(GENEROUS)
        queued = bridge.run_code("export default 2", timeout=1, executor=pool)
        if drive == "run_sync":
            r = queued.run_sync()
        else:

            async def wait() -> CodeResult:
                return await queued

            r = anyio.run(wait)
        still_held = not release.is_set() and ahead.running
        release.set()
        t.join(GENEROUS)
        assert (r.status, r.reason, r.result) == ("terminated", "timeout", None), r
        assert still_held
        assert out[0].result == 1
        # the pool serves on: the next run with a timeout runs
        assert bridge.run_code_sync("export default 3", timeout=1, executor=pool).result == 3


def test_one_warm_worker_serves_run_after_run() -> None:
    with ProcessPool(workers=1) as pool:
        first = bridge.run_code_sync("export default 1", executor=pool)
        pids = pool.pids
        for i in range(5):
            assert bridge.run_code_sync(f"export default {i}", executor=pool).result == i
        assert pool.pids == pids and first.result == 1


def test_close_leaves_no_process_behind_and_is_idempotent() -> None:
    hold = Hold()
    pool = ProcessPool(workers=2)
    h = _held_run(pool, hold)
    t, out = _in_thread(h)
    hold.wait_entered()
    pids = pool.pids
    assert len(pids) == 2
    pool.close()
    pool.close()
    t.join(GENEROUS)
    hold.gate.set()
    assert out[0].status == "error" and out[0].reason == "worker_lost"
    assert out[0].error is not None and "pool was closed" in out[0].error.message
    assert pool.closed and pool.pids == []
    assert not any(_alive(pid) for pid in pids)
    _until(lambda: not [t for t in threading.enumerate() if t.name.startswith("quickjail-pool")])
    with pytest.raises(ExecutorClosed):
        bridge.run_code("export default 1", executor=pool)


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_a_run_waiting_for_a_worker_when_the_pool_closes_raises_executor_closed(
    drive: str,
) -> None:
    hold = Hold()
    pool = ProcessPool(workers=1)
    h = _held_run(pool, hold)
    t, out = _in_thread(h)
    hold.wait_entered()
    queued = bridge.run_code("export default 1", executor=pool)
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            if drive == "run_sync":
                queued.run_sync()
            else:
                anyio.run(queued.wait)
        except BaseException as exc:
            raised.append(exc)

    q = threading.Thread(target=wait)
    q.start()
    _until(lambda: queued.running)
    threading.Event().wait(0.05)  # room to reach the queue (it is there, or soon after)
    pool.close()
    q.join(GENEROUS)
    t.join(GENEROUS)
    hold.gate.set()
    assert len(raised) == 1 and isinstance(raised[0], ExecutorClosed), raised
    assert out[0].reason == "worker_lost"


@pytest.mark.anyio
async def test_async_with_closes_the_pool() -> None:
    async with ProcessPool(workers=1) as pool:
        assert (await bridge.run_code("export default 3", executor=pool)).result == 3
        pids = pool.pids
    assert pool.closed and not any(_alive(pid) for pid in pids)


def test_a_pool_dropped_without_close_takes_its_workers_with_it() -> None:
    pool = ProcessPool(workers=2)
    assert bridge.run_code_sync("export default 1", executor=pool).result == 1
    pids = pool.pids
    del pool
    gc.collect()
    _until(lambda: not any(_alive(pid) for pid in pids))


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"workers": 0}, ValueError),
        ({"workers": 1.5}, TypeError),
        ({"workers": True}, TypeError),
        ({"workers": 1, "max_queued": -1}, ValueError),
    ],
)
def test_the_pool_refuses_bad_options_before_starting_anything(
    kw: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        ProcessPool(**kw)


def test_runs_stopped_at_random_moments_while_others_queue_each_end_as_themselves() -> None:
    """Stops race the pool's hand-over (queued, just handed a worker, running, ending):
    every run ends ``success`` with its own result or ``terminated`` with its own reason,
    and the pool keeps its workers."""
    rng = random.Random(7)
    out: dict[int, CodeResult] = {}
    lock = threading.Lock()

    def one(i: int) -> None:
        h = bridge.run_code(
            f"let x = 0; for (let k = 0; k < {rng.randrange(0, 200_000)}; k++) x++;"
            f" export default {i};",
            executor=pool,
        )
        if i % 2:
            delay = rng.random() * 0.03  # queued, just handed on, running, or ended
            threading.Timer(delay, h.terminate, args=(f"stop {i}",)).start()
        r = h.run_sync()
        with lock:
            out[i] = r

    with ProcessPool(workers=2) as pool:
        threads = [
            threading.Thread(target=lambda k=k: [one(i) for i in range(k, 120, 6)])
            for k in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(GENEROUS)
        assert len(out) == 120
        for i, r in out.items():
            if r.status == "terminated":
                assert i % 2 and r.reason == f"stop {i}", (i, r)
            else:
                assert r.status == "success" and r.result == i, (i, r)
        assert len(pool.pids) == 2
        assert bridge.run_code_sync("export default 5", executor=pool).result == 5


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_a_run_handed_a_worker_that_just_died_idle_ends_and_is_never_left_waiting(
    drive: str,
) -> None:
    """A worker killed while idle may be taken by a run before the pool has reaped it: that
    run then ends ``worker_lost`` (or runs on the replacement), it never waits for good."""
    with ProcessPool(workers=1) as pool:
        for i in range(10):
            assert bridge.run_code_sync(f"export default {i}", executor=pool).result == i
            (pid,) = pool.pids
            os.kill(pid, signal.SIGKILL)
            h = bridge.run_code(f"export default {i}", executor=pool)
            t, out = (_in_thread if drive == "run_sync" else _in_thread_awaited)(h)
            t.join(GENEROUS)
            assert out, "the run never ended"
            r = out[0]
            assert (r.status, r.result) == ("success", i) or r.reason == "worker_lost", r
