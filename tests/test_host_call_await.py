"""Awaited async host calls: the one call a guest waits for alone is awaited by the driver
itself (no task, no wake-up between the call and the next slice); concurrent calls and calls
alongside timers run as tasks. Either way a stop reaches the call, a cancelled awaiter ends the
run as ``terminated``, and every outcome reaches the guest in order.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest

from quickjail.bridge import run_code

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

GENEROUS = 30.0


class Never:
    """An async host function that waits until it is cancelled, and counts both."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.first = threading.Event()

    async def __call__(self) -> None:
        self.started += 1
        self.first.set()
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise


@pytest.mark.parametrize(
    "program",
    [
        "await never(); export default 1",
        "await Promise.all([never(), never()]); export default 1",
        "await new Promise((r) => setTimeout(r, 3600_000)); export default 1",
    ],
    ids=["one-call", "two-calls", "timer"],
)
async def test_cancelling_the_awaiting_task_ends_the_run_terminated_and_propagates(
    program: str,
) -> None:
    never = Never()
    execution = run_code(program, globals={"never": never})
    with anyio.fail_after(GENEROUS):
        with anyio.CancelScope() as scope:

            async def cancel_once_waiting() -> None:
                if "never" in program:
                    await anyio.to_thread.run_sync(never.first.wait, GENEROUS)
                await anyio.sleep(0.05)
                scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_once_waiting)
                await execution
    assert scope.cancelled_caught
    result = execution.result
    assert result is not None
    assert (result.status, result.reason) == ("terminated", "cancelled")
    assert never.cancelled == never.started


@pytest.mark.parametrize("calls", [1, 2])
async def test_terminate_from_another_thread_cancels_the_awaited_host_calls(calls: int) -> None:
    never = Never()
    program = (
        "await never(); export default 1"
        if calls == 1
        else "await Promise.all([never(), never()]); export default 1"
    )
    execution = run_code(program, globals={"never": never})

    def stop() -> None:
        never.first.wait(GENEROUS)
        execution.terminate("from a thread")

    thread = threading.Thread(target=stop)
    thread.start()
    with anyio.fail_after(GENEROUS):
        result = await execution
    thread.join()
    assert (result.status, result.reason) == ("terminated", "from a thread")
    assert never.started == calls and never.cancelled == calls


async def test_calls_alone_concurrent_and_beside_timers_all_settle_in_order() -> None:
    seen: list[Any] = []

    async def f(x: int) -> int:
        await anyio.sleep(0.01 if x != 5 else 0.1)
        seen.append(x)
        return x * 10

    async def boom() -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("no")

    program = """
        const out = [];
        out.push(await f(1));
        out.push(...await Promise.all([f(2), f(3)]));
        setTimeout(() => report('timer'), 5);
        out.push(await f(5));
        try { await boom() } catch (e) { out.push(e.message) }
        out.push(await f(6));
        export default out;
    """
    with anyio.fail_after(GENEROUS):
        result = await run_code(program, globals={"f": f, "boom": boom})
    assert result.status == "success", result.error
    assert result.result == [10, 20, 30, 50, "host function boom failed (ValueError)", 60]
    assert result.reports == ["timer"]  # it fired while f(5) was awaited
    assert sorted(seen) == [1, 2, 3, 5, 6]
    assert [type(e) for e in result.host_errors] == [ValueError]
