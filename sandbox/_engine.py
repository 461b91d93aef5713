"""The process-wide wasmtime engine, the compiled guest module and the worker threads.

One :class:`wasmtime.Engine` per process, one linker whose host imports are defined once (they
route to the run executing on the current thread), and a compiled module cached on disk keyed
by the guest's build ID, the wasmtime version and the engine configuration.

Termination uses epoch interruption without a ticker: every store's deadline is "the next
epoch", and the engine's epoch only advances when some run must stop. The per-store callback
then decides: the run that should stop traps, every other run continues.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import wasmtime
from wasmtime import _bindings as ffi

from quickjail.sandbox import _native, _router
from quickjail.sandbox._abi import SCRATCH_SIZE
from quickjail.sandbox._bytecode import BytecodeCache
from quickjail.sandbox._threads import Deadlines, Workers
from quickjail.sandbox.errors import GuestBuildError

__all__ = ["JS_STACK_LIMIT", "MAX_WORKERS", "EngineState", "get_engine", "release_store"]

_GUEST_DIR = Path(__file__).resolve().parent / "_guest"

# JS stack limit inside QuickJS and the native wasm stack, sized together (see WASM-NOTES):
# the parser, JSON and regex recurse on the native stack, so it must be ≥ 16× the JS limit.
JS_STACK_LIMIT = 1024 * 1024
MAX_WASM_STACK = 16 * 1024 * 1024
ASYNC_STACK = 20 * 1024 * 1024
MAX_LIVE_SANDBOXES = 1000
WARM_SLOTS = 8
MAX_MEMORY = 4 * 1024 * 1024 * 1024
# Worker threads per engine. A worker blocks for good only inside a guest slice (a sync host
# function, a sync report callback), and a slice holds one of at most MAX_LIVE_SANDBOXES live
# instances, so with more workers than that some worker is always free to run the next slice:
# a run's host function may start and wait for runs of its own without ever deadlocking.
MAX_WORKERS = MAX_LIVE_SANDBOXES + 64


@dataclass(frozen=True)
class GuestInfo:
    """Facts about the guest build (from build.json)."""

    build_id: str
    stack_size: int
    wasm_path: Path
    stack_top: int = 0  # the shadow stack is [0, stack_top); 0 when build.json does not say


def _load_guest_info() -> GuestInfo:
    wasm = _GUEST_DIR / "quickjail.wasm"
    info = _GUEST_DIR / "build.json"
    if not wasm.exists() or not info.exists():
        raise GuestBuildError(
            f"the guest module is missing ({wasm}); "
            "build it with `python -m quickjail.sandbox._build`"
        )
    meta = json.loads(info.read_text())
    return GuestInfo(meta["build_id"], int(meta["stack_size"]), wasm, int(meta.get("stack_top", 0)))


def _config(metered: bool) -> tuple[wasmtime.Config, str]:
    config = wasmtime.Config()
    config.epoch_interruption = True
    config.consume_fuel = metered
    config.cranelift_opt_level = "speed"
    ffi.wasmtime_config_async_stack_size_set(config.ptr(), ASYNC_STACK)
    config.max_wasm_stack = MAX_WASM_STACK
    # The pooling allocator reuses memory slots (fresh instances are cheap) and memories never
    # move (so a run can cache its memory's base address). Keeping pages resident between
    # instances was measured: it saved ~25 µs per run but held ~3 MiB per slot ever used.
    pool = ffi.wasmtime_pooling_allocation_config_new()
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
        f"pool=0,{MAX_LIVE_SANDBOXES},{MAX_MEMORY},{WARM_SLOTS};nomove"
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
        self.deadlines = Deadlines()
        self.workers = Workers(
            core=max(4, (os.cpu_count() or 2) * 4),
            cap=MAX_WORKERS,
            deadlines=self.deadlines,
        )
        self.bytecode = BytecodeCache()
        self.scratch_addr = self._probe()
        self.scratch_size = SCRATCH_SIZE
        # guest memory that holds nothing while the guest waits: the shadow stack (every call
        # has returned) and the scratch buffer (the guest copies out what it needs at once)
        self.idle_spans = ((0, self.guest.stack_top), (self.scratch_addr, SCRATCH_SIZE))
        self.js_stack_limit = JS_STACK_LIMIT

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
        host_type = wasmtime.FuncType([i32, i32, i32, i32, i32], [i64])
        _native.define_host_import(self.linker, "qj", "host", host_type, _router.host_import)
        wasi = "wasi_snapshot_preview1"
        for imp in self.module.imports:
            if imp.module == "qj":
                continue
            ty = imp.type
            assert isinstance(ty, wasmtime.FuncType)
            if imp.module != wasi:
                raise GuestBuildError(f"unexpected guest import {imp.module}.{imp.name}")
            fn = _router.clock_import if imp.name == "clock_time_get" else _router.badf_import
            _native.define_host_import(self.linker, wasi, imp.name or "", ty, fn)

    def new_instance(
        self, memory_limit: int, router: _router.HostRouter, fuel: int | None = None
    ) -> tuple[_native.NativeInstance, int]:
        """A fresh instance whose epoch callback consults ``router``; returns it and its key.

        The key must be released with :func:`release_store` when the instance is closed.
        """
        key = _router.register(router)
        try:
            inst = _native.NativeInstance(
                self.engine, self.pre, memory_limit, _router.EPOCH_CALLBACK, key, fuel=fuel
            )
        except BaseException:
            _router.stores.remove(key)
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


release_store = _router.stores.remove

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
