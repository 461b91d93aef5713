"""A paused run as a value: what it holds, how it is sealed into bytes, and how bytes are loaded.

A parked guest is its linear memory plus host-side state: the only mutable wasm global, the
stack pointer, is back at its initial value whenever the guest has returned to the host, and
the shadow stack and the scratch buffer hold nothing then (``EngineState.idle_spans``). So a
:class:`Continuation` keeps the 4 KiB pages of memory that differ from a fresh instance's (the
module's initial image, read once per process), the memory's size, and the run's host state
(:class:`~quickjail.sandbox._run.Run` says what that is) as a value message.

Sealed layout (format version 1, little-endian)::

    header (HEADER, 112 bytes)
        magic "QJCONT\\r\\n" | u16 version | u16 flags (0) | u64 total bytes (all of it)
        | u64 sealed at (ms since the epoch) | 32 bytes guest build ID (sha256)
        | 8 bytes key check | 16 bytes context tag | u64 memory size | u32 page size
        | u32 page count | u64 compressed pages size | u32 state size
    state   value message (the sandbox's own codec) of the host-side state
    pages   zlib of: page count × u32 page index, then the pages, in index order
    mac     HMAC-SHA256(key, DOMAIN | u64 len(context) | context | everything above)

The key check (``HMAC(key, "key check")``) and the context tag (``HMAC(key, context)``) only
let a refusal say *which* input was wrong; the MAC alone decides. Loading checks, in order:
the sizes against caps (before anything is hashed or inflated), the MAC, the format version,
the guest build, ``max_age``; then inflates the pages with a bounded decompressor and decodes
the state under a decode budget. What the memory holds is never trusted: the resumed guest
is as hostile as any compromised guest, and every host-side control still holds.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import os
import struct
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from quickjail.sandbox import _values
from quickjail.sandbox.errors import ContinuationError, TransferError

__all__ = [
    "FORMAT_VERSION",
    "MAX_STATE_BYTES",
    "PAGE_SIZE",
    "Continuation",
    "diff_pages",
    "load",
    "max_sealed_size",
]

FORMAT_VERSION: Final = 1
PAGE_SIZE: Final = 4096
WASM_PAGE: Final = 65536
MAX_STATE_BYTES: Final = 16 * 2**20
"""The largest state message a continuation may hold (sources, paused calls, counters)."""
MIN_KEY_BYTES: Final = 32
_MAGIC: Final = b"QJCONT\r\n"
HEADER: Final = struct.Struct("<8sHHQQ32s8s16sQIIQI")
_MAC_BYTES: Final = 32
_DOMAIN: Final = b"quickjail continuation\0"
_ZERO_PAGE: Final = bytes(PAGE_SIZE)
_INDEX: Final = struct.Struct("<I")
_CLOCK_SKEW_MS: Final = 5 * 60 * 1000  # a seal time this far ahead of our clock still loads


def max_sealed_size(memory_limit_bytes: int) -> int:
    """The largest sealed continuation a run with this memory limit loads: its memory (the
    compressed pages never need more than the pages themselves, plus zlib's few bytes per
    block), the state cap, the header and the MAC."""
    return memory_limit_bytes + memory_limit_bytes // 64 + MAX_STATE_BYTES + HEADER.size + 4096


class Continuation:
    """A paused run, ready to be sealed into bytes (and what :func:`load` gives back).

    Attributes:
        build_id: the guest build that ran it (hex sha256).
        memory_size: bytes of linear memory (a multiple of 64 KiB).
        pages: ``(index, 4 KiB of memory)`` for every page that differs from the initial image.
        state: the run's host-side state (plain values, see ``Run.durable_state``).
    """

    __slots__ = ("build_id", "memory_size", "pages", "state")

    def __init__(
        self,
        build_id: str,
        memory_size: int,
        pages: list[tuple[int, bytes]],
        state: dict[str, Any],
    ) -> None:
        self.build_id = build_id
        self.memory_size = memory_size
        self.pages = pages
        self.state = state

    def __repr__(self) -> str:
        return (
            f"Continuation(build={self.build_id[:12]}, memory={self.memory_size}, "
            f"pages={len(self.pages)})"
        )

    def seal(self, key: bytes, context: bytes = b"") -> bytes:
        """The continuation as signed bytes, to store anywhere and resume in any process.

        Args:
            key: the HMAC-SHA256 key, at least 32 bytes; whoever holds it can make a guest
                resume with state of their choosing (no worse than a compromised guest).
            context: bytes binding the continuation to one tenant, user or approval: loading
                with another context is refused.

        Raises:
            ValueError: the key is shorter than 32 bytes.
            TypeError: key or context is not bytes, or the state cannot be encoded.
        """
        key, context = _check_key(key, context)
        state = _values.encode(self.state, path="continuation state")
        if len(state) > MAX_STATE_BYTES:
            raise ValueError(f"the run's state is larger than {MAX_STATE_BYTES} bytes")
        raw = b"".join(
            [b"".join(_INDEX.pack(i) for i, _ in self.pages), *(p for _, p in self.pages)]
        )
        pages = zlib.compress(raw, 1)  # level 6 took ~8x the time for ~8 % fewer bytes
        total = HEADER.size + len(state) + len(pages) + _MAC_BYTES
        header = HEADER.pack(
            _MAGIC,
            FORMAT_VERSION,
            0,
            total,
            int(time.time() * 1000),
            bytes.fromhex(self.build_id),
            _key_check(key),
            _context_tag(key, context),
            self.memory_size,
            PAGE_SIZE,
            len(self.pages),
            len(pages),
            len(state),
        )
        body = header + state + pages
        return body + _mac(key, context, body)


def load(
    sealed: bytes,
    *,
    key: bytes,
    context: bytes,
    build_id: str,
    memory_limit_bytes: int,
    max_age: float | None,
) -> Continuation:
    """Check and open sealed bytes; every refusal is a :class:`ContinuationError`.

    Args:
        sealed: what :meth:`Continuation.seal` gave.
        key: the key it was sealed with.
        context: the context it was sealed with.
        build_id: this process's guest build ID.
        memory_limit_bytes: the resumed run's memory limit: the memory, its pages and their
            compressed form must fit in it.
        max_age: refuse a continuation sealed longer ago than this many seconds.

    Raises:
        ContinuationError: too large, truncated, wrong key or tampered, other context, other
            format version, other guest build, too old, or inconsistent inside.
        ValueError, TypeError: the key is too short or not bytes.
    """
    key, context = _check_key(key, context)
    if not isinstance(sealed, bytes | bytearray | memoryview):
        raise TypeError("a sealed continuation is bytes")
    sealed = bytes(sealed)
    cap = max_sealed_size(memory_limit_bytes)
    if len(sealed) > cap:
        raise _refuse("too_large", f"it is {len(sealed)} bytes, over the cap of {cap}")
    if len(sealed) < HEADER.size + _MAC_BYTES:
        raise _refuse("truncated", f"it is only {len(sealed)} bytes")
    (
        magic,
        version,
        _flags,
        total,
        sealed_at,
        build,
        key_check,
        context_tag,
        memory_size,
        page_size,
        page_count,
        pages_size,
        state_size,
    ) = HEADER.unpack_from(sealed)
    if magic != _MAGIC:
        raise _refuse("tampered", "it is not a quickjail continuation")
    if total > cap or memory_size > memory_limit_bytes:
        raise _refuse(
            "too_large",
            f"it declares {total} bytes and {memory_size} bytes of memory; the cap is {cap} "
            f"bytes and the memory limit {memory_limit_bytes}",
        )
    if page_count > memory_limit_bytes // PAGE_SIZE:
        raise _refuse("too_large", f"it declares {page_count} pages, over the memory limit")
    if pages_size > cap or state_size > MAX_STATE_BYTES:
        raise _refuse("too_large", "its declared parts are larger than the caps")
    if len(sealed) < total:
        raise _refuse("truncated", f"it is {len(sealed)} of the {total} bytes it declares")
    body, tag = sealed[:-_MAC_BYTES], sealed[-_MAC_BYTES:]
    if not hmac.compare_digest(tag, _mac(key, context, body)):
        if not hmac.compare_digest(key_check, _key_check(key)):
            raise _refuse("wrong_key", "the MAC does not match: another key, or tampered")
        if not hmac.compare_digest(context_tag, _context_tag(key, context)):
            raise _refuse("context", "it was sealed for another context")
        raise _refuse("tampered", "the MAC does not match: the bytes were changed")
    if version != FORMAT_VERSION:
        raise _refuse("version", f"format version {version}; this quickjail reads {FORMAT_VERSION}")
    if build.hex() != build_id:
        raise _refuse(
            "build", f"another guest build made it ({build.hex()[:16]}, this is {build_id[:16]})"
        )
    if max_age is not None:
        age_ms = time.time() * 1000 - sealed_at
        if age_ms > max_age * 1000 or age_ms < -_CLOCK_SKEW_MS:
            raise _refuse("expired", f"it was sealed {age_ms / 1000:.0f} s ago (max_age {max_age})")
    # authenticated from here on: the rest is consistency, checked all the same
    if (
        total != len(sealed)
        or HEADER.size + state_size + pages_size + _MAC_BYTES != total
        or page_size != PAGE_SIZE
        or memory_size % WASM_PAGE
    ):
        raise _refuse("tampered", "its parts do not add up")
    state_bytes = sealed[HEADER.size : HEADER.size + state_size]
    packed = sealed[HEADER.size + state_size : HEADER.size + state_size + pages_size]
    pages = _inflate(packed, page_count, memory_size)
    try:
        state = _values.decode(state_bytes, budget=_values.DecodeBudget.for_run(memory_limit_bytes))
    except TransferError as exc:
        raise _refuse("tampered", f"its state does not decode ({exc})") from None
    if not isinstance(state, dict):
        raise _refuse("tampered", "its state is not a record")
    return Continuation(build_id, memory_size, pages, state)


def _inflate(packed: bytes, page_count: int, memory_size: int) -> list[tuple[int, bytes]]:
    """The pages, inflated to at most the size they declare (never more, whatever the
    compressed bytes say), their indices strictly increasing and inside memory."""
    want = page_count * (_INDEX.size + PAGE_SIZE)
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, want + 1)
    except zlib.error:
        raise _refuse("tampered", "its pages do not inflate") from None
    if len(raw) != want or not inflater.eof or inflater.unconsumed_tail:
        raise _refuse("tampered", "its pages are not the size they declare")
    limit = memory_size // PAGE_SIZE
    indices = [i for (i,) in _INDEX.iter_unpack(raw[: page_count * _INDEX.size])]
    if any(b <= a for a, b in itertools.pairwise(indices)) or (indices and indices[-1] >= limit):
        raise _refuse("tampered", "its page indices are out of order or outside memory")
    base = page_count * _INDEX.size
    view = memoryview(raw)
    return [
        (index, bytes(view[base + n * PAGE_SIZE : base + (n + 1) * PAGE_SIZE]))
        for n, index in enumerate(indices)
    ]


def diff_pages(
    memory: bytes, image: bytes, skip: Iterable[tuple[int, int]]
) -> list[tuple[int, bytes]]:
    """The 4 KiB pages of ``memory`` that differ from ``image`` (zeros past its end), except
    the pages wholly inside a ``skip`` span ``(ptr, length)`` (memory that holds nothing
    while the guest waits)."""
    skipped: set[int] = set()
    for ptr, length in skip:
        first = -(-ptr // PAGE_SIZE)
        skipped.update(range(first, (ptr + length) // PAGE_SIZE))
    out: list[tuple[int, bytes]] = []
    within = len(image) // PAGE_SIZE
    # bytes slices compare with memcmp (a memoryview compares item by item)
    for index in range(len(memory) // PAGE_SIZE):
        if index in skipped:
            continue
        at = index * PAGE_SIZE
        page = memory[at : at + PAGE_SIZE]
        if page != (image[at : at + PAGE_SIZE] if index < within else _ZERO_PAGE):
            out.append((index, page))
    return out


_images: dict[str, bytes] = {}
_images_lock = threading.Lock()


def _new_images_lock() -> None:
    """After ``fork``, in the child: a lock another thread held at the fork stays held."""
    global _images_lock
    _images_lock = threading.Lock()


os.register_at_fork(after_in_child=_new_images_lock)


def initial_image(build_id: str, read: Any) -> bytes:
    """The memory of a fresh instance of build ``build_id``, read once per process by
    ``read()`` (the module's data segments: what every restore starts from)."""
    image = _images.get(build_id)
    if image is None:
        with _images_lock:
            image = _images.get(build_id)
            if image is None:
                image = _images[build_id] = read()
    return image


def _check_key(key: Any, context: Any) -> tuple[bytes, bytes]:
    if not isinstance(key, bytes | bytearray) or not isinstance(context, bytes | bytearray):
        raise TypeError("key and context must be bytes")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"the key must be at least {MIN_KEY_BYTES} bytes (it is {len(key)})")
    return bytes(key), bytes(context)


def _mac(key: bytes, context: bytes, body: bytes) -> bytes:
    mac = hmac.new(key, _DOMAIN, hashlib.sha256)
    mac.update(len(context).to_bytes(8, "little"))
    mac.update(context)
    mac.update(body)
    return mac.digest()


def _key_check(key: bytes) -> bytes:
    return hmac.new(key, b"quickjail continuation key check", hashlib.sha256).digest()[:8]


def _context_tag(key: bytes, context: bytes) -> bytes:
    return hmac.new(key, b"quickjail continuation context\0" + context, hashlib.sha256).digest()[
        :16
    ]


_MESSAGES: Final[Mapping[str, str]] = {
    "too_large": "too large",
    "truncated": "truncated",
    "tampered": "tampered",
    "wrong_key": "wrong key or tampered",
    "context": "made for another context",
    "version": "another format version",
    "build": "made by another guest build",
    "expired": "older than max_age",
}


def _refuse(reason: str, detail: str) -> ContinuationError:
    return ContinuationError(
        f"cannot resume this continuation: {_MESSAGES[reason]} ({detail})", reason=reason
    )
