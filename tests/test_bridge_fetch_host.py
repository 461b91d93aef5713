"""bridge.Fetch's host side: the allowlist, the address checks, redirects, headers and caps.

The host functions a Fetch hands the guest's ``fetch`` are called here as the guest would
call them, against a real HTTP server on loopback. A name the tests resolve (``*.test``)
goes through ``_fetch_transfer.resolve``, replaced by a table, so that the address checks
see the addresses a hostile DNS would give.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fetch_support import FetchServer, serving, tls_certificate

from quickjail.bridge import Fetch, _fetch_transfer
from quickjail.bridge._errors import FetchError
from quickjail.bridge._fetch_policy import Allowlist, Target, address_refusal

pytestmark = pytest.mark.anyio

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FetchServer]:
    with serving() as running:
        yield running


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names the resolver knows, and how often each was resolved (``calls``)."""
    table: dict[str, list[str]] = {}
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        if host not in table:
            raise OSError("no such name")
        return table[host]

    monkeypatch.setattr(_fetch_transfer, "resolve", resolve)
    table["calls"] = calls  # type: ignore[assignment]
    return table


async def fetch(
    cap: Fetch,
    url: str,
    method: str = "GET",
    headers: list[tuple[str, str]] | None = None,
    body: bytes | None = None,
    redirect: str = "follow",
) -> dict[str, Any]:
    """One request through the capability's host functions, its body read to the end."""
    fns = cap.exports()
    ticket = fns["open"]()
    r: dict[str, Any] = await fns["request"](ticket, method, url, headers or [], body, redirect)
    chunks: list[bytes] = []
    done = not r["stream"]
    while not done:
        chunk, done = await fns["read"](ticket)
        chunks.append(chunk)
    r["body"] = b"".join(chunks)
    return r


async def test_a_request_to_an_allowed_loopback_host_returns_status_headers_and_body(
    server: FetchServer,
) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)
    r = await fetch(cap, server.url("/echo"), "POST", [("X-A", "1")], b"hi")
    assert r["status"] == 200 and r["statusText"] == "OK" and not r["redirected"]
    sent = json.loads(r["body"])
    assert sent["method"] == "POST" and sent["body"] == "hi" and sent["headers"]["x-a"] == "1"
    assert ["content-type", "application/json"] in r["headers"]
    assert r["url"] == server.url("/echo")


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.10", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "private"),
        ("0.0.0.0", "private"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fd00::1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:7f00:1::", "loopback"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),
        ("240.0.0.1", "private"),
    ],
)
async def test_a_name_resolving_to_a_non_public_address_is_refused_without_allow_private(
    server: FetchServer, dns: dict[str, list[str]], address: str, why: str
) -> None:
    dns["inside.test"] = ["93.184.216.34", address]  # one bad address among good ones
    cap = Fetch(allow=["inside.test"])
    with pytest.raises(FetchError, match=f"resolves to a {why}") as caught:
        await fetch(cap, "http://inside.test/echo")
    assert caught.value.js_name == "TypeError"
    assert server.requests == []


