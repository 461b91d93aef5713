"""A run that waits longer than ``IDLE_DROP_DELAY`` gives back the memory only its running used
(the shadow stack and the scratch buffer, sandbox/_native.py ``NativeInstance.drop``), and
nothing it sees changes: the same program reads the same values whether its host calls park it
or not. A shorter wait keeps the pages (dropping them costs more than a quick host call)."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from quickjail import bridge
from quickjail.sandbox import _idle as _idle_module
from quickjail.sandbox._native import NativeInstance

# Deep recursion (shadow stack), replies larger than a page and than the scratch buffer, the
# run's random streams and a timer, with a host call between each step.
PROGRAM = """
const depth = (n) => (n === 0 ? 0 : 1 + depth(n - 1));
const out = [];
for (let i = 0; i < 12; i++) {
  const reply = await echo('x'.repeat(i * 40000) + i);
  out.push(reply.length, depth(2000 + i), Math.random());
  out.push(Array.from(crypto.getRandomValues(new Uint8Array(20 + i))).join(','));
  await new Promise((r) => setTimeout(r, 0));
}
export default out;
"""


def _echo_sync(text: str) -> str:
    return text


async def _echo_async(text: str) -> str:
    await anyio.lowlevel.checkpoint()
    return text


async def _run(echo: Any) -> Any:
    r = await bridge.run_code(PROGRAM, globals={"echo": echo}, seed=11, timeout=60)
    assert r.status == "success", r.error
    return r.result


def _count_drops(monkeypatch: pytest.MonkeyPatch) -> threading.Semaphore:
    """Count ``NativeInstance.drop`` calls: one permit per drop."""
    dropped = threading.Semaphore(0)
    drop = NativeInstance.drop

    def counted(self: NativeInstance, spans: Any) -> None:
        drop(self, spans)
        dropped.release()

    monkeypatch.setattr(NativeInstance, "drop", counted)
    return dropped


def test_a_run_that_parks_sees_what_a_run_that_never_parks_sees(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dropped = _count_drops(monkeypatch)

    async def echo_after_a_drop(text: str) -> str:
        """Reply once the parked run gave back its idle pages (after IDLE_DROP_DELAY)."""
        assert await anyio.to_thread.run_sync(dropped.acquire, True, 60)
        return text

    parked = anyio.run(_run, echo_after_a_drop)
    straight = anyio.run(_run, _echo_sync)
    assert parked == straight
    assert parked[0] == 1 and parked[-4] == 11 * 40000 + 2


def test_a_park_shorter_than_the_idle_delay_keeps_its_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dropped = _count_drops(monkeypatch)
    monkeypatch.setattr(_idle_module, "IDLE_DROP_DELAY", 3600.0)
    quick = anyio.run(_run, _echo_async)
    assert not dropped.acquire(blocking=False)  # 24 parks, none dropped
    assert quick == anyio.run(_run, _echo_sync)
