"""A response body read within a byte cap, compressed bodies inflated within it too.

Shared by the bridge's :class:`~quickjail.bridge.Fetch` and the runtime's OpenAPI connector:
both make requests with httpx on the host for a program that must not make the host hold
more than a cap. httpx is not imported here (it is an optional dependency); the response is
anything with httpx's ``headers`` and ``aiter_raw()``.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Final, Protocol, cast

import anyio

__all__ = ["ACCEPT_ENCODING", "CHUNK", "CappedBody", "RawResponse", "read_capped"]

ACCEPT_ENCODING: Final = "gzip, deflate"
"""What to send as ``Accept-Encoding``: the encodings :func:`read_capped` inflates."""

_INFLATED: Final = ("gzip", "x-gzip", "deflate")
_ABANDON_SECONDS: Final = 5.0  # a bound only: a closed stream ends at once
CHUNK: Final = 64 * 1024
"""The most bytes :meth:`CappedBody.read` gives at once."""


class RawResponse(Protocol):
    """The part of an ``httpx.Response`` read here."""

    @property
    def headers(self) -> _Headers: ...

    def aiter_raw(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class _Headers(Protocol):
    def get(self, key: str, default: str = ...) -> str: ...


async def read_capped(response: RawResponse, cap: int, fail: Callable[[str], Exception]) -> bytes:
    """The body of ``response``, refusing one over ``cap`` bytes with ``fail(message)``.

    Read raw, and a ``gzip`` or ``deflate`` body inflated here a bounded piece at a time, so a
    compression bomb costs no more memory than the cap (httpx's own decoder would inflate a
    whole chunk at once); any other ``Content-Encoding`` is refused.
    """
    body = CappedBody(response, cap, fail)
    chunks: list[bytes] = []
    try:
        done = False
        while not done:
            chunk, done = await body.read()
            chunks.append(chunk)
    except BaseException:
        await body.aclose()
        raise
    return b"".join(chunks)


class CappedBody:
    """The body of ``response`` read a chunk at a time, as its reader asks for it: nothing is
    read from the network until :meth:`read` is called, and each call gives at most ``chunk``
    bytes (inflated, for a ``gzip`` or ``deflate`` body), so a slow reader holds the server
    back rather than the host buffering for it.

    Raises ``fail(message)`` (from the constructor or :meth:`read`) for an encoding other than
    those of :data:`ACCEPT_ENCODING`, a corrupt compressed body, or more than ``cap`` bytes.
    """

    def __init__(
        self,
        response: RawResponse,
        cap: int,
        fail: Callable[[str], Exception],
        chunk: int = CHUNK,
    ) -> None:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", "", *_INFLATED):
            raise fail(f"the response's Content-Encoding {encoding[:40]!r} is not supported")
        self._encoding = encoding
        self._inflate = (
            None if encoding in ("identity", "") else zlib.decompressobj(zlib.MAX_WBITS | 32)
        )
        declared = response.headers.get("content-length", "")
        self._declared = int(declared) if declared.isdigit() else None
        if self._inflate is None and self._declared is not None and self._declared > cap:
            raise fail(f"the response is {self._declared:,} bytes, over the limit of {cap:,} bytes")
        self._response = response
        self._cap = cap
        self._fail = fail
        self._chunk = max(chunk, 1)
        # an async generator (typed as an iterator) over httpx's own generators
        self._raw = cast("AsyncGenerator[bytes, None]", response.aiter_raw())
        self._pending = b""  # raw bytes not yet given out (or inflated)
        self._more = False  # the inflater filled its last output: it may hold more
        self._eof = False  # the raw stream ended
        self._raw_seen = 0
        self._size = 0  # bytes given out
        self._closed = False

    @property
    def size(self) -> int:
        """The bytes given out so far (inflated)."""
        return self._size

    async def read(self) -> tuple[bytes, bool]:
        """The next piece of the body (not empty unless the body ended) and whether the body
        ended with it. Reads the network only when nothing is left over from the last read."""
        while True:
            if self._pending or self._more:
                out = self._take()
                if out:
                    self._size += len(out)
                    if self._size > self._cap:
                        raise self._fail(f"the response is over the limit of {self._cap:,} bytes")
                    return out, self._ended()
            if self._ended() or self._closed:
                return b"", True
            raw = await anext(self._raw, None)
            if raw is None:
                self._eof = True
            else:
                self._raw_seen += len(raw)
                self._pending = raw

    def _take(self) -> bytes:
        limit = min(self._chunk, self._cap - self._size + 1)
        if self._inflate is None:
            out, self._pending = self._pending[:limit], self._pending[limit:]
            return out
        try:
            out = self._inflate.decompress(self._pending, limit)
        except zlib.error:
            raise self._fail(f"the response's {self._encoding} body is corrupt") from None
        self._pending = self._inflate.unconsumed_tail
        self._more = len(out) == limit
        return out

    def _ended(self) -> bool:
        if self._pending or self._more:
            return False
        if self._inflate is not None and self._inflate.eof:
            return True  # the compressed stream ended (what follows it is not the body's)
        if self._inflate is None and self._declared is not None:
            return self._raw_seen >= self._declared or self._eof
        return self._eof

    async def aclose(self) -> None:
        """Stop reading and close the response (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._pending, self._more = b"", False
        await _abandon(self._response, self._raw)


async def _abandon(response: RawResponse, raw_chunks: AsyncGenerator[bytes, None]) -> None:
    """Stop reading: close the response, then run the chunks' generator to its end (reading
    a closed stream ends at once), so that httpx's inner generators finish here rather than
    in the garbage collector (where trio warns about each)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(_ABANDON_SECONDS):
        await response.aclose()
        with contextlib.suppress(Exception):
            async for _ in raw_chunks:
                pass
        await raw_chunks.aclose()
