"""A process-wide cache of compiled QuickJS bytecode, keyed by module name and source.

A run whose modules are not cached first compiles them, each in a fresh throw-away instance of
its own in which no program code runs (imports resolve to empty stubs, nothing is evaluated);
the run then loads every module from bytecode instead of parsing it.

Why a process-wide cache can be trusted although the host cannot verify QuickJS bytecode: an
entry's bytes are a function of its key alone. The key covers the build ID, the module's name
and its exact source, and the instance that produced the bytes was given that name and that
source and nothing else: one module per instance, one reply accepted, for that module. A
compile instance subverted by its source (a parser bug) can only put bytes under that
source's own key, and every later run of that source parses the same text in its own
instance anyway, so the cache gives a hostile source nothing it does not already have. What it
must never do is let one program's compile write the entry of another source: a batch of
modules in one instance would (the entry program could answer for its imports, which other
callers' graphs share), so there are none. Compiles run under the run's own memory limit.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from quickjail.sandbox import _router
from quickjail.sandbox._abi import E_HOST, KIND_COMPILE, OP_BYTECODE, RUN_HEADER
from quickjail.sandbox._hostlib import MODE_ZERO, StoreData
from quickjail.sandbox._native import BadPointer, GuestStopped, NativeInstance

if TYPE_CHECKING:
    from quickjail.sandbox._engine import EngineState

__all__ = ["BytecodeCache", "compile_missing", "module_key"]

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

    def get(self, key: bytes) -> bytes | None:
        with self._lock:
            blob = self._items.get(key)
            if blob is None:
                return None
            self._items.move_to_end(key)
            return blob

    @property
    def max_blob_bytes(self) -> int:
        """The largest blob kept (a quarter of the cache)."""
        return self._max // 4

    def put(self, key: bytes, blob: bytes) -> None:
        if len(blob) > self.max_blob_bytes:
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


def compile_missing(
    engine: EngineState,
    entry: tuple[str, str] | None,
    modules: Mapping[str, str],
    *,
    memory_limit: int,
    soft_limit: int,
    should_stop: Callable[[], bool],
) -> tuple[bytes | None, int, set[bytes]]:
    """Compile the modules of a graph that are not cached yet, each in its own instance.

    ``memory_limit`` and ``soft_limit`` are the run's: a compile never gets more memory than
    the run it serves (a source too big for them is simply not cached, and the run parses it
    and meets the same limit itself).

    Returns the entry's bytecode if it is (now) cached, how many modules of the graph were
    found in the cache, and the keys compiled by this call. With no ``entry`` (a ``kind="auto"``
    entry is parsed in its run), only the other modules are compiled.
    """
    build = engine.guest.build_id
    cache = engine.bytecode
    entry_key = module_key(build, *entry) if entry is not None else None
    bytecode = cache.get(entry_key) if entry_key is not None else None
    hits = 0 if bytecode is None else 1
    missing: list[tuple[bytes, str, str]] = []
    if entry is not None and entry_key is not None and bytecode is None:
        missing.append((entry_key, *entry))
    for name, src in modules.items():
        key = module_key(build, name, src)
        if cache.get(key) is None:
            missing.append((key, name, src))
    for key, name, src in missing:
        if should_stop():
            break
        _Compiler(engine, key, name, src, memory_limit, soft_limit, should_stop).run()
    if entry_key is not None and bytecode is None and missing:
        bytecode = cache.get(entry_key)
    return bytecode, hits, {key for key, _, _ in missing}


class _Compiler:
    """Routes the host import of a compile-only instance: one module's bytecode comes back."""

    def __init__(
        self,
        engine: EngineState,
        key: bytes,
        name: str,
        source: str,
        memory_limit: int,
        soft_limit: int,
        should_stop: Callable[[], bool],
    ) -> None:
        self.engine = engine
        self.key = key
        self.memory_limit = memory_limit
        self.should_stop = should_stop
        self.done = False
        self.interruption: BaseException | None = None
        body = batch_record([(name, source)])
        stack = engine.js_stack_limit
        # a compile has no clock or entropy: the header words after globals_len stay 0
        words = (KIND_COMPILE, 0, 0, 0, soft_limit, stack, 0, len(body), 0, 0, 0)
        self.record = RUN_HEADER.pack(*words, *(0,) * (RUN_HEADER.size // 4 - len(words))) + body
        self.instance: NativeInstance
        # a compile has no clock (every read is 0); qj.host calls on_host while it runs
        self.store_data = StoreData(mode=MODE_ZERO)

    def on_host(self, op: int, a: int, b: int, c: int, d: int, view: memoryview | None) -> int:
        """Accept one blob, for the one module this instance compiles; refuse anything else."""
        if op != OP_BYTECODE or a != 0 or self.done:
            return E_HOST
        self.done = True  # whatever happens next, this instance has answered
        if not 0 < c <= self.engine.bytecode.max_blob_bytes or view is None:
            return E_HOST
        self.engine.bytecode.put(self.key, bytes(view))
        return 0

    def interrupted(self, exc: BaseException) -> None:
        """A signal handler raised while this compile ran on the main thread: stop, and raise
        ``exc`` from :meth:`run` (the run that asked for the compile then stops with it)."""
        self.interruption = exc

    def run(self) -> None:
        self.instance, key = self.engine.new_instance(self.memory_limit, self)
        try:
            ptr = self.instance.place(
                self.record, self.engine.scratch_addr, self.engine.scratch_size
            )
            if ptr is not None:
                self.instance.run(ptr, len(self.record))
        except (GuestStopped, BadPointer):
            if self.interruption is not None:
                raise self.interruption from None
            # else the run itself will report what went wrong
        finally:
            _router.stores.remove(key)
            self.instance.close()
