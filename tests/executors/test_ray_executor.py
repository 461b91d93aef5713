"""The Ray executor: a run in a Ray actor is the run it would be in this process.

One local Ray cluster for the module (``ray.init(num_cpus=2)``, the smallest object store Ray
takes, no dashboard) and one executor on it; the kill tests make their own one-actor
executor so they know which process to kill. No timing assertions: every wait is bounded by
a status, a report or a generous multiple.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import psutil
import pytest

# a one-machine Ray keeps to loopback (else it binds and talks to the machine's interface
# address); read when ray is imported
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

import ray  # the ray extra: make installs it
from test_executor_parity import CASES as PARITY
from test_executor_parity import _same as parity_same
from test_executor_parity import _view as parity_view

from quickjail import CodeResult, bridge, sandbox
from quickjail.executors import (
    ExecutorClosed,
    ProcessPool,
    QueueFull,
    RayExecutor,
    WorkerStartError,
    _remote,
    _wire,
)
from quickjail.executors import _ray as _ray_executor
from quickjail.sandbox import CodeExecution

OBJECT_STORE = 80 * 2**20  # the least Ray 2.60 accepts (75 MiB)
GENEROUS = 60.0  # seconds: far more than anything here takes on a loaded machine


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A local Ray cluster for the module; its shutdown must leave no process behind."""
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    # what ray.init changes in this process and ray.shutdown leaves: put back for later tests
    env, hook, sigterm = dict(os.environ), sys.excepthook, signal.getsignal(signal.SIGTERM)
    ray.init(
        num_cpus=2,
        object_store_memory=OBJECT_STORE,
        include_dashboard=False,
        log_to_driver=False,
    )
    try:
        yield
    finally:
        # free the tests' actor and object handles while Ray still runs: one freed later, on
        # another thread, touches Ray after ray.shutdown, and Ray then ends this process
        gc.collect()
        ray.shutdown()
        os.environ.clear()
        os.environ.update(env)
        sys.excepthook = hook
        signal.signal(signal.SIGTERM, sigterm)
    _until(lambda: not [p for p in me.children(recursive=True) if p.pid not in before])


@pytest.fixture(scope="module")
def executor(cluster: None) -> Iterator[RayExecutor]:
    with RayExecutor(actors=1, concurrency=3) as ex:
        yield ex


def _same(a: CodeResult, b: CodeResult) -> None:
    assert (a.status, a.reason, a.result, a.reports) == (b.status, b.reason, b.result, b.reports)
    assert (a.error is None) == (b.error is None)
    if a.error is not None and b.error is not None:
        assert (a.error.name, a.error.message) == (b.error.name, b.error.message)


def test_importing_quickjail_executors_does_not_import_ray() -> None:
    code = "import sys, quickjail.executors, quickjail.bridge; print('ray' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=GENEROUS
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "code",
    [
        "export default 6 * 7",
        "export default { list: [1, 'two', null], nested: { ok: true } }",
        "throw new TypeError('bad ' + 'input')",
        "console.log('hi'); export default 1",
        "import { x } from 'left-pad'; export default x",
    ],
)
def test_a_run_on_ray_has_the_result_of_the_same_run_in_process(
    executor: RayExecutor, code: str
) -> None:
    remote = bridge.run_code_sync(code, executor=executor)
    _same(remote, bridge.run_code_sync(code))
    assert [(e.level, e.args) for e in remote.logs] == [
        (e.level, e.args) for e in bridge.run_code_sync(code).logs
    ]


@pytest.mark.parametrize("case", list(PARITY), ids=list(PARITY))
def test_the_pool_parity_table_holds_on_ray(executor: RayExecutor, case: str) -> None:
    # the process pool's table of programs (test_executor_parity.py), field by field
    local = PARITY[case](None).run_sync()
    remote = PARITY[case](executor).run_sync()  # type: ignore[arg-type]
    want, got = parity_view(local), parity_view(remote)
    for key in want:
        assert parity_same(got[key], want[key]), (key, got[key], want[key])


def test_the_handle_is_a_code_execution_with_the_in_process_content_id(
    executor: RayExecutor,
) -> None:
    handle = bridge.run_code("export default 1", executor=executor)
    assert isinstance(handle, CodeExecution)
    assert handle.content_id == bridge.run_code("export default 1").content_id
    assert handle.run_sync().result == 1