async def test_an_ip_literal_url_is_checked_as_its_address(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"])
    with pytest.raises(FetchError, match="loopback"):
        await fetch(cap, server.url("/echo"))
    assert server.requests == []


async def test_localhost_is_refused_without_allow_private(server: FetchServer) -> None:
    cap = Fetch(allow=[f"localhost:{server.port}"])
    with pytest.raises(FetchError, match="loopback"):
        await fetch(cap, server.url("/echo", host="localhost"))
    assert server.requests == []


async def test_the_connection_goes_to_the_checked_address_with_the_names_host_header(
    server: FetchServer, dns: dict[str, list[str]]
) -> None:
    # the name is resolved once, by the checked resolver; a second lookup (the system's,
    # which does not know *.test) would fail, so reaching the server proves there was none
    dns["api.test"] = ["127.0.0.1"]
    cap = Fetch(allow=[f"api.test:{server.port}"], allow_private=True)
    r = await fetch(cap, f"http://api.test:{server.port}/echo")
    assert json.loads(r["body"])["headers"]["host"] == f"api.test:{server.port}"
    assert dns["calls"] == ["api.test"]  # type: ignore[comparison-overlap]


@pytest.mark.parametrize(("certified", "ok"), [("api.test", True), ("other.test", False)])
async def test_https_to_the_checked_address_verifies_the_certificate_for_the_name(
    tmp_path: Path,
    dns: dict[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    certified: str,
    ok: bool,
) -> None:
    # the connection goes to 127.0.0.1, but TLS sends the name (SNI) and checks the
    # certificate against it: a certificate for another name fails the request
    cert, key, client = tls_certificate(tmp_path, certified)
    monkeypatch.setattr(
        _fetch_transfer,
        "client_for",
        lambda timeout: httpx.AsyncClient(trust_env=False, verify=client, timeout=timeout),
    )
    dns["api.test"] = ["127.0.0.1"]
    with serving(tls=(cert, key)) as server:
        cap = Fetch(allow=[f"api.test:{server.port}"], allow_private=True)
        url = f"https://api.test:{server.port}/echo"
        if ok:
            r = await fetch(cap, url)
            assert json.loads(r["body"])["headers"]["host"] == f"api.test:{server.port}"
            assert r["url"] == url
        else:
            with pytest.raises(FetchError, match=r"could not connect to api\.test"):
                await fetch(cap, url)
            assert server.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "http://other.example/x",
        "ftp://api.example.com/x",
        "file:///etc/passwd",
        "http://user:pw@api.example.com/x",
        "http://api.example.com:8080/x",
        "http://evil.example.com.attacker.test/x",
        "https://x.org/v2/a",
        "https://x.org/v1/%2e%2e/admin",
        "http://x.org/v1/a",
        "data:text/plain,hi",
    ],
)
async def test_a_url_off_the_allowlist_is_refused_before_any_lookup(
    dns: dict[str, list[str]], url: str
) -> None:
    cap = Fetch(allow=["api.example.com", "https://x.org/v1/*", "*.sub.example"])
    with pytest.raises(FetchError):
        await fetch(cap, url)
    assert dns["calls"] == []  # type: ignore[comparison-overlap]


def test_allowlist_hosts_wildcards_and_url_patterns() -> None:
    allow = Allowlist(["api.example.com", "*.sub.example", "https://x.org/v1/*", "h.test:8080"])

    def admits(scheme: str, host: str, port: int, path: str) -> bool:
        return allow.admits(Target(scheme, host, port, path))

    assert admits("https", "api.example.com", 443, "/anything")
    assert admits("http", "api.example.com", 80, "/")
    assert admits("https", "a.b.sub.example", 443, "/")
    assert not admits("https", "sub.example", 443, "/")  # *. is the subdomains only
    assert not admits("https", "xsub.example", 443, "/")
    assert admits("https", "x.org", 443, "/v1/items/3")
    assert not admits("https", "x.org", 443, "/v1")
    assert not admits("http", "x.org", 80, "/v1/items")
    assert admits("http", "h.test", 8080, "/")
    assert not admits("http", "h.test", 80, "/")
    with pytest.raises(ValueError):
        Allowlist([])
    with pytest.raises(ValueError):
        Allowlist(["ftp://x.org"])
    with pytest.raises(ValueError):
        Allowlist(["https://u:p@x.org/"])


def test_address_refusal_allows_public_addresses_and_everything_when_private_is_allowed() -> None:
    assert address_refusal("93.184.216.34", False) is None
    assert address_refusal("2606:4700::1111", False) is None
    assert address_refusal("127.0.0.1", True) is None
    assert address_refusal("not-an-ip", True) is not None


async def test_a_redirect_to_a_host_off_the_allowlist_is_refused(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)
    with pytest.raises(FetchError, match=r"a redirect to http://elsewhere\.example/ is not on"):
        await fetch(cap, server.url("/redirect?to=http://elsewhere.example/"))


