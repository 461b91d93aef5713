"""The process-wide wasmtime engine, the compiled guest module and the worker threads.

One :class:`wasmtime.Engine` per process, one linker whose host imports are defined once (they
route to the run executing on the current thread), and a compiled module cached on disk keyed
by the guest's build ID, the wasmtime version and the engine configuration.

Termination uses epoch interruption without a ticker: every store's deadline is "the next
epoch", and the engine's epoch only advances when some run must stop. The per-store callback
then decides: the run that should stop traps, every other run continues.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import wasmtime
from wasmtime import _bindings as ffi

from quickjail.sandbox import _native
from quickjail.sandbox._abi import SCRATCH_SIZE, WASI_EBADF
from quickjail.sandbox._bytecode import BytecodeCache
from quickjail.sandbox._errors import GuestBuildError

__all__ = ["EngineState", "HostRouter", "get_engine"]

_GUEST_DIR = Path(__file__).resolve().parent / "_guest"

# JS stack limit inside QuickJS and the native wasm stack, sized together (see WASM-NOTES):
# the parser, JSON and regex recurse on the native stack, so it must be ≥ 16× the JS limit.
JS_STACK_LIMIT = 1024 * 1024
MAX_WASM_STACK = 16 * 1024 * 1024
ASYNC_STACK = 20 * 1024 * 1024
WORKER_STACK = 32 * 1024 * 1024
KEEP_RESIDENT = 0
MAX_LIVE_SANDBOXES = 1000
WARM_SLOTS = 8
MAX_MEMORY = 4 * 1024 * 1024 * 1024


class HostRouter(Protocol):
    """What the engine needs from the run executing on a worker thread."""

    def on_host(self, op: int, a: int, b: int, c: int, d: int) -> int: ...

    def clock_ns(self, clock_id: int) -> int: ...

    def write_u64(self, ptr: int, value: int) -> bool: ...

    def should_stop(self) -> bool: ...


_current = threading.local()


def set_current(run: HostRouter | None) -> None:
    """Bind the run that owns the guest executing on this thread."""
    _current.run = run


def _host(args: Any, _n: int) -> None:
    run: HostRouter | None = getattr(_current, "run", None)
    if run is None:
        args[0].i64 = -1
        return
    args[0].i64 = run.on_host(args[0].i32, args[1].i32, args[2].i32, args[3].i32, args[4].i32)


# ---------------------------------------------------------------- epoch callback

_stores: dict[int, HostRouter] = {}
_stores_lock = threading.Lock()
_next_store_key = 1

_EPOCH_CB_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_size_t,
    ctypes.POINTER(ffi.wasmtime_context_t),
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t),
)
_FINALIZER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _epoch_cb(_ctx: Any, data: int | None, delta: Any, kind: Any) -> int:
    run = _stores.get(data or 0)
    if run is None or run.should_stop():
        err = ffi.wasmtime_error_new(b"quickjail: run stopped")
        return ctypes.cast(err, ctypes.c_void_p).value or 0
    delta[0] = 1
    kind[0] = 0  # continue
    return 0


_EPOCH_CB = _EPOCH_CB_TYPE(_epoch_cb)
_NO_FINALIZER = _FINALIZER_TYPE()  # a NULL function pointer


def unregister_store(key: int) -> None:
    with _stores_lock:
        _stores.pop(key, None)


# ---------------------------------------------------------------- worker threads


class _Workers:
    """Threads with a native stack large enough for the wasm stack; they run guest slices."""

    def __init__(self, max_workers: int) -> None:
        self._max = max_workers
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0

    def submit(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max:
                self._spawn()
            else:
                self._idle -= 1
        self._queue.put(fn)

    def _spawn(self) -> None:
        old = threading.stack_size()
        threading.stack_size(WORKER_STACK)
        try:
            t = threading.Thread(target=self._loop, name="quickjail-worker", daemon=True)
            t.start()
        finally:
            threading.stack_size(old)
        self._threads.append(t)

    def _loop(self) -> None:
        while True:
            fn = self._queue.get()
            if fn is None:
                return
            try:
                fn()
            finally:
                with self._lock:
                    self._idle += 1


# ---------------------------------------------------------------- deadlines


class _Deadlines:
    """One thread that calls back when run deadlines pass."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: dict[int, tuple[float, Callable[[], None]]] = {}
        self._next = 1
        self._thread: threading.Thread | None = None

    def add(self, when: float, fn: Callable[[], None]) -> int:
        with self._cond:
            key = self._next
            self._next += 1
            self._items[key] = (when, fn)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="quickjail-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()
            return key

    def cancel(self, key: int) -> None:
        with self._cond:
            self._items.pop(key, None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [k for k, (w, _) in self._items.items() if w <= now]
                fns = [self._items.pop(k)[1] for k in due]
                if not fns:
                    wait = min((w for w, _ in self._items.values()), default=now + 3600) - now
                    self._cond.wait(timeout=max(0.0005, wait))
                    continue
            for fn in fns:
                try:
                    fn()
                except Exception:  # one failing callback must not stop every other deadline
                    continue


# ---------------------------------------------------------------- the engine


@dataclass(frozen=True)
class GuestInfo:
    """Facts about the guest build (from build.json)."""

    build_id: str
    stack_size: int
    wasm_path: Path


def _load_guest_info() -> GuestInfo:
    wasm = _GUEST_DIR / "quickjail.wasm"
    info = _GUEST_DIR / "build.json"
    if not wasm.exists() or not info.exists():
        raise GuestBuildError(
            f"the guest module is missing ({wasm}); "
            "build it with `python -m quickjail.sandbox._build`"
        )
    meta = json.loads(info.read_text())
    return GuestInfo(meta["build_id"], int(meta["stack_size"]), wasm)


def _config(metered: bool) -> tuple[wasmtime.Config, str]:
    config = wasmtime.Config()
    config.epoch_interruption = True
    config.consume_fuel = metered
    config.cranelift_opt_level = "speed"
    ffi.wasmtime_config_async_stack_size_set(config.ptr(), ASYNC_STACK)
    config.max_wasm_stack = MAX_WASM_STACK
    # The pooling allocator keeps the first pages of each memory slot resident between
    # instances, so a fresh sandbox does not page-fault its way through the snapshot, and
    # memories never move (so a run can cache its memory's base address).
    pool = ffi.wasmtime_pooling_allocation_config_new()
    ffi.wasmtime_pooling_allocation_config_linear_memory_keep_resident_set(pool, KEEP_RESIDENT)
    # idle slots keep their resident pages: cap how many stay warm so RSS stays bounded
    ffi.wasmtime_pooling_allocation_config_max_unused_warm_slots_set(pool, WARM_SLOTS)
    ffi.wasmtime_pooling_allocation_config_total_memories_set(pool, MAX_LIVE_SANDBOXES)
    ffi.wasmtime_pooling_allocation_config_total_core_instances_set(pool, MAX_LIVE_SANDBOXES)
    ffi.wasmtime_pooling_allocation_config_total_tables_set(pool, MAX_LIVE_SANDBOXES)
    ffi.wasmtime_pooling_allocation_config_max_memory_size_set(pool, MAX_MEMORY)
    ffi.wasmtime_pooling_allocation_strategy_set(config.ptr(), pool)
    config.memory_may_move = False
    description = (
        f"epoch;fuel={metered};speed;stack={MAX_WASM_STACK};async={ASYNC_STACK};"
        f"pool={KEEP_RESIDENT},{MAX_LIVE_SANDBOXES},{MAX_MEMORY},{WARM_SLOTS};nomove"
    )
    return config, description


def cache_dir() -> Path:
    """Where compiled modules are kept: ``$QUICKJAIL_CACHE_DIR`` or the user cache dir."""
    env = os.environ.get("QUICKJAIL_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "quickjail"


class EngineState:
    """The engine, the compiled module, the linker and the instance factory."""

    def __init__(self, cache: Path | None = None, *, metered: bool = False) -> None:
        self.guest = _load_guest_info()
        self.metered = metered
        config, description = _config(metered)
        self.engine = wasmtime.Engine(config)
        self.module = self._load_module(cache or cache_dir(), description)
        self.linker = wasmtime.Linker(self.engine)
        self._define_imports()
        self.pre = self.linker.instantiate_pre(self.module)
        self.workers = _Workers(max_workers=max(4, (os.cpu_count() or 2) * 4))
        self.deadlines = _Deadlines()
        self.bytecode = BytecodeCache()
        self.scratch_addr = self._probe()
        self.scratch_size = SCRATCH_SIZE

    def _load_module(self, cache: Path, description: str) -> wasmtime.Module:
        key = hashlib.sha256(
            f"{self.guest.build_id};{_wasmtime_version()};{description}".encode()
        ).hexdigest()[:32]
        path = cache / f"guest-{key}.cwasm"
        if path.exists():
            try:
                return wasmtime.Module.deserialize_file(self.engine, str(path))
            except wasmtime.WasmtimeError:
                path.unlink(missing_ok=True)
        try:
            module = wasmtime.Module.from_file(self.engine, str(self.guest.wasm_path))
        except wasmtime.WasmtimeError as exc:
            raise GuestBuildError(f"the guest module does not compile: {exc}") from exc
        try:
            cache.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(module.serialize())
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs the next process a compile
        return module

    def _define_imports(self) -> None:
        i32, i64 = wasmtime.ValType.i32(), wasmtime.ValType.i64()
        _native.define_host_import(
            self.linker, "qj", "host", wasmtime.FuncType([i32, i32, i32, i32, i32], [i64]), _host
        )

        def clock_time_get(args: Any, _n: int) -> None:
            run: HostRouter | None = getattr(_current, "run", None)
            if run is None:
                args[0].i32 = WASI_EBADF
                return
            clock_id, out = args[0].i32, args[2].i32 & 0xFFFFFFFF
            ok = run.write_u64(out, run.clock_ns(clock_id))  # into that guest's own memory
            args[0].i32 = 0 if ok else WASI_EBADF

        def badf(args: Any, _n: int) -> None:
            args[0].i32 = WASI_EBADF

        wasi = "wasi_snapshot_preview1"
        for imp in self.module.imports:
            if imp.module == "qj":
                continue
            ty = imp.type
            assert isinstance(ty, wasmtime.FuncType)
            if imp.module != wasi:
                raise GuestBuildError(f"unexpected guest import {imp.module}.{imp.name}")
            fn = clock_time_get if imp.name == "clock_time_get" else badf
            _native.define_host_import(self.linker, wasi, imp.name or "", ty, fn)

    def new_instance(
        self, memory_limit: int, run: HostRouter, fuel: int | None = None
    ) -> tuple[_native.NativeInstance, int]:
        """A fresh instance whose epoch callback consults ``run``; returns it and its key."""
        global _next_store_key
        with _stores_lock:
            key = _next_store_key
            _next_store_key += 1
            _stores[key] = run
        try:
            inst = _native.NativeInstance(
                self.engine, self.pre, memory_limit, _EPOCH_CB, key, fuel=fuel
            )
        except BaseException:
            unregister_store(key)
            raise
        return inst, key

    def _probe(self) -> int:
        """The scratch buffer's address (the same in every instance: they share the image)."""
        store = wasmtime.Store(self.engine)
        store.set_epoch_deadline(1 << 40)
        if self.metered:
            store.set_fuel(1 << 40)
        inst = self.pre.instantiate(store)
        exports = inst.exports(store)
        scratch = exports["qj_scratch"]
        memory = exports["memory"]
        assert isinstance(scratch, wasmtime.Func) and isinstance(memory, wasmtime.Memory)
        addr = scratch(store)
        assert isinstance(addr, int)
        del inst, exports, scratch, memory, store
        return addr


def _wasmtime_version() -> str:
    """Identify the wasmtime build cheaply (importlib.metadata costs tens of milliseconds):
    the native library's size and modification time change with every install. A stale key
    only costs a recompile: deserializing an incompatible artifact fails and is retried."""
    lib_dir = Path(wasmtime.__file__).resolve().parent
    for lib in sorted(lib_dir.glob("*/*wasmtime*")):
        st = lib.stat()
        return f"{lib.name}:{st.st_size}:{st.st_mtime_ns}"
    return "unknown"


_engines: dict[bool, EngineState] = {}
_engine_lock = threading.Lock()


def get_engine(cache: Path | None = None, *, metered: bool = False) -> EngineState:
    """The process's engine (or its fuel-metered twin), created on first use."""
    eng = _engines.get(metered)
    if eng is None:
        with _engine_lock:
            eng = _engines.get(metered)
            if eng is None:
                eng = _engines[metered] = EngineState(cache, metered=metered)
    return eng
