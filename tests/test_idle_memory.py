"""A run that waits gives back the memory only its running used (the shadow stack and the scratch
buffer, sandbox/_native.py ``NativeInstance.drop``), and nothing it sees changes: the same
program reads the same values whether its host calls park it or not."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel

from quickjail import bridge

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


def test_a_run_that_parks_sees_what_a_run_that_never_parks_sees() -> None:
    parked = anyio.run(_run, _echo_async)
    straight = anyio.run(_run, _echo_sync)
    assert parked == straight
    assert parked[0] == 1 and parked[-4] == 11 * 40000 + 2
