"""Durable runs on every executor: a run that pauses on a pool worker is the run that pauses
in-process (the same ``paused`` result, a continuation sealed in the caller), and sealed
bytes resume anywhere: in-process, on a pool, on another pool, in another process.

The invariants: the caller's key never goes to a worker (the worker's continuation crosses
sealed under a public transit key and is opened as untrusted bytes from a store are); the
caller keeps its quotas across legs; a worker whose continuation is forged, oversized or not
one at all breaks the protocol (README "Durable runs", issue 25 item 5).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import quickjail
from quickjail import bridge
from quickjail.executors import ProcessPool, _pool, _wire

pytestmark = pytest.mark.timeout(180)

KEY = b"k" * 32
HOSTILE = Path(__file__).resolve().parent / "hostile_worker.py"

PAY = """
export default async function (amount) {
  report({ asking: amount });
  console.log("asking for approval");
  let verdict;
  try {
    verdict = await approve(amount);
  } catch (e) {
    verdict = "rejected: " + e.message;
  }
  return { verdict };
}
"""

LOOP = """
export default async function () {
  const got = [];
  for (let i = 0; i < 3; i++) got.push(await approve(i));
  return got;
}
"""

DETERMINISTIC = """
export default async function () {
  const before = [Date.now(), Math.random(), crypto.randomUUID()];
  const v = await approve(1);
  await new Promise((r) => setTimeout(r, 25));
  return { before, v, after: [Date.now(), Math.random(), performance.now(), crypto.randomUUID()] };
}
"""


def approve(amount: Any) -> Any:
    """A sync host function that always pauses (a person must approve)."""
    raise bridge.Pause({"amount": amount})


async def approve_later(amount: Any) -> Any:
    """An async host function that always pauses."""
    raise bridge.Pause({"amount": amount, "async": True})


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=1) as p:
        yield p


@pytest.fixture(scope="module")
def other_pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=1) as p:
        yield p


def pay(executor: Any = None, amount: int = 42, fn: Any = approve) -> quickjail.CodeResult:
    return quickjail.run_code_sync(
        PAY, execute={"args": [amount]}, globals={"approve": fn}, timeout=60, executor=executor
    )


def resume(
    sealed: bytes, answers: dict[int, Any], executor: Any = None, **kw: Any
) -> quickjail.CodeResult:
    kw.setdefault("globals", {"approve": approve})
    return quickjail.resume_sync(
        sealed, key=KEY, answers=answers, timeout=60, executor=executor, **kw
    )


def _view(r: quickjail.CodeResult) -> tuple[Any, ...]:
    paused = [(p.call_id, p.function, p.args, p.info) for p in r.paused]
    logs = [e.args for e in r.logs]
    return r.status, r.result, r.error, r.reports, logs, paused, r.metrics.host_calls


# pausing on a pool


def test_a_host_pause_on_a_pool_gives_the_in_process_paused_result(pool: ProcessPool) -> None:
    here = pay()
    there = pay(pool)
    assert there.status == "paused", there
    assert _view(there) == _view(here)
    assert there.continuation is not None
    assert there.continuation.state["paused"] == here.continuation.state["paused"]  # type: ignore[union-attr]


def test_an_async_host_pause_on_a_pool_gives_the_paused_result(pool: ProcessPool) -> None:
    async def main() -> quickjail.CodeResult:
        return await quickjail.run_code(
            PAY, execute={"args": [7]}, globals={"approve": approve_later}, executor=pool
        )

    r = anyio.run(main)
    assert r.status == "paused", r
    assert [(p.function, p.info) for p in r.paused] == [("approve", {"amount": 7, "async": True})]
    assert r.continuation is not None
    again = resume(
        r.continuation.seal(KEY),
        {r.paused[0].call_id: "approved"},
        pool,
        globals={"approve": approve_later},
    )
    assert (again.status, again.result) == ("success", {"verdict": "approved"}), again


def test_a_call_that_cannot_wait_fails_on_a_pool_as_in_process(pool: ProcessPool) -> None:
    def odd(x: Any) -> Any:
        raise bridge.Pause({"callback": print})  # an info that cannot travel

    src = """
    export default async function () {
      let a, b;
      try { a = approve(1); } catch (e) { a = e.name; }
      try { b = await odd(1); } catch (e) { b = e.name; }
      return [a, b];
    }
    """
    host = {"approve": bridge.synchronous(approve), "odd": odd}
    here = quickjail.run_code_sync(src, globals=host)
    there = quickjail.run_code_sync(src, globals=host, executor=pool)
    assert (here.status, here.result) == ("success", ["TypeError", "TypeError"]), here
    assert (there.status, there.result, there.paused) == (here.status, here.result, [])


# resuming anywhere


def test_a_run_paused_on_a_pool_resumes_in_process(pool: ProcessPool) -> None:
    r = pay(pool)
    assert r.continuation is not None
    again = resume(r.continuation.seal(KEY), {r.paused[0].call_id: "approved"})
    assert (again.status, again.result) == ("success", {"verdict": "approved"}), again
    assert again.metrics.host_calls == 1


def test_a_run_paused_in_process_resumes_on_a_pool(pool: ProcessPool) -> None:
    r = pay()
    assert r.continuation is not None
    sealed = r.continuation.seal(KEY)
    here = resume(sealed, {r.paused[0].call_id: bridge.Rejection("denied")})
    there = resume(sealed, {r.paused[0].call_id: bridge.Rejection("denied")}, pool)
    assert there.result == {"verdict": "rejected: denied"}, there
    assert _view(there) == _view(here)


def test_a_run_paused_on_one_pool_resumes_on_another(
    pool: ProcessPool, other_pool: ProcessPool
) -> None:
    r = pay(pool, amount=5)
    assert r.continuation is not None
    again = resume(
        r.continuation.seal(KEY, b"tenant"),
        {r.paused[0].call_id: "ok"},
        other_pool,
        context=b"tenant",
    )
    assert (again.status, again.result) == ("success", {"verdict": "ok"}), again


def test_a_paused_pool_run_pauses_again_after_resume_and_resumes_each_time(
    pool: ProcessPool, other_pool: ProcessPool
) -> None:
    r = quickjail.run_code_sync(LOOP, globals={"approve": approve}, timeout=60, executor=pool)
    legs = 0
    while r.status == "paused":
        assert r.continuation is not None
        (call,) = r.paused
        assert call.args == [legs]
        executor = (other_pool, None, pool)[legs % 3]
        r = resume(r.continuation.seal(KEY), {call.call_id: f"yes {legs}"}, executor)
        legs += 1
    assert (r.status, r.result, legs) == ("success", ["yes 0", "yes 1", "yes 2"], 3), r
    assert r.metrics.host_calls == 3


def test_a_deterministic_run_gives_the_same_result_paused_on_a_pool_as_answered(
    pool: ProcessPool,
) -> None:
    async def answered(amount: Any) -> str:
        return "yes"

    direct = quickjail.run_code_sync(
        DETERMINISTIC, globals={"approve": answered}, deterministic=True
    )
    assert direct.status == "success", direct
    r = quickjail.run_code_sync(
        DETERMINISTIC, globals={"approve": approve}, deterministic=True, executor=pool
    )
    assert r.status == "paused" and r.continuation is not None, r
    again = resume(r.continuation.seal(KEY), {r.paused[0].call_id: "yes"}, pool)
    assert again.status == "success", again
    assert again.result == direct.result


def test_a_run_paused_on_a_pool_resumes_in_a_freshly_spawned_process(
    pool: ProcessPool, tmp_path: Path
) -> None:
    r = pay(pool, amount=99)
    assert r.continuation is not None
    blob = tmp_path / "paused.bin"
    blob.write_bytes(r.continuation.seal(KEY, context=b"tenant-1"))
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        import quickjail
        from quickjail import bridge
        from quickjail.executors import ProcessPool

        def approve(amount):
            raise bridge.Pause(None)

        sealed = Path(sys.argv[1]).read_bytes()
        for executor in (None, ProcessPool(workers=1)):
            r = quickjail.resume_sync(
                sealed,
                key={KEY!r},
                context=b"tenant-1",
                answers={{{r.paused[0].call_id}: "approved elsewhere"}},
                globals={{"approve": approve}},
                executor=executor,
            )
            print(r.status, r.result["verdict"])
            if executor is not None:
                executor.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(blob)],
        capture_output=True,
        text=True,
        timeout=150,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["success approved elsewhere"] * 2


def test_a_resumed_pool_run_keeps_its_quotas_and_its_fuel(pool: ProcessPool) -> None:
    src = """
    export default async function () {
      await approve(1);
      const out = [];
      for (let i = 0; i < 3; i++) {
        try { out.push(await count()); } catch (e) { out.push(e.name); }
      }
      return out;
    }
    """
    calls = {"approve": approve, "count": lambda: 1}
    r = quickjail.run_code_sync(
        src,
        globals=calls,
        quotas=bridge.Quotas(max_host_calls=3),
        fuel=10**9,
        timeout=60,
        executor=pool,
    )
    assert r.status == "paused" and r.continuation is not None, r
    out = resume(r.continuation.seal(KEY), {r.paused[0].call_id: 1}, pool, globals=calls)
    # three calls per run, the quotas held by the caller: the paused one counted, so the
    # third count() is refused, as in-process
    assert out.result == [1, 1, "RangeError"], out
    assert out.metrics.fuel_used is not None and out.metrics.fuel_used > 0


def test_the_key_never_reaches_a_worker(pool: ProcessPool, monkeypatch: pytest.MonkeyPatch) -> None:
    frames: list[bytes] = []
    start_frame = _wire.start_frame

    def spy(*args: Any) -> bytes:
        frames.append(start_frame(*args))
        return frames[-1]

    monkeypatch.setattr(_wire, "start_frame", spy)
    r = pay(pool)
    assert r.continuation is not None
    again = resume(r.continuation.seal(KEY), {r.paused[0].call_id: "ok"}, pool)
    assert again.result == {"verdict": "ok"}, again
    assert len(frames) == 2 and not any(KEY in f for f in frames)


# a worker that sends back a continuation it should not


@pytest.fixture(scope="module")
def hostile() -> Iterator[ProcessPool]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_pool, "_worker_command", lambda: [sys.executable, str(HOSTILE)])
        with ProcessPool(workers=1) as p:
            p.start()  # its worker's pid is known before the first run
            yield p


@pytest.mark.parametrize(
    ("behaviour", "detail"),
    [
        ("paused-forged", "are not the ones the caller paused"),
        ("paused-oversized", "too large"),
        ("paused-garbage", "not a quickjail continuation"),
    ],
)
def test_a_worker_sending_back_a_bad_continuation_breaks_the_protocol(
    hostile: ProcessPool, behaviour: str, detail: str
) -> None:
    before = set(hostile.pids)
    r = bridge.run_code_sync(
        f"behaviour:{behaviour}",
        language="javascript",
        imports={"h": {"wait": approve_later}},
        memory_limit_bytes=16 * 2**20,
        executor=hostile,
    )
    assert (r.status, r.reason) == ("error", "protocol_violation"), r
    assert r.error is not None and detail in r.error.message, r.error
    assert r.continuation is None and r.paused == []
    # the worker was killed; the next run waits for its replacement (bounded, not timed)
    for _ in range(6000):
        if len(hostile.pids) == 1 and set(hostile.pids) != before:
            break
        threading.Event().wait(0.01)
    assert set(hostile.pids) != before
