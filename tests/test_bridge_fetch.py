"""The guest's ``fetch``: rejecting without a capability, a real ``Response`` with one.

Through the public API (``quickjail.run_code_sync``, ``bridge.run_code``) against a server on
loopback; the host side's checks one by one are in ``test_bridge_fetch_host.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from fetch_support import FetchServer, serving

import quickjail
from quickjail import bridge

NO_BRIDGE = "fetch is not available in this sandbox: the host gave it no bridge.Fetch"


def test_fetch_without_a_capability_rejects_with_a_type_error_a_program_can_catch() -> None:
    r = quickjail.run_code_sync(
        """
        let why;
        try { await fetch("https://example.com/", { method: "POST", body: "x" }); }
        catch (e) { why = [e instanceof TypeError, e.name, e.message]; }
        export default why
        """
    )
    assert r.status == "success", r.error
    assert r.result == [True, "TypeError", NO_BRIDGE]


def test_fetch_has_the_web_idl_shape_of_a_global_operation() -> None:
    r = quickjail.run_code_sync(
        """
        const d = Object.getOwnPropertyDescriptor(globalThis, "fetch");
        const p = fetch("https://example.com/");
        p.catch(() => {});
        export default [typeof d.value, d.writable, d.enumerable, d.configurable,
                        fetch.name, fetch.length, p instanceof Promise]
        """
    )
    assert r.result == ["function", True, False, True, "fetch", 1, True]


def test_the_capabilitys_host_functions_are_not_reachable_from_the_program() -> None:
    cap = bridge.Fetch(allow=["example.com"])
    r = bridge.run_code_sync(
        """
        const names = Object.getOwnPropertyNames(globalThis).filter(
          (n) => n.startsWith("\\x02") || n === "open" || n === "request");
        export default [names, typeof fetch, typeof globalThis["\\x02fetch"]]
        """,
        globals={"fetch": cap},
    )
    assert r.status == "success", r.error
    assert r.result == [[], "function", "undefined"]


def test_a_program_that_replaces_fetch_gets_only_its_own_function() -> None:
    r = quickjail.run_code_sync(
        """
        globalThis.fetch = async () => "mine";
        export default await fetch("https://example.com/")
        """
    )
    assert r.result == "mine"


# ---- with the capability, against a server on loopback


@pytest.fixture
def server() -> Iterator[FetchServer]:
    with serving() as running:
        yield running


def loopback(server: FetchServer, **options: Any) -> bridge.Fetch:
    return bridge.Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True, **options)


def test_a_bridged_fetch_gives_the_program_a_real_response(server: FetchServer) -> None:
    r = bridge.run_code_sync(
        """
        const res = await fetch(URL_ + "/echo", {
          method: "POST", body: JSON.stringify({ a: 1 }),
          headers: new Headers({ "content-type": "application/json", "x-mine": "yes" }),
        });
        const sent = await res.json();
        export default [res instanceof Response, res.ok, res.status, res.statusText,
                        res.headers.get("content-type"), res.url, res.redirected, res.bodyUsed,
                        sent.method, sent.body, sent.headers["x-mine"]]
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
    )
    assert r.status == "success", r.error
    assert r.result == [
        True, True, 200, "OK", "application/json", server.url("/echo"), False, True,
        "POST", '{"a":1}', "yes",
    ]  # fmt: skip


def test_null_body_statuses_head_and_errors_are_responses_as_in_a_worker(
    server: FetchServer,
) -> None:
    r = bridge.run_code_sync(
        """
        const out = [];
        for (const [path, method] of [["/status?code=204", "GET"], ["/status?code=205", "GET"],
                                      ["/status?code=404", "GET"], ["/echo", "HEAD"]]) {
          const res = await fetch(URL_ + path, { method });
          out.push([res.status, res.ok, await res.text()]);
        }
        export default out
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
    )
    assert r.status == "success", r.error
    assert r.result == [[204, True, ""], [205, True, ""], [404, False, "body"], [200, True, ""]]


def test_a_program_sees_redirects_and_manual_mode_as_a_worker_does(server: FetchServer) -> None:
    r = bridge.run_code_sync(
        """
        const hop = URL_ + "/redirect?to=/echo";
        const followed = await fetch(hop);
        const manual = await fetch(hop, { redirect: "manual" });
        let error;
        try { await fetch(hop, { redirect: "error" }); } catch (e) { error = e.name; }
        export default [followed.redirected, followed.url, manual.status,
                        manual.headers.get("location"), error]
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
    )
    assert r.result == [True, server.url("/echo"), 302, "/echo", "TypeError"]


