"""``bridge.Fetch`` per run: one run's tickets are its own; response bodies stream.

Through the public API (``bridge.run_code``) against a server on loopback
(``fetch_support.py``); every assertion rests on what the server or the host saw.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import anyio
import pytest
from fetch_support import FetchServer, serving

import quickjail
from quickjail import CodeResult, bridge
from quickjail.bridge._errors import FetchError
from quickjail.bridge._fetch import Tickets
from quickjail.bridge._fetch_transfer import Exchange

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


# ---- streamed bodies


def _open_tickets() -> list[Tickets]:
    return [t for t in gc.get_objects() if isinstance(t, Tickets) and len(t)]


def test_the_program_reads_the_first_chunk_before_the_server_sends_the_rest(
    server: FetchServer,
) -> None:
    def saw_first(n: int) -> None:  # the server sends the rest only after this
        server.note(f"guest read {n}")
        server.proceed.set()

    r = bridge.run_code_sync(
        """
        const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
        const reader = res.body.getReader();
        const first = await reader.read();
        await sawFirst(first.value.length);
        let total = first.value.length;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          total += value.length;
        }
        export default [res.status, res.headers.get("content-length"), total]
        """,
        globals={"fetch": loopback(server), "URL_": server.url(""), "sawFirst": saw_first},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == [200, "3000", 3000]
    assert server.sent == ["sent 1", "guest read 1000", "sent 2", "sent 3"]


def test_text_json_and_bytes_read_a_streamed_body_whole(server: FetchServer) -> None:
    r = bridge.run_code_sync(
        """
        const big = await (await fetch(URL_ + "/stream?chunks=5&size=70000")).text();
        const gz = await (await fetch(URL_ + "/gzip")).text();
        const echo = await (await fetch(URL_ + "/echo", { method: "POST", body: "hi" })).json();
        const bytes = await (await fetch(URL_ + "/stream?chunks=2&size=3&close=1")).bytes();
        export default [big.length, big[0], big[349999], gz, echo.body, [...bytes]]
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == [350000, "A", "E", "hello gzip", "hi", [65, 65, 65, 66, 66, 66]]


