"""``bridge.Fetch`` per run: one run's tickets are its own; response bodies stream.

Through the public API (``bridge.run_code``) against a server on loopback
(``fetch_support.py``); every assertion rests on what the server or the host saw.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from fetch_support import FetchServer, serving

from quickjail import CodeResult, bridge

WAIT = 20.0  # seconds: a bound for what happens at once, never reached when things work


@pytest.fixture
def server() -> Iterator[FetchServer]:
    with serving() as running:
        yield running


def loopback(server: FetchServer) -> bridge.Fetch:
    return bridge.Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)


@pytest.mark.anyio
async def test_a_run_that_floods_fetch_tickets_cannot_stop_another_runs_abort(
    server: FetchServer,
) -> None:
    shared = loopback(server)
    waiting, flooded = anyio.Event(), anyio.Event()

    async def held() -> None:  # the first run's request reached the server
        await anyio.to_thread.run_sync(server.held.wait, WAIT)
        waiting.set()

    async def go() -> None:
        await waiting.wait()

    async def done() -> None:
        flooded.set()

    async def after_flood() -> None:
        with anyio.move_on_after(WAIT):
            await flooded.wait()

    async def let_go() -> bool:  # the server saw the first run's client hang up
        return await anyio.to_thread.run_sync(server.let_go.wait, WAIT)

    victim = """
        const c = new AbortController();
        const p = fetch(URL_ + "/hold", { signal: c.signal }).then(() => "answered", (e) => e.name);
        await held();
        await afterFlood();
        c.abort();
        export default [await p, await letGo()]
    """
    # every fetch opens a ticket; the quotas refuse the calls past 8 in flight, whose
    # tickets stay open: 4,200 of them, more than a Fetch kept for all its runs together
    flood = """
        await go();
        const all = [];
        for (let i = 0; i < 4200; i++) all.push(fetch(URL_ + "/echo"));
        await Promise.allSettled(all);
        await done();
        export default "flooded"
    """
    results: dict[str, CodeResult] = {}

    async def run(name: str, code: str, **fns: object) -> None:
        results[name] = await bridge.run_code(
            code,
            globals={"fetch": shared, "URL_": server.url(""), **fns},
            timeout=60,
            quotas=bridge.Quotas(max_calls_in_flight=8),
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run("victim", victim, held=held, afterFlood=after_flood, letGo=let_go)
        )
        tg.start_soon(lambda: run("flood", flood, go=go, done=done))
    assert results["flood"].result == "flooded", results["flood"].error
    assert results["victim"].status == "success", results["victim"].error
    assert results["victim"].result == ["AbortError", True]