@pytest.mark.anyio
async def test_reports_stream_live_and_in_order(executor: RayExecutor) -> None:
    code = "for (let i = 0; i < 40; i++) { report(i); await null } export default 'done'"
    got: list[Any] = []
    run = bridge.run_code(code, executor=executor, report=got.append)
    streamed: list[Any] = []

    async def follow() -> None:
        async for value in run.reports():
            streamed.append(value)

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow)
        result = await run
    assert result.status == "success" and result.result == "done"
    assert result.reports == got == streamed == list(range(40))


@pytest.mark.anyio
async def test_host_functions_sync_and_async_run_in_the_caller(executor: RayExecutor) -> None:
    caller = threading.get_ident(), os.getpid()
    seen: list[tuple[str, int]] = []

    def add(a: int, b: int) -> int:
        seen.append(("add", os.getpid()))
        return a + b

    async def twice(x: int) -> int:
        seen.append(("twice", os.getpid()))
        await anyio.lowlevel.checkpoint()
        return 2 * x

    code = """
        const all = await Promise.all([1, 2, 3, 4].map(x => twice(x)));
        export default [add(1, 2), all]
    """
    host = {"add": bridge.synchronous(add), "twice": twice}
    result = await bridge.run_code(code, executor=executor, globals=host)
    assert result.status == "success", result.error
    assert result.result == [3, [2, 4, 6, 8]]
    assert {pid for _, pid in seen} == {caller[1]}
    assert sorted(name for name, _ in seen) == ["add", "twice", "twice", "twice", "twice"]


@pytest.mark.anyio
async def test_a_failing_host_function_shows_the_program_the_in_process_error(
    executor: RayExecutor,
) -> None:
    def boom() -> None:
        raise ValueError("secret detail")

    async def aboom() -> None:
        raise bridge.HostError("shown to the guest")

    code = """
        const out = [];
        try { boom() } catch (e) { out.push(String(e)) }
        try { await aboom() } catch (e) { out.push(String(e)) }
        export default out
    """
    host = {"boom": bridge.synchronous(boom), "aboom": aboom}
    remote = await bridge.run_code(code, executor=executor, globals=host)
    local = await bridge.run_code(code, globals=host)
    _same(remote, local)
    assert [type(e) for e in remote.host_errors] == [type(e) for e in local.host_errors]
    assert any("secret detail" in str(e) for e in remote.host_errors)


@pytest.mark.anyio
async def test_terminate_from_another_thread_stops_a_busy_loop(executor: RayExecutor) -> None:
    reason = "user stop " * 40  # longer than a stop frame carries: the result keeps it whole

    def stop(value: Any) -> None:
        threading.Thread(target=run.terminate, args=(reason,)).start()

    run = bridge.run_code("report('go'); while (true) {}", executor=executor, report=stop)
    with anyio.fail_after(GENEROUS):
        result = await run
    assert result.status == "terminated" and result.reason == reason
    assert result.reports == ["go"]


@pytest.mark.anyio
async def test_terminate_right_after_the_start_stops_the_run_wherever_it_is(
    executor: RayExecutor,
) -> None:
    # the terminate may reach the actor before the run's start (it waits there for the run),
    # during the start, or after: each way the run ends terminated
    for pause in (0, 0, 0.001, 0.005, 0.02):
        run = bridge.run_code("while (true) {}", executor=executor)
        async with anyio.create_task_group() as tg:

            async def stop(pause: float = pause, run: CodeExecution = run) -> None:
                await anyio.sleep(pause)
                run.terminate("early")

            tg.start_soon(stop)
            with anyio.fail_after(GENEROUS):
                result = await run
        assert result.status == "terminated" and result.reason == "early"