def test_refusals_reach_the_program_as_type_errors_with_the_reason(server: FetchServer) -> None:
    r = bridge.run_code_sync(
        """
        const out = [];
        for (const [url, init] of [
          ["http://elsewhere.example/", {}],
          [URL_ + "/bomb", {}],
          [URL_ + "/echo", { method: "DELETE" }],
          ["http://user:pw@127.0.0.1/", {}],
        ]) {
          try { await (await fetch(url, init)).arrayBuffer(); out.push("ok"); }
          catch (e) { out.push(`${e.constructor === TypeError} ${e.message}`); }
        }
        export default out
        """,
        globals={
            "fetch": loopback(server, max_response_bytes=2**20, methods=["GET"]),
            "URL_": server.url(""),
        },
    )
    assert r.status == "success", r.error
    assert r.result[0] == "true fetch: the URL http://elsewhere.example/ is not on the allowlist"
    assert r.result[1] == "true the response is over the limit of 1,048,576 bytes"
    assert r.result[2] == "true fetch: the method DELETE is not allowed"
    assert r.result[3] == "true Request cannot be constructed from a URL that includes credentials"


def test_a_secret_header_reaches_the_server_and_never_the_program(server: FetchServer) -> None:
    secret = "sk-live-7f3a9c0e1d2b4a68"
    r = bridge.run_code_sync(
        """
        const res = await fetch(URL_ + "/echo", { headers: { authorization: "mine" } });
        let missing;
        try { await fetch("http://elsewhere.example/"); } catch (e) { missing = e.message; }
        export default [[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\\n"), missing]
        """,
        globals={
            "fetch": loopback(server, headers={"Authorization": f"Bearer {secret}"}),
            "URL_": server.url(""),
        },
    )
    assert r.status == "success", r.error
    assert server.seen("/echo")[0]["headers"]["authorization"] == f"Bearer {secret}"
    shown = repr(r.result) + repr(r.logs)
    assert secret not in shown and "x-echo-authorization: [REDACTED]" in r.result[0]


def test_a_program_that_replaces_request_and_response_still_gets_a_real_response(
    server: FetchServer,
) -> None:
    r = bridge.run_code_sync(
        """
        const Real = Response;
        globalThis.Request = function () { throw new Error("hijacked"); };
        globalThis.Response = function () { throw new Error("hijacked"); };
        const res = await fetch(URL_ + "/gzip");
        export default [res instanceof Real, await res.text()]
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
    )
    assert r.result == [True, "hello gzip"]


@pytest.mark.anyio
async def test_an_abort_signal_ends_the_request_on_the_host(server: FetchServer) -> None:
    async def held() -> None:
        await anyio.to_thread.run_sync(server.held.wait, 20)

    execution = bridge.run_code(
        """
        const controller = new AbortController();
        const pending = fetch(URL_ + "/hold", { signal: controller.signal });
        await held();
        controller.abort();
        let name;
        try { await pending; } catch (e) { name = e.name; }
        export default name
        """,
        globals={"fetch": loopback(server), "URL_": server.url(""), "held": held},
    )
    r = await execution
    assert r.result == "AbortError"
    assert await anyio.to_thread.run_sync(server.let_go.wait, 20)


def test_an_aborted_signal_rejects_with_its_reason_before_any_request(server: FetchServer) -> None:
    r = bridge.run_code_sync(
        """
        const out = [];
        for (const signal of [AbortSignal.abort(), AbortSignal.abort(new RangeError("mine"))]) {
          try { await fetch(URL_ + "/echo", { signal }); out.push("sent"); }
          catch (e) { out.push(e.name); }
        }
        export default out
        """,
        globals={"fetch": loopback(server), "URL_": server.url("")},
    )
    assert r.result == ["AbortError", "RangeError"]
    assert server.requests == []


@pytest.mark.anyio
async def test_terminating_a_run_ends_its_request_on_the_host(server: FetchServer) -> None:
    execution = bridge.run_code(
        'await fetch(URL_ + "/hold"); export default "unreachable"',
        globals={"fetch": loopback(server), "URL_": server.url("")},
    )
    async with anyio.create_task_group() as tg:

        async def stop() -> None:
            await anyio.to_thread.run_sync(server.held.wait, 20)
            execution.terminate("enough")

        tg.start_soon(stop)
        r = await execution
    assert r.status == "terminated"
    assert await anyio.to_thread.run_sync(server.let_go.wait, 20)


def test_a_run_in_a_process_pool_fetches_through_the_callers_host(server: FetchServer) -> None:
    from quickjail.executors import ProcessPool

    with ProcessPool(workers=1) as pool:
        r = bridge.run_code_sync(
            'const r = await fetch(URL_ + "/gzip"); export default await r.text()',
            globals={"fetch": loopback(server), "URL_": server.url("")},
            executor=pool,
        )
    assert r.status == "success", r.error
    assert r.result == "hello gzip"
