"""The OpenAPI connector's requests: the allowlist, authentication, and one capped exchange.

Everything here runs on the host. A request goes only to a URL the allowlist admits (scheme,
host, port and path prefix compared; user info and encoded dot segments refused), redirects
are followed by hand, each ``Location`` checked again, and a secret (an API key, a bearer
token) is added to a request only when it goes to the origin the call started at, so a
redirect never carries it elsewhere. The response is read in chunks up to a byte cap.
"""

from __future__ import annotations

import http
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import httpx

from quickjail.bridge.http_body import read_capped
from quickjail.runtime.errors import ConnectorError, ToolDefinitionError

from ._openapi import ApiAuth

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_REDIRECTS",
    "Allowlist",
    "decode_body",
    "read_response",
    "same_origin",
    "status_error",
    "with_auth",
]

MAX_REDIRECTS: Final = 5
MAX_JSON_DEPTH: Final = 128
ERROR_BODY_CHARS: Final = 500
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_DOT_SEGMENT_RE: Final = re.compile(r"(?:^|/)(?:\.|%2e){1,2}(?:/|$)", re.I)


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return (url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme, 0))


@dataclass(frozen=True, slots=True)
class _Rule:
    schemes: tuple[str, ...]
    host: str
    port: int | None  # None: the scheme's default
    path: str  # "" for any path, else a prefix ending in "/" or a whole path


class Allowlist:
    """The URLs a connector may request: each rule a URL prefix or a host (``host[:port]``).

    A URL prefix (``https://api.example.com/v1/``) admits its scheme, host and port and the
    paths under its path (a path not ending in ``/`` admits itself and what is under
    ``path/``). A host admits ``http`` and ``https`` on that port (default: the scheme's own)
    and any path. A URL with user info, or with an encoded dot segment (``%2e%2e``), is never
    admitted.
    """

    def __init__(self, entries: Iterable[str]) -> None:
        rules: list[_Rule] = []
        for entry in entries:
            if not isinstance(entry, str) or not entry:
                raise ToolDefinitionError(f"an allow entry must be a non-empty str: {entry!r}")
            rules.append(self._rule(entry))
        if not rules:
            raise ToolDefinitionError("allow= admits nothing")
        self._rules = tuple(rules)

    @staticmethod
    def _rule(entry: str) -> _Rule:
        try:
            url = httpx.URL(entry if "://" in entry else f"http://{entry}")
        except httpx.InvalidURL as exc:
            raise ToolDefinitionError(f"allow entry {entry!r} is not a URL or host") from exc
        if url.scheme not in _DEFAULT_PORTS or not url.host:
            raise ToolDefinitionError(f"allow entry {entry!r}: only http and https URLs")
        if url.userinfo or url.query or url.fragment:
            raise ToolDefinitionError(f"allow entry {entry!r} has user info, a query or a fragment")
        if "://" not in entry:
            if url.raw_path not in (b"", b"/"):
                raise ToolDefinitionError(f"allow entry {entry!r}: a host has no path")
            return _Rule(("http", "https"), url.host, url.port, "")
        return _Rule((url.scheme,), url.host, url.port, url.raw_path.decode("ascii"))

    def admits(self, url: httpx.URL) -> bool:
        """Whether a request may go to ``url``."""
        if url.scheme not in _DEFAULT_PORTS or url.userinfo or not url.host:
            return False
        path = url.raw_path.decode("ascii", "replace").split("?", 1)[0] or "/"
        if _DOT_SEGMENT_RE.search(path):
            return False
        port = url.port or _DEFAULT_PORTS[url.scheme]
        for rule in self._rules:
            if url.scheme not in rule.schemes or url.host != rule.host:
                continue
            if (rule.port or _DEFAULT_PORTS[url.scheme]) != port:
                continue
            if rule.path in ("", "/") or path == rule.path:
                return True
            prefix = rule.path if rule.path.endswith("/") else rule.path + "/"
            if path.startswith(prefix):
                return True
        return False

    def check(self, url: httpx.URL, what: str) -> None:
        """Raise :class:`ConnectorError` unless the allowlist admits ``url``."""
        if not self.admits(url):
            shown = url.copy_with(query=None, fragment=None, userinfo=b"") if url.host else url
            raise ConnectorError(f"{what} {str(shown)[:300]} is not on the allowlist")


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown Status"


async def read_response(response: httpx.Response, cap: int) -> bytes:
    """The body of ``response``, refusing one over ``cap`` bytes (a compression bomb too:
    ``bridge/_http.py``)."""
    return await read_capped(response, cap, ConnectorError)


def _depth_ok(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return False
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return True


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _decoded(response: httpx.Response, body: bytes) -> str:
    """``body`` as text in the response's charset (UTF-8 when it names none, or one Python
    does not know)."""
    try:
        return body.decode(response.charset_encoding or "utf-8", "replace")
    except LookupError:
        return body.decode("utf-8", "replace")


def decode_body(response: httpx.Response, body: bytes) -> Any:
    """A 2xx body as the tool's value: JSON parsed, other text as a str, nothing as None."""
    if not body:
        return None
    text = _decoded(response, body)
    if not _is_json(response.headers.get("content-type", "")):
        return text
    try:
        value = json.loads(text)
    except RecursionError:
        raise ConnectorError(
            f"the response's JSON is nested deeper than {MAX_JSON_DEPTH}"
        ) from None
    except ValueError as exc:
        raise ConnectorError(f"the response is not valid JSON: {str(exc)[:200]}") from None
    if not _depth_ok(value):
        raise ConnectorError(f"the response's JSON is nested deeper than {MAX_JSON_DEPTH}")
    return value


def status_error(response: httpx.Response, body: bytes) -> ConnectorError:
    """``HTTP 404 Not Found: <the body's first 500 characters>``."""
    text = _decoded(response, body[: ERROR_BODY_CHARS * 4])[:ERROR_BODY_CHARS]
    detail = f": {text}" if text.strip() else ""
    return ConnectorError(f"HTTP {response.status_code} {_reason(response.status_code)}{detail}")


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """Whether two URLs share scheme, host and port (where a secret may follow)."""
    return _origin(a) == _origin(b)


def with_auth(
    auth: ApiAuth | None, secret: str | None, url: httpx.URL, headers: httpx.Headers
) -> tuple[httpx.URL, httpx.Headers]:
    """``url`` and ``headers`` with the secret added where ``auth`` puts it."""
    out = httpx.Headers(headers)
    if auth is None or secret is None:
        return url, out
    if auth.location == "header":
        out[auth.name] = auth.prefix + secret
        return url, out
    return url.copy_merge_params({auth.name: auth.prefix + secret}), out