@pytest.mark.anyio
async def test_cancelling_the_awaiting_task_stops_the_remote_run_and_not_its_neighbours(
    executor: RayExecutor,
) -> None:
    neighbour = bridge.run_code(
        "report(1); await new Promise(r => setTimeout(r, 300)); export default 'alive'",
        executor=executor,
    )
    scope = anyio.CancelScope()
    run = bridge.run_code(
        "report('go'); while (true) {}", executor=executor, report=lambda v: scope.cancel()
    )
    async with anyio.create_task_group() as tg:

        async def victim() -> None:
            with scope:
                await run

        tg.start_soon(victim)
        with anyio.fail_after(GENEROUS):
            other = await neighbour
    assert scope.cancelled_caught
    assert run.result is not None and run.result.status == "terminated"
    assert run.result.reason == "cancelled"
    assert other.status == "success" and other.result == "alive"  # same actor, not killed
    # the stopped run's slot comes back: it ended on the actor too
    await anyio.to_thread.run_sync(_until, lambda: _free_slots(executor) == executor.concurrency)
    again = await bridge.run_code("export default 2", executor=executor)
    assert again.result == 2


def test_timeout_stops_an_endless_loop_with_reason_timeout(executor: RayExecutor) -> None:
    r = bridge.run_code_sync("while (true) {}", executor=executor, timeout=0.2)
    assert r.status == "terminated" and r.reason == "timeout"


def test_runaway_allocation_under_a_32_mib_cap_is_status_memory(executor: RayExecutor) -> None:
    r = bridge.run_code_sync(
        "const a = []; while (true) a.push(new Array(100000).fill(1.5));",
        executor=executor,
        memory_limit_bytes=32 * 2**20,
        timeout=20,
    )
    assert r.status == "memory"
    assert r.metrics.peak_memory_bytes <= 32 * 2**20


@pytest.mark.parametrize("how", ["SIGKILL", "ray.kill"])
def test_an_actor_killed_mid_run_ends_its_run_worker_lost_and_is_replaced(
    cluster: None, executor: RayExecutor, how: str
) -> None:
    with RayExecutor(actors=1, concurrency=2) as ex:
        (pid,) = ex.actor_pids()

        def kill(value: Any) -> None:
            if how == "SIGKILL":
                os.kill(pid, signal.SIGKILL)
            else:
                ray.kill(_only_actor(ex), no_restart=True)

        elsewhere = bridge.run_code(
            "await new Promise(r => setTimeout(r, 200)); export default 'elsewhere'",
            executor=executor,
        )
        with anyio.from_thread.start_blocking_portal() as portal:
            future = portal.start_task_soon(elsewhere.wait)
            r = bridge.run_code_sync("report('go'); while (true) {}", executor=ex, report=kill)
            assert future.result(GENEROUS).result == "elsewhere"  # another actor's run goes on
        assert r.status == "error" and r.reason == "worker_lost", r
        assert r.error is not None and r.error.name == "WorkerLost"
        assert "died" in r.error.message and r.reports == ["go"]
        after = bridge.run_code_sync("export default 'replaced'", executor=ex)
        assert after.status == "success" and after.result == "replaced"
        assert ex.actor_pids() != [pid]


def test_a_hung_actor_is_killed_past_the_deadline_and_replaced(
    cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the graces are seconds in production; shortened so the test waits less
    monkeypatch.setattr(_remote, "DEADLINE_GRACE", 0.5)
    monkeypatch.setattr(_ray_executor, "KILL_GRACE", 0.5)
    with RayExecutor(actors=1, concurrency=1) as ex:
        (pid,) = ex.actor_pids()
        os.kill(pid, signal.SIGSTOP)  # the actor takes the run and never answers
        try:
            r = bridge.run_code_sync("export default 1", executor=ex, timeout=0.2)
            assert r.status == "terminated" and r.reason == "timeout", r
            assert any("killed" in str(e) for e in r.host_errors)
            _until(lambda: not psutil.pid_exists(pid) or _zombie(pid))
        finally:
            _signal(pid, signal.SIGCONT)
        after = bridge.run_code_sync("export default 'replaced'", executor=ex)
        assert after.status == "success" and after.result == "replaced"
        assert ex.actor_pids() != [pid]


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + GENEROUS
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.05)


def _free_slots(ex: RayExecutor) -> int:
    (actor,) = ex._actors
    return actor.free


def _only_actor(ex: RayExecutor) -> Any:
    (actor,) = ex._actors
    return actor.handle


