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

    from quickjail.bridge._fetch_transfer import HostHeaders, Policy

__all__ = ["DEFAULT_METHODS", "Fetch"]

DEFAULT_METHODS: Final = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_NEVER: Final = frozenset({"CONNECT", "TRACE", "TRACK"})  # the Fetch standard forbids them


class Fetch:
    """The guest's ``fetch``, made on the host: ``globals={"fetch": Fetch(allow=[...])}``.

    Each request (and each redirect, followed on the host) must match ``allow``; its host is
    resolved once and every address checked (private, loopback, link-local, metadata,
    multicast and reserved addresses are refused unless ``allow_private``); the connection
    goes to a checked address. Failures reach the program as ``TypeError`` with a short reason.

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
        max_response_bytes: the largest response body, counted decompressed (a gzip bomb is
            cut at the cap).
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

        ``open()`` gives a ticket for one request, ``request(ticket, ...)`` makes it, and
        ``abort(ticket)`` (the request's ``AbortSignal``) cancels it on the host.
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
            with self._tickets_here().scope(ticket) as scope:
                result = await transfer(policy, method, url, headers, body, redirect)
            if scope.cancelled_caught:
                raise FetchError("fetch: the request was aborted")
            return result

        async def abort(ticket: str) -> None:
            self._tickets_here().abort(ticket)

        return {"open": synchronous(open), "request": request, "abort": abort}


class Tickets:
    """One run's requests of one :class:`Fetch`, by ticket, so that an ``AbortSignal`` in the
    guest cancels its request on the host. At most ``MAX_OPEN`` are kept: past it, the oldest
    ticket whose request has not started is dropped (a call the quotas refused leaves its
    ticket behind), and with none such a new one is refused. Per run, so a run that opens
    many drops only its own."""

    MAX_OPEN: Final = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: OrderedDict[str, None] = OrderedDict()  # opened, request not started
        self._started: dict[str, anyio.CancelScope] = {}

    def __len__(self) -> int:
        return len(self._idle) + len(self._started)

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
        spent when the scope ends."""
        import anyio  # imported on a run's first fetch, not with quickjail (a sync run needs none)

        with anyio.CancelScope() as scope:
            with self._lock:
                if ticket in self._started:
                    raise FetchError("fetch: the request's ticket is spent")
                if ticket not in self._idle:
                    raise FetchError("fetch: the request's ticket is not open")
                del self._idle[ticket]
                self._started[ticket] = scope
            try:
                yield scope
            finally:
                with self._lock:
                    self._started.pop(ticket, None)

    def abort(self, ticket: str) -> None:
        with self._lock:
            self._idle.pop(ticket, None)
            scope = self._started.pop(ticket, None)
        if scope is not None:
            scope.cancel()


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
