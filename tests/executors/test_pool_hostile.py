"""A compromised worker cannot hurt the caller: every protocol violation ends its run as
``error`` with reason ``"protocol_violation"``, and the worker is killed and replaced.

The worker is replaced by ``hostile_worker.py`` (patching the pool's worker command, the one
thing the public API cannot provoke), which misbehaves as each run's source says.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from quickjail import bridge
from quickjail.executors import ProcessPool, WorkerStartError, _pool
from quickjail.sandbox import CodeResult, OutputLimits

HOSTILE = Path(__file__).resolve().parent / "hostile_worker.py"
GENEROUS = 60.0


async def never_returns() -> None:
    await anyio.sleep(GENEROUS)


_gate = threading.Event()


def blocks() -> None:
    """A sync host function that holds its call until the test is over."""
    _gate.wait(GENEROUS)


def _until(predicate: Callable[[], bool]) -> None:
    """Wait for a fact the pool establishes on its own threads (bounded, not timed)."""
    for _ in range(int(GENEROUS / 0.01)):
        if predicate():
            return
        threading.Event().wait(0.01)
    raise AssertionError("the pool never got there")


@pytest.fixture(scope="module")
def hostile() -> Iterator[ProcessPool]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_pool, "_worker_command", lambda: [sys.executable, str(HOSTILE)])
        with ProcessPool(workers=2) as pool:
            yield pool
    _gate.set()


@pytest.mark.parametrize(
    ("behaviour", "detail"),
    [
        ("oversize", "a frame of"),
        ("truncated", "ended inside a frame"),
        ("garbage", "frame head"),
        ("unknown-kind", "unexpected 'hello' frame"),
        ("reply-from-worker", "unexpected 'reply' frame"),
        ("unknown-function", "not in the table"),
        ("reused-call-id", "reusing the id"),
        ("two-sync-calls", "a sync call while another"),
        ("report-flood", "max_reports"),
        ("log-flood", "max_logs"),
        ("report-bytes-flood", "larger than max_report_bytes"),
        ("result-bytes-flood", "larger than max_result_bytes"),
        ("log-bytes-flood", "larger than max_log_bytes"),
        ("decode-bomb", "decode budget"),
        ("bad-status", "unknown status"),
    ],
)
def test_a_protocol_violation_ends_the_run_as_error_and_replaces_the_worker(
    hostile: ProcessPool, behaviour: str, detail: str
) -> None:
    before = set(hostile.pids)
    r = bridge.run_code_sync(
        f"behaviour:{behaviour}",
        language="javascript",
        imports={"h": {"wait": never_returns, "block": blocks}},
        output_limits=OutputLimits(max_reports=3, max_logs=3, max_result_bytes=2**20),
        executor=hostile,
    )
    assert r.status == "error"
    assert r.reason == "protocol_violation"
    assert r.error is not None and r.error.name == "ProtocolError"
    assert detail in r.error.message and "killed" in r.error.message
    # the worker that ran it was killed and is replaced; the pool still serves runs
    _until(lambda: len(hostile.pids) == 2 and set(hostile.pids) != before)
    assert bridge.run_code_sync("honest", language="javascript", executor=hostile).result == 1


def _drive(drive: str, source: str, pool: ProcessPool, **options: Any) -> CodeResult:
    """A run on ``pool``, driven by ``run_sync`` or awaited (each has its own driver)."""
    h = bridge.run_code(source, language="javascript", executor=pool, **options)
    if drive == "run_sync":
        return h.run_sync()

    async def wait() -> CodeResult:
        return await h

    return anyio.run(wait)


@pytest.mark.parametrize("drive", ["run_sync", "await"])
@pytest.mark.parametrize(
    ("behaviour", "how"), [("exit", "exit code 3"), ("segfault", "killed by SIGSEGV")]
)
def test_a_worker_exiting_or_crashing_mid_run_ends_the_run_as_worker_lost_saying_how(
    hostile: ProcessPool, behaviour: str, how: str, drive: str
) -> None:
    r = _drive(drive, f"behaviour:{behaviour}", hostile)
    assert r.status == "error" and r.reason == "worker_lost"
    assert r.error is not None and r.error.name == "WorkerLost"
    assert how in r.error.message
    assert r.reports == [1]  # what streamed before the worker died stays
    assert bridge.run_code_sync("honest", language="javascript", executor=hostile).result == 1


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_a_worker_that_stops_answering_is_killed_at_the_deadline_plus_grace(
    hostile: ProcessPool, drive: str
) -> None:
    r = _drive(drive, "behaviour:hang", hostile, timeout=0.2)
    assert r.status == "terminated" and r.reason == "timeout"
    assert r.reports == [1]
    assert any("killed" in str(e) for e in r.host_errors)
    _until(lambda: len(hostile.pids) == 2)
    assert bridge.run_code_sync("honest", language="javascript", executor=hostile).result == 1


@pytest.mark.parametrize("drive", ["run_sync", "await"])
def test_a_worker_that_ignores_terminate_is_killed_after_the_grace(
    hostile: ProcessPool, drive: str
) -> None:
    h = bridge.run_code("behaviour:hang", language="javascript", executor=hostile)
    out: list[CodeResult] = []

    async def awaited() -> None:
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                out.append(await h)

            tg.start_soon(wait)
            async for _ in h.reports():
                h.terminate("enough")  # the worker is running it (it sent its report)

    if drive == "await":
        anyio.run(awaited)
    else:
        t = threading.Thread(target=lambda: out.append(h.run_sync()))
        t.start()
        _until(lambda: bool(h.reports_so_far))
        h.terminate("enough")
        t.join(GENEROUS)
    assert out[0].status == "terminated" and out[0].reason == "enough"
    assert any("killed" in str(e) for e in out[0].host_errors)
    _until(lambda: len(hostile.pids) == 2)
    assert bridge.run_code_sync("honest", language="javascript", executor=hostile).result == 1


def test_a_frame_after_the_result_gets_the_worker_replaced_not_reused(
    hostile: ProcessPool,
) -> None:
    r = bridge.run_code_sync(
        "behaviour:frame-after-result", language="javascript", executor=hostile
    )
    assert r.status == "success" and r.result == 1
    assert bridge.run_code_sync("honest", language="javascript", executor=hostile).result == 1


def test_a_broken_result_found_after_the_worker_went_on_still_kills_it_and_the_next_run_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pool hands a worker to the waiting run as soon as a result arrives, before the
    result is checked: when the check then fails, the worker is killed all the same."""
    monkeypatch.setattr(_pool, "_worker_command", lambda: [sys.executable, str(HOSTILE)])
    gate, entered = threading.Event(), threading.Event()

    def hold() -> int:
        entered.set()
        assert gate.wait(GENEROUS)
        return 1

    with ProcessPool(workers=1) as pool:
        first = bridge.run_code(
            "behaviour:call-then-bad-status",
            language="javascript",
            imports={"h": {"hold": hold}},
            executor=pool,
        )
        out: list[CodeResult] = []
        t = threading.Thread(target=lambda: out.append(first.run_sync()))
        t.start()
        assert entered.wait(GENEROUS)
        (pid,) = pool.pids
        nxt: list[CodeResult] = []
        following = bridge.run_code("behaviour:hang", language="javascript", executor=pool)
        t2 = threading.Thread(target=lambda: nxt.append(following.run_sync()))
        t2.start()
        _until(lambda: len(pool._waiting) == 1)  # it waits for the only worker
        gate.set()
        t.join(GENEROUS)
        t2.join(GENEROUS)
        assert out[0].status == "error" and out[0].reason == "protocol_violation"
        assert nxt[0].status == "error" and nxt[0].reason == "worker_lost"
        assert nxt[0].error is not None and "an earlier run on it" in nxt[0].error.message
        _until(lambda: len(pool.pids) == 1 and pool.pids != [pid])


def test_workers_dying_before_they_are_ready_make_waiting_runs_raise_and_the_next_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_pool, "_worker_command", lambda: [sys.executable, str(HOSTILE)])
    monkeypatch.setenv("HOSTILE_NEVER_READY", "1")
    with ProcessPool(workers=1) as pool:
        with pytest.raises(WorkerStartError, match="died before they were ready"):
            bridge.run_code_sync("export default 1", executor=pool)
        assert pool.pids == []
        monkeypatch.delenv("HOSTILE_NEVER_READY")  # the cause passed: the next run tries again
        assert bridge.run_code_sync("honest", language="javascript", executor=pool).result == 1