def test_a_closed_executor_refuses_runs_and_its_actors_are_gone(cluster: None) -> None:
    ex = RayExecutor(actors=1, concurrency=1)
    (pid,) = ex.actor_pids()
    ex.close()
    ex.close()  # idempotent
    with pytest.raises(ExecutorClosed):
        bridge.run_code("export default 1", executor=ex)
    try:
        psutil.Process(pid).wait(GENEROUS)
    except psutil.NoSuchProcess:
        pass
    assert not psutil.pid_exists(pid)


def test_sandbox_run_code_takes_the_executor_too(executor: RayExecutor) -> None:
    r = sandbox.run_code_sync("export default [1, 2].map(x => x * 3)", executor=executor)
    assert r.status == "success" and r.result == [3, 6]


# durable runs (issue 25 item 5): a run pauses and resumes on Ray as on a pool

KEY = b"k" * 32
PAY = """
export default async function (amount) {
  report({ asking: amount });
  let verdict;
  try { verdict = await approve(amount); } catch (e) { verdict = "rejected: " + e.message; }
  return { verdict };
}
"""


def _approve(amount: Any) -> Any:
    raise bridge.Pause({"amount": amount})


def _pay(executor: Any) -> CodeResult:
    return bridge.run_code_sync(
        PAY, execute={"args": [3]}, globals={"approve": _approve}, timeout=60, executor=executor
    )


def _resume(r: CodeResult, answer: Any, executor: Any) -> CodeResult:
    assert r.status == "paused" and r.continuation is not None, r
    return bridge.resume_sync(
        r.continuation.seal(KEY),
        key=KEY,
        answers={r.paused[0].call_id: answer},
        globals={"approve": _approve},
        timeout=60,
        executor=executor,
    )


def test_a_run_paused_on_a_pool_resumes_on_ray(executor: RayExecutor) -> None:
    with ProcessPool(workers=1) as pool:
        paused = _pay(pool)
    again = _resume(paused, "approved", executor)
    assert (again.status, again.result) == ("success", {"verdict": "approved"}), again


def test_a_run_paused_on_ray_is_the_in_process_pause_and_resumes_anywhere(
    executor: RayExecutor,
) -> None:
    paused, here = _pay(executor), _pay(None)
    assert [(p.call_id, p.function, p.args, p.info) for p in paused.paused] == [
        (p.call_id, p.function, p.args, p.info) for p in here.paused
    ]
    assert paused.reports == here.reports == [{"asking": 3}]
    in_process = _resume(paused, bridge.Rejection("no"), None)
    assert in_process.result == {"verdict": "rejected: no"}, in_process
    with ProcessPool(workers=1) as pool:
        on_pool = _resume(paused, "yes", pool)
    assert on_pool.result == {"verdict": "yes"}, on_pool
    assert _resume(paused, "again", executor).result == {"verdict": "again"}


@pytest.mark.anyio
async def test_runs_beyond_the_free_slots_wait_their_turn(executor: RayExecutor) -> None:
    slots = executor.actors * executor.concurrency
    code = "await new Promise(r => setTimeout(r, 50)); export default i"
    runs = [
        bridge.run_code(code, executor=executor, globals={"i": i}) for i in range(2 * slots + 1)
    ]
    results: dict[int, CodeResult] = {}

    async def one(i: int) -> None:
        results[i] = await runs[i]

    async with anyio.create_task_group() as tg:
        for i in range(len(runs)):
            tg.start_soon(one, i)
    assert [results[i].result for i in range(len(runs))] == list(range(len(runs)))


def test_a_full_queue_refuses_a_run_at_once(cluster: None) -> None:
    with RayExecutor(actors=1, concurrency=1, max_queued=0) as ex:
        with anyio.from_thread.start_blocking_portal() as portal:
            busy = bridge.run_code(
                "report('go'); while (true) {}", executor=ex, report=lambda v: started.set()
            )
            started = threading.Event()
            future = portal.start_task_soon(busy.wait)
            assert started.wait(GENEROUS)
            with pytest.raises(QueueFull):
                bridge.run_code_sync("export default 1", executor=ex)
            busy.terminate("done")
            assert future.result(GENEROUS).status == "terminated"