async def test_every_redirect_hop_has_its_addresses_checked(
    server: FetchServer, dns: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the test's server stands for a public one (its loopback address passes the check);
    # it redirects to an allowed name that resolves to the metadata address
    real = _fetch_transfer.address_refusal
    monkeypatch.setattr(
        _fetch_transfer,
        "address_refusal",
        lambda address, allow: None if address == "127.0.0.1" else real(address, allow),
    )
    dns["public.test"] = ["127.0.0.1"]
    dns["meta.test"] = ["169.254.169.254"]
    cap = Fetch(allow=["meta.test", f"public.test:{server.port}"])
    start = f"http://public.test:{server.port}/redirect?to=http://meta.test/latest/"
    with pytest.raises(FetchError, match=r"meta\.test resolves to a cloud metadata address"):
        await fetch(cap, start)
    assert len(server.requests) == 1
    assert dns["calls"] == ["public.test", "meta.test"]  # type: ignore[comparison-overlap]


async def test_redirect_modes_303_to_get_and_the_redirect_cap(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True, max_redirects=2)
    to_echo = server.url("/redirect?to=/echo&status=303")
    r = await fetch(cap, to_echo, "POST", [("Content-Type", "text/plain")], b"data")
    sent = json.loads(r["body"])
    assert r["redirected"] and sent["method"] == "GET" and sent["body"] == ""
    assert "content-type" not in sent["headers"]
    r = await fetch(cap, to_echo, redirect="manual")
    assert r["status"] == 303 and ["location", "/echo"] in r["headers"]
    with pytest.raises(FetchError, match="redirect is 'error'"):
        await fetch(cap, to_echo, redirect="error")
    r = await fetch(cap, server.url("/redirect?to=/echo&status=307"), "POST", [], b"keep")
    assert json.loads(r["body"])["body"] == "keep"
    loop = server.url("/redirect?to=/redirect%3Fto%3D/redirect%253Fto%253D/echo")
    with pytest.raises(FetchError, match="more than 2 redirects"):
        await fetch(cap, loop)


async def test_host_headers_override_the_programs_and_are_never_shown_to_it(
    server: FetchServer,
) -> None:
    cap = Fetch(
        allow=[f"127.0.0.1:{server.port}"],
        allow_private=True,
        headers={"Authorization": f"Bearer {SECRET}"},
    )
    r = await fetch(cap, server.url("/echo"), headers=[("authorization", "Bearer guest")])
    got = server.seen("/echo")[-1]["headers"]
    assert got["authorization"] == f"Bearer {SECRET}"
    shown = dict((k, v) for k, v in r["headers"])
    assert shown["x-echo-authorization"] == "[REDACTED]"
    assert SECRET not in json.dumps(r["headers"])


async def test_host_headers_are_not_sent_after_a_redirect_to_another_origin(
    server: FetchServer, dns: dict[str, list[str]]
) -> None:
    dns["other.test"] = ["127.0.0.1"]
    cap = Fetch(
        allow=[f"127.0.0.1:{server.port}", f"other.test:{server.port}"],
        allow_private=True,
        headers={
            "Authorization": f"Bearer {SECRET}",
            f"http://other.test:{server.port}": {"X-Other-Key": "other-secret"},
        },
    )
    away = f"http://other.test:{server.port}/echo"
    await fetch(cap, server.url(f"/redirect?to={away}"), headers=[("X-Mine", "1")])
    first, second = server.requests[-2:]
    assert first["headers"]["authorization"] == f"Bearer {SECRET}"
    assert "x-other-key" not in first["headers"]
    assert "authorization" not in second["headers"]  # another origin: the key stays home
    assert second["headers"]["x-other-key"] == "other-secret"  # configured for that origin
    assert second["headers"]["x-mine"] == "1"


async def test_the_program_cannot_set_the_connections_own_headers(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)
    await fetch(
        cap,
        server.url("/echo"),
        headers=[("Host", "internal.example"), ("Transfer-Encoding", "chunked"), ("TE", "x")],
    )
    got = server.seen("/echo")[-1]["headers"]
    assert got["host"] == f"127.0.0.1:{server.port}"
    assert "transfer-encoding" not in got and "te" not in got
    with pytest.raises(FetchError, match="not a valid header"):
        await fetch(cap, server.url("/echo"), headers=[("X-Bad", "a\r\nInjected: 1")])
    with pytest.raises(FetchError, match="not a valid header"):
        await fetch(cap, server.url("/echo"), headers=[("X-Wide", "\u20ac")])
    await fetch(cap, server.url("/echo"), headers=[("X-Latin", "caf\u00e9")])  # Latin-1 goes
    assert server.seen("/echo")[-1]["headers"]["x-latin"] == "caf\u00e9"


async def test_a_gzip_bomb_is_cut_at_the_response_cap(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True, max_response_bytes=2**20)
    with pytest.raises(FetchError, match="over the limit of 1,048,576 bytes"):
        await fetch(cap, server.url("/bomb"))


async def test_a_gzip_body_within_the_cap_arrives_inflated(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)
    r = await fetch(cap, server.url("/gzip"))
    assert r["body"] == b"hello gzip"
    assert server.seen("/gzip")[0]["headers"]["accept-encoding"] == "gzip, deflate"


async def test_a_connection_lost_mid_body_is_a_fetch_error(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)
    with pytest.raises(FetchError, match=r"the request failed \(RemoteProtocolError\)"):
        await fetch(cap, server.url("/truncated"))


async def test_a_secret_in_a_redirect_url_is_scrubbed_from_errors(server: FetchServer) -> None:
    cap = Fetch(
        allow=[f"127.0.0.1:{server.port}"],
        allow_private=True,
        headers={"X-Key": SECRET},
    )
    with pytest.raises(FetchError) as caught:
        await fetch(cap, server.url(f"/redirect?to=http://elsewhere.example/{SECRET}"))
    assert SECRET not in str(caught.value) and "[REDACTED]" in str(caught.value)


async def test_a_slow_server_hits_the_timeout(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True, timeout=0.5)
    with pytest.raises(FetchError, match=r"no complete response within 0\.5 s"):
        await fetch(cap, server.url("/slow"))


async def test_methods_off_the_list_and_oversized_bodies_are_refused(server: FetchServer) -> None:
    cap = Fetch(
        allow=[f"127.0.0.1:{server.port}"],
        allow_private=True,
        methods=["GET"],
        max_request_bytes=10,
    )
    with pytest.raises(FetchError, match="method POST is not allowed"):
        await fetch(cap, server.url("/echo"), "post", [], b"x")
    with pytest.raises(FetchError, match="method DELETE is not allowed"):
        await fetch(cap, server.url("/echo"), "DELETE")
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True, max_request_bytes=10)
    with pytest.raises(FetchError, match="request body is over 10 bytes"):
        await fetch(cap, server.url("/echo"), "POST", [], b"x" * 11)
    assert server.requests == []
    with pytest.raises(ValueError, match="never allowed"):
        Fetch(allow=["x.org"], methods=["CONNECT"])


async def test_abort_cancels_the_request_on_the_host(server: FetchServer) -> None:
    cap = Fetch(allow=[f"127.0.0.1:{server.port}"], allow_private=True)
    fns = cap.exports()
    ticket = fns["open"]()
    outcome: list[BaseException] = []

    async def run() -> None:
        try:
            await fns["request"](ticket, "GET", server.url("/hold"), [], None, "follow")
        except FetchError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.to_thread.run_sync(server.held.wait, 20)
        await fns["abort"](ticket)
    assert [str(e) for e in outcome] == ["fetch: the request was aborted"]
    assert await anyio.to_thread.run_sync(server.let_go.wait, 20)


def test_a_fetch_is_the_global_fetch_and_nothing_else() -> None:
    from quickjail import bridge

    cap = Fetch(allow=["x.org"])
    with pytest.raises(ValueError, match="the global 'fetch'"):
        bridge.run_code_sync("1", globals={"get": cap})
    with pytest.raises(TypeError, match="goes in globals"):
        bridge.run_code_sync("1", imports={"net": {"fetch": cap}})
