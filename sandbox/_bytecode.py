"""A process-wide cache of compiled QuickJS bytecode, keyed by module name and source.

A run whose modules are not cached first compiles them in a separate, throw-away instance in
which no program code runs (imports resolve to empty stubs, nothing is evaluated); the run
then loads every module from bytecode instead of parsing it. Because the compiling instance
only ever parses, and the key covers the build ID, the module name and the exact source, a
cached entry is what our own parser made of that text.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from collections import OrderedDict

__all__ = ["BytecodeCache", "batch_record", "module_key"]

_U32 = struct.Struct("<I")


def module_key(build_id: str, name: str, source: str) -> bytes:
    """The cache key of one module: build, name and source."""
    h = hashlib.sha256()
    for part in (build_id, name, source):
        data = part.encode("utf-8", "surrogatepass")
        h.update(_U32.pack(len(data)))
        h.update(data)
    return h.digest()


def batch_record(items: list[tuple[str, str]]) -> bytes:
    """The compile batch: u32 count, then (u32 len, name, u32 len, source) per module."""
    parts = [_U32.pack(len(items))]
    for name, source in items:
        n = name.encode("utf-8", "surrogatepass")
        s = source.encode("utf-8", "surrogatepass")
        parts += [_U32.pack(len(n)), n, _U32.pack(len(s)), s]
    return b"".join(parts)


class BytecodeCache:
    """A thread-safe LRU of bytecode blobs bounded in total bytes."""

    def __init__(self, max_bytes: int = 64 * 2**20) -> None:
        self._max = max_bytes
        self._size = 0
        self._items: OrderedDict[bytes, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes) -> bytes | None:
        with self._lock:
            blob = self._items.get(key)
            if blob is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return blob

    def put(self, key: bytes, blob: bytes) -> None:
        if len(blob) > self._max // 4:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old)
            self._items[key] = blob
            self._size += len(blob)
            while self._size > self._max and self._items:
                _, dropped = self._items.popitem(last=False)
                self._size -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = 0
