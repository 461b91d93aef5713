"""One ``fetch`` made on the host for a program, within its :class:`Policy`.

Every hop (the program's URL, then each redirect, followed here by hand) is checked against
the allowlist, its host resolved once and every address checked, and the connection made to
a checked address (the URL's host goes in ``Host`` and in TLS's SNI and certificate check),
so a name that resolves differently the second time (DNS rebinding) gains nothing. Headers
the host gives are added here, only on hops to the origin they were given for, and never
shown to the program; the body is capped both ways and the whole exchange in time. The
response's body is not read here: the guest reads it a chunk at a time (:class:`Exchange`).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
import httpx

from quickjail.bridge._errors import FetchError
from quickjail.bridge._fetch_policy import (
    DEFAULT_PORTS,
    Allowlist,
    Target,
    address_refusal,
    is_header_name,
    is_header_value,
    program_may_set,
)
from quickjail.bridge.http_body import ACCEPT_ENCODING, CappedBody

__all__ = ["Exchange", "HostHeaders", "Policy", "client_for", "resolve", "transfer"]

MAX_HEADERS: Final = 256
MAX_HEADER_BYTES: Final = 64 * 1024
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_BODY_HEADERS: Final = ("content-type", "content-encoding", "content-language", "content-location")
_REDACTED: Final = "[REDACTED]"
_MIN_SCRUBBED: Final = 4  # shorter header values are not looked for in response headers
_NULL_BODY: Final = frozenset({101, 103, 204, 205, 304})  # Fetch's null body statuses
_CLOSE_SECONDS: Final = 5.0  # a bound only: closing a response or client ends at once

Origin = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class HostHeaders:
    """Headers the host adds: ``common`` to every request's own origin (the one its URL
    names), ``by_origin`` to the hops that go to each origin."""

    common: tuple[tuple[str, str], ...] = ()
    by_origin: Mapping[Origin, tuple[tuple[str, str], ...]] | None = None

    def for_hop(self, origin: Origin, start: Origin) -> tuple[tuple[str, str], ...]:
        added = self.common if origin == start else ()
        if self.by_origin:
            added += self.by_origin.get(origin, ())
        return added

    def secrets(self) -> list[str]:
        values = [v for _, v in self.common]
        for pairs in (self.by_origin or {}).values():
            values += [v for _, v in pairs]
        return sorted({v for v in values if len(v) >= _MIN_SCRUBBED}, key=len, reverse=True)


@dataclass(frozen=True, slots=True)
class Policy:
    """What one :class:`~quickjail.bridge.Fetch` allows (checked when it was made)."""

    allow: Allowlist
    headers: HostHeaders
    methods: frozenset[str]
    max_request_bytes: int
    max_response_bytes: int
    timeout: float
    max_redirects: int
    allow_private: bool


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, in the resolver's order (tests replace this)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's CA bundle), made once: loading the bundle is
    most of what making a client costs (about 25 ms)."""
    return httpx.create_ssl_context()


def client_for(timeout: float) -> httpx.AsyncClient:
    """The client of one request: no redirects, no proxy or ``.netrc`` from the environment,
    certificates checked against httpx's CA bundle, certifi's (tests replace this)."""
    return httpx.AsyncClient(
        trust_env=False, follow_redirects=False, timeout=httpx.Timeout(timeout), verify=_tls()
    )


def _target(url: httpx.URL) -> Target:
    if url.scheme not in DEFAULT_PORTS:
        raise FetchError(f"fetch: the scheme {url.scheme[:20]!r} is not http or https")
    if url.userinfo:
        raise FetchError("fetch: a URL with credentials (user:password@) is refused")
    host = url.raw_host.decode("ascii", "replace").lower()
    if not host:
        raise FetchError("fetch: the URL has no host")
    if ":" in host:
        host = f"[{host}]"
    path = url.raw_path.decode("ascii", "replace").split("?", 1)[0]
    return Target(url.scheme, host, url.port or DEFAULT_PORTS[url.scheme], path)


def _parse_url(text: str) -> httpx.URL:
    try:
        return httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise FetchError("fetch: the URL is not valid") from None


def _shown(url: httpx.URL) -> str:
    """The URL as an error may show it: no query, no credentials, at most 200 characters."""
    return str(url.copy_with(query=None, fragment=None))[:200]


async def _addresses(target: Target, url: httpx.URL, allow_private: bool) -> list[str]:
    host = url.host  # without brackets
    try:
        found = [host] if _is_ip(host) else await resolve(host, target.port)
    except OSError:
        raise FetchError(f"fetch: the host {target.host[:100]} could not be resolved") from None
    if not found:
        raise FetchError(f"fetch: the host {target.host[:100]} could not be resolved")
    for address in found:
        why = address_refusal(address, allow_private)
        if why is not None:
            raise FetchError(f"fetch: {target.host[:100]} resolves to {why}, which is refused")
    return found


def _is_ip(host: str) -> bool:
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in host else socket.AF_INET, host)
    except OSError:
        return False
    return True


