"""``bridge.Fetch``: the guest's ``fetch``, made on the host within an allowlist and caps.

Without it a program's ``fetch`` rejects with a ``TypeError`` (as a Worker's does when it
has no outbound network), so ``try { await fetch(u) } catch`` behaves as there. Passed as
``globals={"fetch": Fetch(allow=[...])}``, it gives the guest's ``fetch`` a host function
the program itself cannot reach: the guest builds the ``Request``, the host checks and makes
it (``_fetch_transfer.py``), the guest gets a real ``Response``. Every check is on the host.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from quickjail.bridge._errors import FetchError
from quickjail.bridge._fetch_policy import (
    DEFAULT_PORTS,
    Allowlist,
    ascii_host,
    is_header_name,
    is_header_value,
)
from quickjail.bridge._per_run import current

if TYPE_CHECKING:
    import anyio

    from quickjail.bridge._fetch_transfer import Exchange, HostHeaders, Policy

__all__ = ["DEFAULT_METHODS", "Fetch"]

DEFAULT_METHODS: Final = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_NEVER: Final = frozenset({"CONNECT", "TRACE", "TRACK"})  # the Fetch standard forbids them


class Fetch:
    """The guest's ``fetch``, made on the host: ``globals={"fetch": Fetch(allow=[...])}``.

    Each request (and each redirect, followed on the host) must match ``allow``; its host is
    resolved once and every address checked (private, loopback, link-local, metadata,
    multicast and reserved addresses are refused unless ``allow_private``); the connection
    goes to a checked address. Failures reach the program as ``TypeError`` with a short reason.
    The ``Response`` comes with the status and headers; its body streams from the host, read
    from the network as the program reads it, and is closed when the run ends.

    Args:
        allow: hosts (``"api.example.com"``, ``"*.example.com"`` for its subdomains,
            ``"localhost:8080"``) admitting http and https on the default port (or the one
            named) and any path, or URL patterns (``"https://x.org/v1/*"``: that scheme, host
            and port, the paths the pattern matches, ``*`` any run of characters).
        headers: added on the host, replacing the program's header of the same name, never
            visible to the program: ``{"Authorization": "Bearer ..."}`` goes to the origin
            each request's URL names (not to another origin a redirect leads to);
            ``{"https://api.example.com": {"X-Key": "..."}}`` goes to that origin only, also
            after a redirect to it.
        max_request_bytes: the largest request body the program may send.
        max_response_bytes: the largest response body, counted decompressed as the program
            reads it (a gzip bomb is cut at the cap: the body's stream errors).
        timeout: seconds for the whole exchange, redirects and body included.
        methods: the methods the program may use (``CONNECT``, ``TRACE`` never).
        allow_private: let requests reach private, loopback and link-local addresses (for a
            service on the host's own network; the allowlist still applies).
        max_redirects: redirects followed before the request fails.

    Raises:
        TypeError, ValueError: an argument is malformed.
        ImportError: httpx is missing (``pip install quickjail[fetch]``).
    """

    __slots__ = ("_policy", "_tickets")

    def __init__(
        self,
        allow: Iterable[str] | str,
        *,
        headers: Mapping[str, str | Mapping[str, str]] | None = None,
        max_request_bytes: int = 10 * 2**20,
        max_response_bytes: int = 10 * 2**20,
        timeout: float = 30.0,
        methods: Iterable[str] = DEFAULT_METHODS,
        allow_private: bool = False,
        max_redirects: int = 20,
    ) -> None:
        try:
            from quickjail.bridge._fetch_transfer import Policy
        except ImportError as exc:  # pragma: no cover - httpx is in the dev extra
            raise ImportError(
                f"bridge.Fetch makes its requests with httpx: install quickjail[fetch] ({exc})"
            ) from exc
        for name, value in (
            ("max_request_bytes", max_request_bytes),
            ("max_response_bytes", max_response_bytes),
            ("max_redirects", max_redirects),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"Fetch({name}=...) must be a non-negative int, not {value!r}")
        if (
            not isinstance(timeout, int | float)
            or isinstance(timeout, bool)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(
                f"Fetch(timeout=...) must be a positive number of seconds: {timeout!r}"
            )
        if not isinstance(allow_private, bool):
            raise TypeError("Fetch(allow_private=...) takes a bool")
        self._policy: Policy = Policy(
            allow=Allowlist(allow),
            headers=_host_headers(headers),
            methods=_methods(methods),
            max_request_bytes=max_request_bytes,
            max_response_bytes=max_response_bytes,
            timeout=float(timeout),
            max_redirects=max_redirects,
            allow_private=allow_private,
        )
        self._tickets = Tickets()

    def _tickets_here(self) -> Tickets:
        """The tickets of the run calling: each run has its own, so that no run can evict or
        guess another's. Outside a run (a direct call from Python), this Fetch's own."""
        per_run = current()
        return self._tickets if per_run is None else per_run.get(self, Tickets)

    def __repr__(self) -> str:
        return f"Fetch(<{len(self._policy.allow._rules)} allow entries>)"

    def exports(self) -> Mapping[str, Any]:
        """The host functions the guest's ``fetch`` calls (not the program: the bridge hands
        them to the guest's own ``fetch``, where no program can reach them).

        ``open()`` gives a ticket for one request, ``request(ticket, ...)`` makes it and
        answers with the status and headers; ``read(ticket)`` gives the body's next chunk
        (``[bytes, done]``), ``cancel(ticket)`` closes the body, and ``abort(ticket)`` (the
        request's ``AbortSignal``) cancels the request or closes its body on the host.
        """
        from quickjail.bridge._fetch_transfer import transfer
        from quickjail.bridge._table import synchronous  # _table imports this module

        policy = self._policy

        def open() -> str:
            return self._tickets_here().open()

        async def request(
            ticket: str,
            method: str,
            url: str,
            headers: list[tuple[str, str]],
            body: bytes | None,
            redirect: str,
        ) -> dict[str, Any]:
            tickets = self._tickets_here()
            with tickets.scope(ticket) as scope:
                result, exchange = await transfer(policy, method, url, headers, body, redirect)
                if exchange is not None:
                    await tickets.hold(ticket, exchange)  # closes it if the ticket was aborted
            if scope.cancelled_caught or (exchange is not None and exchange.closed):
                raise FetchError("fetch: the request was aborted")
            result["body"] = None
            result["stream"] = exchange is not None
            return result

        async def read(ticket: str) -> list[Any]:
            chunk, done = await self._tickets_here().read(ticket)
            return [chunk, done]

        async def cancel(ticket: str) -> None:
            await self._tickets_here().close(ticket)

        async def abort(ticket: str) -> None:
            await self._tickets_here().abort(ticket)

        return {
            "open": synchronous(open),
            "request": request,
            "read": read,
            "cancel": cancel,
            "abort": abort,
        }


class Tickets:
    """One run's requests of one :class:`Fetch` and their open response bodies, by ticket.

    An ``AbortSignal`` in the guest cancels its request on the host, and the guest's body
    stream reads its response's body by ticket. Per run (:mod:`quickjail.bridge._per_run`), so
    that a run that opens many drops only its own; closed with the run (:meth:`aclose`).
    At most ``MAX_OPEN`` tickets are kept: past it, the oldest whose request has not started is
    dropped (a call the quotas refused leaves its ticket behind), and with none such a new one
    is refused. At most ``MAX_BODIES`` bodies stay open (each holds a connection): past it,
    the one read least recently is closed, and reading it fails.
    """

    MAX_OPEN: Final = 4096
    MAX_BODIES: Final = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: OrderedDict[str, None] = OrderedDict()  # opened, request not started
        self._started: dict[str, anyio.CancelScope] = {}
        self._bodies: OrderedDict[str, Exchange] = OrderedDict()  # least recently read first

    def __len__(self) -> int:
        return len(self._idle) + len(self._started) + len(self._bodies)

    def open(self) -> str:
        ticket = os.urandom(16).hex()  # not secrets: it imports base64 on a run's first import
        with self._lock:
            if len(self) >= self.MAX_OPEN:
                if not self._idle:
                    raise FetchError(f"fetch: more than {self.MAX_OPEN} requests at once")
                self._idle.popitem(last=False)
            self._idle[ticket] = None
        return ticket

    @contextlib.contextmanager
    def scope(self, ticket: str) -> Iterator[anyio.CancelScope]:
        """A cancel scope for the request of ``ticket``, which ``abort`` cancels; the ticket is
        spent when the scope ends (unless :meth:`hold` gave it a body)."""
        import anyio  # imported on a run's first fetch, not with quickjail (a sync run needs none)

        with anyio.CancelScope() as scope:
            with self._lock:
                if ticket not in self._idle:
                    spent = ticket in self._started or ticket in self._bodies
                    why = "spent" if spent else "not open"
                    raise FetchError(f"fetch: the request's ticket is {why}")
                del self._idle[ticket]
                self._started[ticket] = scope
            try:
                yield scope
            finally:
                with self._lock:
                    self._started.pop(ticket, None)

    async def hold(self, ticket: str, exchange: Exchange) -> None:
        """Keep the body of the request of ``ticket`` (inside its :meth:`scope`) for reads;
        closes it at once if the request was aborted meanwhile, and the body read least
        recently if too many are open."""
        dropped: list[Exchange] = []
        with self._lock:
            if self._started.pop(ticket, None) is None:
                dropped.append(exchange)  # aborted
            else:
                self._bodies[ticket] = exchange
                while len(self._bodies) > self.MAX_BODIES:
                    dropped.append(self._bodies.popitem(last=False)[1])
        for old in dropped:
            await old.aclose()

    async def read(self, ticket: str) -> tuple[bytes, bool]:
        """The next chunk of the body of ``ticket`` and whether it ended (then it is closed).

        Raises:
            FetchError: no such body open (closed, cancelled, or dropped for newer ones), or
                reading it failed (it is closed).
        """
        with self._lock:
            exchange = self._bodies.get(ticket)
            if exchange is None or exchange.busy:
                raise FetchError(
                    "fetch: the response body is not open (cancelled, ended, or closed when "
                    f"more than {self.MAX_BODIES} were open)"
                    if exchange is None
                    else "fetch: the response body is being read already"
                )
            self._bodies.move_to_end(ticket)
            exchange.busy = True
        done = True
        try:
            chunk, done = await exchange.read()
        finally:
            exchange.busy = False
            if done or exchange.closed:
                with self._lock:
                    if self._bodies.get(ticket) is exchange:
                        del self._bodies[ticket]
        return chunk, done

    async def close(self, ticket: str) -> None:
        """Close the body of ``ticket`` (the guest cancelled its stream); a no-op if none."""
        with self._lock:
            exchange = self._bodies.pop(ticket, None)
        if exchange is not None:
            await exchange.aclose()

    async def abort(self, ticket: str) -> None:
        """Cancel the request of ``ticket``, or close its body."""
        with self._lock:
            self._idle.pop(ticket, None)
            scope = self._started.pop(ticket, None)
        if scope is not None:
            scope.cancel()
        await self.close(ticket)

    async def aclose(self) -> None:
        """The run ended: close every body still open (idempotent)."""
        with self._lock:
            bodies = list(self._bodies.values())
            self._bodies.clear()
            self._idle.clear()
        for exchange in bodies:
            await exchange.aclose()


def _methods(methods: Iterable[str]) -> frozenset[str]:
    if isinstance(methods, str):
        methods = [methods]
    out: set[str] = set()
    for method in methods:
        if not isinstance(method, str) or not is_header_name(method):
            raise ValueError(f"Fetch(methods=...): {method!r} is not an HTTP method")
        upper = method.upper()
        if upper in _NEVER:
            raise ValueError(f"Fetch(methods=...): {method} is never allowed")
        out.add(upper if upper in DEFAULT_METHODS else method)
    return frozenset(out)


def _pairs(headers: Mapping[Any, Any], where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(headers, Mapping):
        raise TypeError(f"{where} takes a mapping of header names to str values")
    pairs: list[tuple[str, str]] = []
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{where} takes a mapping of header names to str values")
        if not is_header_name(name) or not is_header_value(value):
            raise ValueError(f"{where}: {name!r} is not a valid header")
        if name.lower() in ("host", "content-length", "transfer-encoding", "connection"):
            raise ValueError(f"{where}: the host sets {name!r} itself")
        pairs.append((name.lower(), value))
    return tuple(pairs)


def _host_headers(headers: Mapping[str, str | Mapping[str, str]] | None) -> HostHeaders:
    from quickjail.bridge._fetch_transfer import HostHeaders

    if headers is None:
        return HostHeaders()
    if not isinstance(headers, Mapping):
        raise TypeError("Fetch(headers=...) takes a mapping")
    common: dict[str, str] = {}
    by_origin: dict[tuple[str, str, int], tuple[tuple[str, str], ...]] = {}
    for key, value in headers.items():
        if isinstance(key, str) and "://" in key and isinstance(value, Mapping):
            by_origin[_origin(key)] = _pairs(value, f"Fetch(headers={{{key!r}: ...}})")
        elif isinstance(value, str):
            common[key] = value
        else:
            raise TypeError(
                f"Fetch(headers=...): {key!r} takes a str (a header) or, named by an origin "
                "URL, a mapping of headers"
            )
    return HostHeaders(_pairs(common, "Fetch(headers=...)"), by_origin or None)


def _origin(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"Fetch(headers=...): {url!r} is not an origin URL") from exc
    host = ascii_host(parts.hostname or "")
    if parts.scheme not in DEFAULT_PORTS or not host or "@" in parts.netloc:
        raise ValueError(f"Fetch(headers=...): {url!r} is not an http(s) origin")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError(f"Fetch(headers=...): {url!r}: an origin has no path or query")
    return (parts.scheme, host, port or DEFAULT_PORTS[parts.scheme])