def test_a_body_over_the_cap_errors_the_stream_with_a_type_error_mid_stream(
    server: FetchServer,
) -> None:
    cap = bridge.Fetch(
        allow=[f"127.0.0.1:{server.port}"], allow_private=True, max_response_bytes=100_000
    )
    r = bridge.run_code_sync(
        """
        const res = await fetch(URL_ + "/stream?chunks=5&size=40000&close=1");
        const reader = res.body.getReader();
        let got = 0, error;
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            got += value.length;
          }
        } catch (e) { error = [e instanceof TypeError, e.message]; }
        export default [res.status, got, error]
        """,
        globals={"fetch": cap, "URL_": server.url("")},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    status, got, error = r.result
    assert status == 200 and 0 < got <= 100_000
    assert error == [True, "the response is over the limit of 100,000 bytes"]
    assert server.wait_closed(WAIT)


def test_cancelling_the_body_closes_the_hosts_response(server: FetchServer) -> None:
    async def closed() -> bool:
        return await anyio.to_thread.run_sync(server.wait_closed, WAIT)

    r = bridge.run_code_sync(
        """
        const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
        const reader = res.body.getReader();
        const first = await reader.read();
        await reader.cancel("enough");
        export default [first.value.length, await closed()]
        """,
        globals={"fetch": loopback(server), "URL_": server.url(""), "closed": closed},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == [1000, True]  # closed while the run still went on
    assert server.sent == ["sent 1", "client gone"]


def test_an_abort_after_the_response_errors_its_body_and_closes_it_on_the_host(
    server: FetchServer,
) -> None:
    async def closed() -> bool:
        return await anyio.to_thread.run_sync(server.wait_closed, WAIT)

    r = bridge.run_code_sync(
        """
        const c = new AbortController();
        const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1", { signal: c.signal });
        const reader = res.body.getReader();
        await reader.read();
        c.abort();
        let why;
        try { await reader.read(); } catch (e) { why = e.name; }
        export default [why, await closed()]
        """,
        globals={"fetch": loopback(server), "URL_": server.url(""), "closed": closed},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == ["AbortError", True]
    assert server.sent == ["sent 1", "client gone"]


@pytest.mark.anyio
@pytest.mark.parametrize("end", ["terminated", "timeout", "returned"])
async def test_a_run_that_ends_with_a_body_unread_closes_its_response(
    server: FetchServer, end: str
) -> None:
    reached = anyio.Event()

    async def first_read() -> None:
        reached.set()

    tail = {"terminated": "for (;;) {}", "timeout": "for (;;) {}", "returned": ""}[end]
    execution = bridge.run_code(
        f"""
        const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
        await res.body.getReader().read();
        await firstRead();
        {tail}
        export default "left it"
        """,
        globals={"fetch": loopback(server), "URL_": server.url(""), "firstRead": first_read},
        timeout=2 if end == "timeout" else WAIT,
    )
    async with anyio.create_task_group() as tg:
        box: list[CodeResult] = []

        async def run() -> None:
            box.append(await execution)

        tg.start_soon(run)
        await reached.wait()
        if end == "terminated":
            execution.terminate()
    status = "success" if end == "returned" else "terminated"
    assert (box[0].status, box[0].reason) == (
        status,
        {"timeout": "timeout"}.get(end, box[0].reason),
    )
    assert await anyio.to_thread.run_sync(server.wait_closed, WAIT)
    assert server.sent == ["sent 1", "client gone"]
    assert _open_tickets() == []


def test_many_runs_leave_no_response_or_ticket_open(server: FetchServer) -> None:
    shared = loopback(server)
    for _ in range(12):
        r = bridge.run_code_sync(
            """
            const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
            const other = await fetch(URL_ + "/echo");
            export default (await res.body.getReader().read()).value.length
            """,
            globals={"fetch": shared, "URL_": server.url("")},
            timeout=WAIT,
        )
        assert r.status == "success", r.error
        assert r.result == 1000
        assert server.wait_closed(WAIT)
    assert server.sent.count("sent 1") == 12 and "sent 2" not in server.sent
    assert _open_tickets() == []
    assert not [o for o in gc.get_objects() if isinstance(o, Exchange) and not o.closed]


def test_a_run_on_a_process_pool_streams_and_closes_its_response_when_it_ends(
    server: FetchServer,
) -> None:
    from quickjail.executors import ProcessPool

    with ProcessPool(workers=1) as pool:
        r = bridge.run_code_sync(
            """
            const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
            const first = await res.body.getReader().read();
            export default first.value.length
            """,
            globals={"fetch": loopback(server), "URL_": server.url("")},
            executor=pool,
            timeout=WAIT,
        )
        assert r.status == "success", r.error
        assert r.result == 1000
        assert server.wait_closed(WAIT)
    assert server.sent == ["sent 1", "client gone"]


def test_a_program_that_patches_promises_and_prototypes_still_reads_the_hosts_bytes(
    server: FetchServer,
) -> None:
    r = bridge.run_code_sync(
        """
        const realThen = Promise.prototype.then;
        const res = await fetch(URL_ + "/stream?chunks=3&size=70000");
        // would turn every [chunk, done] the host gives into one fake byte and an end
        Promise.prototype.then = function (f, g) {
          const fake = (v) => Array.isArray(v) && v.length === 2 ? [new Uint8Array([1]), true] : v;
          return realThen.call(this, typeof f === "function" ? (v) => f(fake(v)) : f, g);
        };
        Object.defineProperty(Object.prototype, "stream", { get() { throw new Error("no"); } });
        Object.defineProperty(Array.prototype, "1", { get() { return true; } });
        const reader = res.body.getReader();
        let n = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          n += value.length;
        }
        Promise.prototype.then = realThen;
        export default n
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == 210_000


def test_a_run_that_pauses_closes_its_bodies_and_the_resumed_run_cannot_read_them(
    server: FetchServer,
) -> None:
    def approve() -> None:
        raise bridge.Pause("approve?")

    code = """
        const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
        const reader = res.body.getReader();
        const first = await reader.read();
        await approve();
        let why;
        try { await reader.read(); } catch (e) { why = [e.name, e.message]; }
        export default [first.value.length, why]
    """
    names = {"fetch": loopback(server), "URL_": server.url(""), "approve": approve}
    r = bridge.run_code_sync(code, globals=names, timeout=WAIT)
    assert r.status == "paused", r.error
    assert server.wait_closed(WAIT)  # closed when the run paused
    assert r.continuation is not None
    key = b"k" * 32
    again = quickjail.resume_sync(
        r.continuation.seal(key),
        key=key,
        answers={r.paused[0].call_id: None},
        globals=names,
        timeout=WAIT,
    )
    assert again.status == "success", again.error
    assert again.result[0] == 1000
    assert again.result[1][0] == "TypeError" and "not open" in again.result[1][1]
    assert server.sent == ["sent 1", "client gone"]


def test_a_response_without_body_bytes_costs_no_body_reads(server: FetchServer) -> None:
    r = bridge.run_code_sync(
        """
        const manual = await fetch(URL_ + "/redirect?to=/echo", { redirect: "manual" });
        export default [manual.status, await manual.text()]
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == [302, ""]
    assert r.metrics.host_calls == 2  # open and request: Content-Length 0 needs no read


def test_cancelling_the_body_while_a_read_waits_on_the_host_closes_the_response(
    server: FetchServer,
) -> None:
    async def closed() -> bool:
        return await anyio.to_thread.run_sync(server.wait_closed, WAIT)

    r = bridge.run_code_sync(
        """
        const res = await fetch(URL_ + "/stream?chunks=3&size=1000&gate=1");
        const reader = res.body.getReader();
        await reader.read();
        const waiting = reader.read();  // the server sends nothing more: the host waits
        await new Promise((resolve) => setTimeout(resolve, 50));
        await reader.cancel("enough");
        const last = await waiting;
        export default [last.done, await closed()]
        """,
        globals={"fetch": loopback(server), "URL_": server.url(""), "closed": closed},
        timeout=WAIT,
    )
    assert r.status == "success", r.error
    assert r.result == [True, True]
    assert server.sent == ["sent 1", "client gone"]
    # the read the cancel cut short failed as a fetch error, nothing else did
    assert all(isinstance(e, FetchError) for e in r.host_errors), r.host_errors
