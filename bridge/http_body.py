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

__all__ = ["ACCEPT_ENCODING", "RawResponse", "read_capped"]

ACCEPT_ENCODING: Final = "gzip, deflate"
"""What to send as ``Accept-Encoding``: the encodings :func:`read_capped` inflates."""

_INFLATED: Final = ("gzip", "x-gzip", "deflate")
_ABANDON_SECONDS: Final = 5.0  # a bound only: a closed stream ends at once


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

    Read raw, and a ``gzip`` or ``deflate`` body inflated here at most ``cap + 1`` bytes at a
    time, so a compression bomb costs no more memory than the cap (httpx's own decoder would
    inflate a whole chunk at once); any other ``Content-Encoding`` is refused.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "", *_INFLATED):
        raise fail(f"the response's Content-Encoding {encoding[:40]!r} is not supported")
    inflate = None if encoding in ("identity", "") else zlib.decompressobj(zlib.MAX_WBITS | 32)
    declared = response.headers.get("content-length", "")
    if inflate is None and declared.isdigit() and int(declared) > cap:
        raise fail(f"the response is {int(declared):,} bytes, over the limit of {cap:,} bytes")
    chunks: list[bytes] = []
    size = 0
    # an async generator (typed as an iterator) over httpx's own generators
    raw_chunks = cast("AsyncGenerator[bytes, None]", response.aiter_raw())
    try:
        async for raw in raw_chunks:
            try:
                chunk = raw if inflate is None else inflate.decompress(raw, cap - size + 1)
            except zlib.error:
                raise fail(f"the response's {encoding} body is corrupt") from None
            size += len(chunk)
            if size > cap:
                raise fail(f"the response is over the limit of {cap:,} bytes")
            chunks.append(chunk)
    except BaseException:
        await _abandon(response, raw_chunks)
        raise
    return b"".join(chunks)


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
