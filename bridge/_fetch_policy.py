"""What :class:`~quickjail.bridge.Fetch` lets a program request: URLs, addresses, headers.

Pure checks, no I/O and no httpx: the allowlist of hosts and URL patterns, the rule for the
addresses a host resolves to (no private, loopback, link-local, ... address unless allowed),
and which request headers a program may set.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_PORTS",
    "Allowlist",
    "Target",
    "address_refusal",
    "ascii_host",
    "is_header_name",
    "is_header_value",
    "program_may_set",
]

DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_HOST_RE: Final = re.compile(r"^(?:\*\.)?[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?$|^\[[0-9a-f:.]+\]$")
_TOKEN_RE: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_DOT_SEGMENT_RE: Final = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.I)
# set by the host alone: the connection, the framing and the encodings it inflates
_HOST_ONLY: Final = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        "accept-encoding",
        "expect",
        "proxy-authorization",
        "proxy-connection",
    }
)


@dataclass(frozen=True, slots=True)
class Target:
    """A request's URL taken apart: lower-case scheme and host (IDNA-encoded), port, path."""

    scheme: str
    host: str
    port: int
    path: str  # the path as sent, without the query

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


@dataclass(frozen=True, slots=True)
class _Rule:
    schemes: tuple[str, ...]
    host: str  # exact, or ".example.com" for "*.example.com" (subdomains only)
    port: int | None  # None: the scheme's default
    path: re.Pattern[str] | None  # None: any path


def ascii_host(host: str) -> str:
    """``host`` as a URL carries it: lower case, IDNA-encoded, an IPv6 address in brackets.

    Raises:
        ValueError: a label IDNA cannot encode.
    """
    host = host.lower()
    if ":" in host:
        return f"[{host}]"
    if host.isascii():
        return host
    wild = host.startswith("*.")
    try:
        encoded = host[2 if wild else 0 :].encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise ValueError(f"{host!r} is not a host name IDNA can encode") from exc
    return f"*.{encoded}" if wild else encoded


def _host_matches(rule: str, host: str) -> bool:
    if rule.startswith("."):
        return host.endswith(rule) and len(host) > len(rule)
    return host == rule


class Allowlist:
    """The URLs a program may fetch: each entry a host or a URL pattern.

    A host (``api.example.com``, ``*.example.com`` for its subdomains, ``host:8080``) admits
    ``http`` and ``https`` on that port (by default the scheme's own) and any path. A URL
    pattern (``https://x.org/v1/*``) admits its scheme, host and port, and the paths its path
    matches, ``*`` standing for any run of characters; a URL with no path admits every path
    on its origin. A URL with user info or an encoded dot segment is never admitted.
    """

    def __init__(self, entries: Iterable[str]) -> None:
        """Raises:
        TypeError, ValueError: an entry is not a host or an http(s) URL pattern."""
        if isinstance(entries, str):
            entries = [entries]
        rules = [self._rule(entry) for entry in entries]
        if not rules:
            raise ValueError("Fetch(allow=...) admits nothing: name hosts or URL patterns")
        self._rules = tuple(rules)

    @staticmethod
    def _rule(entry: object) -> _Rule:
        if not isinstance(entry, str) or not entry:
            raise TypeError(f"Fetch(allow=...) takes hosts or URL patterns (str), not {entry!r}")
        full = "://" in entry
        try:
            parts = urlsplit(entry if full else f"http://{entry}")
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"Fetch(allow=...): {entry!r} is not a host or URL") from exc
        host = ascii_host(parts.hostname or "")
        if parts.scheme not in DEFAULT_PORTS or not host:
            raise ValueError(f"Fetch(allow=...): {entry!r}: only http and https URLs")
        if "@" in parts.netloc or parts.query or parts.fragment:
            raise ValueError(f"Fetch(allow=...): {entry!r} has user info, a query or a fragment")
        if not _HOST_RE.match(host) or "*" in host[2:]:
            raise ValueError(f"Fetch(allow=...): {entry!r}: a host is a name, *.name or an IP")
        if host.startswith("*."):
            host = host[1:]
        if not full:
            if parts.path not in ("", "/"):
                raise ValueError(f"Fetch(allow=...): {entry!r}: a host has no path")
            return _Rule(("http", "https"), host, port, None)
        if parts.path in ("", "/*"):
            return _Rule((parts.scheme,), host, port, None)
        pattern = "".join(".*" if c == "*" else re.escape(c) for c in parts.path)
        return _Rule((parts.scheme,), host, port, re.compile(pattern, re.S))

    def admits(self, target: Target) -> bool:
        """Whether a request may go to ``target``."""
        if target.scheme not in DEFAULT_PORTS or _DOT_SEGMENT_RE.search(target.path):
            return False
        for rule in self._rules:
            if target.scheme not in rule.schemes or not _host_matches(rule.host, target.host):
                continue
            if (rule.port or DEFAULT_PORTS[target.scheme]) != target.port:
                continue
            if rule.path is None or rule.path.fullmatch(target.path or "/"):
                return True
        return False


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, Teredo, NAT64), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    if ip in _NAT64 or ip in _IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")
# the cloud metadata services' well-known addresses (link-local in IPv4, ULA in IPv6)
_METADATA: Final = frozenset(
    {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
)


def address_refusal(address: str, allow_private: bool) -> str | None:
    """Why a connection to ``address`` is refused (None: it is allowed).

    Without ``allow_private`` only globally routable unicast addresses are allowed: private,
    loopback, link-local (cloud metadata), shared, multicast, reserved, unspecified and
    documentation addresses are refused, and so is an IPv6 address that carries a refused
    IPv4 one (mapped, 6to4, Teredo, NAT64).
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "an address that is not an IP address"
    if allow_private:
        return None
    if ip in _METADATA:
        return "a cloud metadata address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        why = None if inner is None else address_refusal(str(inner), allow_private)
        if why is not None:
            return why
    if not ip.is_global:
        return "a private address"
    return None


def is_header_name(name: str) -> bool:
    """Whether ``name`` is an HTTP token."""
    return bool(_TOKEN_RE.match(name))


def is_header_value(value: str) -> bool:
    """Whether ``value`` is Latin-1 (what HTTP/1.1 carries) without CR, LF or NUL."""
    if any(c in value for c in "\r\n\0"):
        return False
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def program_may_set(name: str) -> bool:
    """Whether a program's request header ``name`` (lower case) is sent: the host alone sets
    the connection's own headers (``Host``, ``Content-Length``, ``Accept-Encoding``, ...)."""
    return name not in _HOST_ONLY and not name.startswith("proxy-")