def _program_headers(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    if len(pairs) > MAX_HEADERS:
        raise FetchError(f"fetch: more than {MAX_HEADERS} request headers")
    size = 0
    out: list[tuple[str, str]] = []
    for name, value in pairs:
        size += len(name) + len(value)
        if size > MAX_HEADER_BYTES:
            raise FetchError(f"fetch: the request headers are over {MAX_HEADER_BYTES:,} bytes")
        if not is_header_name(name) or not is_header_value(value):
            raise FetchError(f"fetch: {name[:60]!r} is not a valid header")
        if program_may_set(name.lower()):
            out.append((name.lower(), value))
    return out


def _method(method: str, policy: Policy) -> str:
    upper = method.upper()
    if upper in ("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"):
        method = upper  # the Fetch standard normalizes these
    if not is_header_name(method):
        raise FetchError("fetch: the method is not a valid token")
    if method not in policy.methods:
        raise FetchError(f"fetch: the method {method[:20]} is not allowed")
    return method


def _reason(phrase: str) -> str:
    """The server's reason phrase if a ``Response``'s ``statusText`` may hold it (HTTP's
    reason-phrase: tab, space, visible ASCII and obs-text), else none."""
    ok = len(phrase) <= 1024 and all(
        c == "\t" or " " <= c <= "~" or "\x80" <= c <= "\xff" for c in phrase
    )
    return phrase if ok else ""


def _scrubbed(value: str, secrets: list[str]) -> str:
    for secret in secrets:
        value = value.replace(secret, _REDACTED)
    return value


class Exchange:
    """The response of one fetch whose body the guest reads a chunk at a time (``read``), on
    the event loop that made it; it owns the request's client and connection until the body
    ends, fails, is cancelled or its run ends (:meth:`aclose`, idempotent). The exchange's
    timeout still holds: a read after its deadline fails."""

    __slots__ = (
        "_body",
        "_client",
        "_closed",
        "_deadline",
        "_reading",
        "_shut",
        "_timeout",
        "busy",
    )

    def __init__(
        self, client: httpx.AsyncClient, body: CappedBody, deadline: float, timeout: float
    ) -> None:
        self._client = client
        self._body = body
        self._deadline = deadline
        self._timeout = timeout
        self._closed = False  # no more reads (the connection may still be closing)
        self._reading: anyio.CancelScope | None = None  # the read under way
        self._shut = anyio.Event()  # the response and the client are closed
        self.busy = False  # a read is under way (the guest's stream never asks twice at once)

    @property
    def closed(self) -> bool:
        return self._closed

    async def read(self) -> tuple[bytes, bool]:
        """The next chunk and whether the body ended with it (then the exchange is closed).

        Raises:
            FetchError: the body failed (over the cap, cut off, corrupt, past the deadline)
                or was closed meanwhile; the exchange is closed.
        """
        if self._closed:
            raise FetchError("fetch: the response body was closed")
        try:
            with anyio.CancelScope() as self._reading:
                with anyio.fail_after(max(self._deadline - anyio.current_time(), 0.0)):
                    chunk, done = await self._body.read()
        except (TimeoutError, httpx.TimeoutException):
            await self._close()
            raise FetchError(f"fetch: no complete response within {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            await self._close()
            raise FetchError(f"fetch: the request failed ({type(exc).__name__})") from None
        except BaseException:
            await self._close()
            raise
        finally:
            self._reading = None
        if self._closed:  # aclose cancelled this read
            await self._close()
            raise FetchError("fetch: the response body was closed")
        if done:
            await self._close()
        return chunk, done

    async def aclose(self) -> None:
        """Close the response and the client's connection (idempotent, never raises); a read
        under way is cancelled, and closes them as it ends."""
        self._closed = True
        reading = self._reading
        if reading is None:
            await self._close()
            return
        reading.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
            await self._shut.wait()

    async def _close(self) -> None:
        self._closed = True
        if self._shut.is_set():
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
            try:
                await self._body.aclose()
            finally:
                with contextlib.suppress(Exception):
                    await self._client.aclose()
                self._shut.set()


async def transfer(
    policy: Policy,
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    body: bytes | None,
    redirect: str,
) -> tuple[dict[str, Any], Exchange | None]:
    """Make the request: the response's parts for the guest's ``Response`` once its status
    and headers arrived, and the :class:`Exchange` its body is read from (None for a
    response without one: ``HEAD``, a null-body status, ``Content-Length: 0``).

    Raises:
        FetchError: refused or failed, with a message the program may see (a TypeError
            there, as a network error of ``fetch`` is).
    """
    method = _method(method, policy)
    if redirect not in ("follow", "manual", "error"):
        raise FetchError(f"fetch: redirect mode {redirect[:20]!r} is not follow, manual or error")
    if body is not None and len(body) > policy.max_request_bytes:
        raise FetchError(f"fetch: the request body is over {policy.max_request_bytes:,} bytes")
    if body is not None and method in ("GET", "HEAD"):
        raise FetchError(f"fetch: a {method} request cannot have a body")
    sent = _program_headers(headers)
    current = _parse_url(url)
    secrets = policy.headers.secrets()
    deadline = anyio.current_time() + policy.timeout
    client = client_for(policy.timeout)
    try:
        with anyio.fail_after(policy.timeout):
            result, kept = await _hops(client, policy, method, current, sent, body, redirect)
    except BaseException as exc:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
            await client.aclose()
        if isinstance(exc, TimeoutError | httpx.TimeoutException):
            raise FetchError(f"fetch: no complete response within {policy.timeout:g} s") from None
        if isinstance(exc, httpx.HTTPError):  # a broken connection or response
            raise FetchError(f"fetch: the request failed ({type(exc).__name__})") from None
        if isinstance(exc, FetchError):  # a URL in the message may be one made with a secret
            scrubbed = _scrubbed(str(exc), secrets)
            if scrubbed != str(exc):
                raise FetchError(scrubbed) from None
        raise
    result["url"] = _scrubbed(result["url"], secrets)
    if kept is None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_SECONDS):
            await client.aclose()
        return result, None
    return result, Exchange(client, kept, deadline, policy.timeout)


async def _hops(
    client: httpx.AsyncClient,
    policy: Policy,
    method: str,
    url: httpx.URL,
    sent: list[tuple[str, str]],
    body: bytes | None,
    redirect: str,
) -> tuple[dict[str, Any], CappedBody | None]:
    start = _target(url).origin
    secrets = policy.headers.secrets()
    for hop in range(policy.max_redirects + 1):
        target = _target(url)
        if not policy.allow.admits(target):
            what = "the URL" if hop == 0 else "a redirect to"
            raise FetchError(f"fetch: {what} {_shown(url)} is not on the allowlist")
        addresses = await _addresses(target, url, policy.allow_private)
        added = policy.headers.for_hop(target.origin, start)
        replaced = {name.lower() for name, _ in added}
        pairs = [(n, v) for n, v in sent if n not in replaced]
        pairs += [
            *added,
            ("host", url.netloc.decode("ascii")),
            ("accept-encoding", ACCEPT_ENCODING),
        ]
        response = await _send(client, url, addresses, method, pairs, body)
        kept: CappedBody | None = None
        try:
            location = response.headers.get("location")
            status = response.status_code
            if status in _REDIRECTS and location is not None and redirect != "manual":
                if redirect == "error":
                    raise FetchError("fetch: the response is a redirect and redirect is 'error'")
                if hop == policy.max_redirects:
                    raise FetchError(f"fetch: more than {policy.max_redirects} redirects")
                try:
                    following = url.join(location)
                except (httpx.InvalidURL, ValueError, TypeError):
                    raise FetchError("fetch: a redirect to an invalid URL") from None
                if (status == 303 and method not in ("GET", "HEAD")) or (
                    status in (301, 302) and method == "POST"
                ):
                    method, body = "GET", None
                    sent = [(n, v) for n, v in sent if n not in _BODY_HEADERS]
                if _target(following).origin != target.origin:
                    sent = [(n, v) for n, v in sent if n != "authorization"]
                url = following
                continue
            if not 200 <= status <= 599:  # what a Response can hold
                raise FetchError(f"fetch: the server answered with status {status}")
            empty = response.headers.get("content-length", "").strip() == "0"
            if method != "HEAD" and status not in _NULL_BODY and not empty:
                kept = CappedBody(response, policy.max_response_bytes, FetchError)
        finally:
            if kept is None:
                await response.aclose()
        return {
            "status": response.status_code,
            "statusText": _reason(response.reason_phrase),
            # Latin-1, as a Headers value holds bytes (httpx guesses one encoding for all)
            "headers": [
                [n.decode("latin-1").lower(), _scrubbed(v.decode("latin-1"), secrets)]
                for n, v in response.headers.raw
            ],
            "url": str(url),
            "redirected": hop > 0,
        }, kept
    raise AssertionError("unreachable")  # pragma: no cover


async def _send(
    client: httpx.AsyncClient,
    url: httpx.URL,
    addresses: list[str],
    method: str,
    pairs: list[tuple[str, str]],
    body: bytes | None,
) -> httpx.Response:
    """Send to the first checked address that takes the connection."""
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    for address in addresses:
        request = httpx.Request(
            method,
            url.copy_with(host=address),
            # as bytes: httpx would encode str values as ASCII, and a header value is Latin-1
            headers=[(n.encode("ascii"), v.encode("latin-1")) for n, v in pairs],
            content=body,
            extensions=extensions,
        )
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError:
            continue
        except httpx.TimeoutException:
            raise TimeoutError from None
        except httpx.HTTPError as exc:
            raise FetchError(f"fetch: the request failed ({type(exc).__name__})") from None
    raise FetchError(f"fetch: could not connect to {url.host[:100]}")