class _Hostile(_ray_executor.SandboxActor):
    """An actor whose runs send what the caller must not take (defined here, sent by value)."""

    def run(self, run_id: str, start: bytes) -> Iterator[bytes]:
        kind = _wire.start_from(start).program.source
        if "not-bytes" in kind:
            yield "a str, not a frame"  # type: ignore[misc]
        elif "garbage" in kind:
            yield b"\xff" * 64
        else:
            yield _wire.pack(_wire.REPLY, (1, True), (b"",))  # a caller's kind of frame


@pytest.mark.parametrize("what", ["not-bytes", "garbage", "wrong-kind"])
def test_an_actor_breaking_the_protocol_ends_its_run_protocol_violation(
    cluster: None, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(_ray_executor, "SandboxActor", _Hostile)
    try:
        with RayExecutor(actors=1, concurrency=1) as ex:
            r = bridge.run_code_sync(f"export default '{what}'", executor=ex)
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert r.status == "error" and r.reason == "protocol_violation", r
    assert r.error is not None and r.error.name == "ProtocolError"


def test_closing_the_executor_ends_its_running_runs_worker_lost(cluster: None) -> None:
    ex = RayExecutor(actors=1, concurrency=1)
    started = threading.Event()
    busy = bridge.run_code(
        "report('go'); while (true) {}", executor=ex, report=lambda v: started.set()
    )
    with anyio.from_thread.start_blocking_portal() as portal:
        future = portal.start_task_soon(busy.wait)
        assert started.wait(GENEROUS)
        ex.close()
        r = future.result(GENEROUS)
    assert r.status == "error" and r.reason == "worker_lost"
    assert r.error is not None and "closed" in r.error.message


@pytest.mark.anyio
async def test_close_returns_only_once_no_thread_of_the_executor_can_touch_ray(
    cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a Ray driver touched after ray.shutdown() ends its whole process (seen in CI: the stream
    # thread of a run freed Ray's generator after the module's shutdown): close() waits for
    # the runs' stream threads and cancels the kill timers of runs stopped hard
    monkeypatch.setattr(_ray_executor, "KILL_GRACE", 600.0)  # the timer is pending at close
    ex = RayExecutor(actors=1, concurrency=2)
    busy = "report('go'); while (true) {}"
    going = anyio.Event()
    first = bridge.run_code(busy, executor=ex, report=lambda v: going.set())
    scope = anyio.CancelScope()
    second = bridge.run_code(busy, executor=ex, report=lambda v: scope.cancel())

    async def stopped_hard() -> None:
        with scope:
            await second

    async with anyio.create_task_group() as tg:
        tg.start_soon(first.wait)
        with anyio.fail_after(GENEROUS):
            await going.wait()
            await stopped_hard()  # a hard stop: terminate, and a kill timer (KILL_GRACE)
        tracked = [t for t in ex._threads if t.is_alive()]
        assert any(isinstance(t, threading.Timer) for t in tracked), tracked
        assert any(not isinstance(t, threading.Timer) for t in tracked), tracked
        ex.close()
        assert [t for t in tracked if t.is_alive()] == []
    assert first.result is not None and first.result.reason == "worker_lost"


class _Broken(_ray_executor.SandboxActor):
    """An actor that cannot start (a broken installation on a node, say)."""

    def __init__(self) -> None:
        raise RuntimeError("this node cannot load the engine")


def test_actors_that_die_at_start_are_not_replaced_in_a_loop(
    cluster: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    monkeypatch.setattr(_ray_executor, "SandboxActor", _Broken)
    limit = _ray_executor.MAX_START_FAILURES
    outcomes: list[str] = []

    async def one(ex: RayExecutor) -> None:
        try:
            r = await bridge.run_code("export default 1", executor=ex)
        except WorkerStartError:
            outcomes.append("WorkerStartError")
            return
        assert r.error is not None and "creation task" in r.error.message, r
        outcomes.append(str(r.reason))

    async def main(ex: RayExecutor) -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(limit + 2):
                tg.start_soon(one, ex)

    try:
        with RayExecutor(actors=1, concurrency=1) as ex:
            anyio.run(main, ex)
            assert ex._actors == []  # it stopped starting actors that die at once
            again = bridge.run_code_sync("export default 1", executor=ex)
            assert again.reason == "worker_lost"  # the next run tries again
    finally:
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    # one run per actor that died, then the runs still waiting are told
    assert sorted(outcomes) == ["WorkerStartError"] * 2 + ["worker_lost"] * limit
