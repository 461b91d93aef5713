"""The process-wide wasmtime engine, the compiled guest module and the worker threads.

One wasmtime engine per process, one linker whose host imports are defined once (``qj.host``
routes to the run executing on the current thread; the clock is the host library's C function,
which reads its run's clock from the store's data), and a compiled module cached on disk keyed
by the guest's build ID, the wasmtime version and the engine configuration. Everything goes through
wasmtime's C API (:mod:`._capi`), so a process never imports wasmtime-py's bindings to run.

Termination uses epoch interruption without a ticker: every store's deadline is "the next
epoch", and the engine's epoch only advances when some run must stop. The per-store callback
then decides: the run that should stop traps, every other run continues.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import mmap
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from quickjail.sandbox import _capi, _hostlib, _native, _router, _signals, _stacks
from quickjail.sandbox._abi import SCRATCH_SIZE
from quickjail.sandbox._bytecode import BytecodeCache
from quickjail.sandbox._capi import lib
from quickjail.sandbox._prefault import HotPages
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


_OPT_LEVEL_SPEED = 1
_WASM_I32, _WASM_I64 = 0, 1


def _config(metered: bool) -> tuple[int, str]:
    """A new ``wasm_config_t`` (owned by the caller) and the text that describes it."""
    config = lib.wasm_config_new()
    lib.wasmtime_config_epoch_interruption_set(config, True)
    lib.wasmtime_config_consume_fuel_set(config, metered)
    lib.wasmtime_config_cranelift_opt_level_set(config, _OPT_LEVEL_SPEED)
    lib.wasmtime_config_async_stack_size_set(config, ASYNC_STACK)
    lib.wasmtime_config_max_wasm_stack_set(config, MAX_WASM_STACK)
    # The pooling allocator reuses memory slots (fresh instances are cheap) and memories never
    # move (so a run can cache its memory's base address). Keeping pages resident between
    # instances was measured: it saved ~25 µs per run but held ~3 MiB per slot ever used.
    pool = lib.wasmtime_pooling_allocation_config_new()
    # idle slots keep their resident pages: cap how many stay warm so RSS stays bounded
    lib.wasmtime_pooling_allocation_config_max_unused_warm_slots_set(pool, WARM_SLOTS)
    lib.wasmtime_pooling_allocation_config_total_memories_set(pool, MAX_LIVE_SANDBOXES)
    lib.wasmtime_pooling_allocation_config_total_core_instances_set(pool, MAX_LIVE_SANDBOXES)
    lib.wasmtime_pooling_allocation_config_total_tables_set(pool, MAX_LIVE_SANDBOXES)
    # Guests never run on async fibers (the engine has no async support), so the pool keeps no
    # fiber stacks: its default of 1000 reserved 1000 × 20 MiB and made 1000 guard pages, 3–7 ms
    # of every process's first run.
    lib.wasmtime_pooling_allocation_config_total_stacks_set(pool, 0)
    lib.wasmtime_pooling_allocation_config_max_memory_size_set(pool, MAX_MEMORY)
    lib.wasmtime_pooling_allocation_strategy_set(config, pool)
    lib.wasmtime_config_memory_may_move_set(config, False)
    description = (
        f"epoch;fuel={metered};speed;stack={MAX_WASM_STACK};async={ASYNC_STACK};"
        f"pool=0,{MAX_LIVE_SANDBOXES},{MAX_MEMORY},{WARM_SLOTS},stacks=0;nomove"
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
    """The engine, the compiled module, the linker and the instance factory.

    ``engine``, ``module``, ``linker`` and ``pre`` are addresses of wasmtime C API objects that
    live as long as the process (there are at most two engines, made once each).
    """

    def __init__(self, cache: Path | None = None, *, metered: bool = False) -> None:
        self.guest = _load_guest_info()
        self.metered = metered
        config, description = _config(metered)
        engine = lib.wasm_engine_new_with_config(config)  # takes the config
        if not engine:
            raise RuntimeError("wasmtime could not create an engine")
        self.engine: int = engine
        self.module = self._load_module(cache or cache_dir(), description)
        # wasmtime installed its trap handlers with the engine: keep guest traps theirs
        _signals.capture(self.module)
        self.linker: int = lib.wasmtime_linker_new(self.engine)
        self._define_imports()
        pre = ctypes.c_void_p()
        err = lib.wasmtime_linker_instantiate_pre(self.linker, self.module, ctypes.byref(pre))
        if err:
            raise GuestBuildError(f"the guest module does not link: {_capi.take_error(err)}")
        self.pre: int = pre.value or 0
        self.deadlines = Deadlines()
        self.workers = Workers(
            core=max(4, (os.cpu_count() or 2) * 4),
            cap=MAX_WORKERS,
            deadlines=self.deadlines,
        )
        self.bytecode = BytecodeCache()
        self.hot_pages = HotPages(_hostlib.prefault(), mmap.PAGESIZE)
        self.scratch_addr = self._probe()
        self.scratch_size = SCRATCH_SIZE
        # guest memory that holds nothing while the guest waits: the shadow stack (every call
        # has returned) and the scratch buffer (the guest copies out what it needs at once)
        self.idle_spans = ((0, self.guest.stack_top), (self.scratch_addr, SCRATCH_SIZE))
        self.js_stack_limit = JS_STACK_LIMIT
        # while a guest runs on the main thread, the epoch advances so signals are handled
        self.main_ticker = _stacks.MainTicker(
            self.increment_epoch,
            lambda delay, fn: self.deadlines.add(time.monotonic() + delay, fn),
        )

    def increment_epoch(self) -> None:
        """Advance the engine's epoch: every store's callback then asks whether its run stops."""
        lib.wasmtime_engine_increment_epoch(self.engine)

    def _load_module(self, cache: Path, description: str) -> int:
        key = hashlib.sha256(
            f"{self.guest.build_id};{_wasmtime_version()};{description}".encode()
        ).hexdigest()[:32]
        path = cache / f"guest-{key}.cwasm"
        module = ctypes.c_void_p()
        if path.exists():
            err = lib.wasmtime_module_deserialize_file(
                self.engine, os.fsencode(path), ctypes.byref(module)
            )
            if not err:
                return module.value or 0
            lib.wasmtime_error_delete(err)
            path.unlink(missing_ok=True)
        wasm = self.guest.wasm_path.read_bytes()
        err = lib.wasmtime_module_new(self.engine, wasm, len(wasm), ctypes.byref(module))
        if err:
            text = _capi.take_error(err)
            raise GuestBuildError(f"the guest module does not compile: {text}")
        try:
            cache.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(_serialize(module.value or 0))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs the next process a compile
        return module.value or 0

    def _define_imports(self) -> None:
        host_type = _functype([_WASM_I32] * 5, [_WASM_I64])
        try:
            host = _hostlib.host_call()
            _native.define_native_import(self.linker, "qj", "host", host_type, host)
        finally:
            lib.wasm_functype_delete(host_type)
        wasi = "wasi_snapshot_preview1"
        imports = _capi.PtrVec()
        lib.wasmtime_module_imports(self.module, ctypes.byref(imports))
        try:
            for i in range(imports.size):
                imp = imports.data[i]
                module = _name(lib.wasm_importtype_module(imp))
                name = _name(lib.wasm_importtype_name(imp))
                if module == "qj":
                    continue
                functype = lib.wasm_externtype_as_functype_const(lib.wasm_importtype_type(imp))
                if module != wasi or not functype:
                    raise GuestBuildError(f"unexpected guest import {module}.{name}")
                if name == "clock_time_get":
                    clock = _hostlib.clock_time_get()
                    _native.define_native_import(self.linker, wasi, name, functype, clock)
                else:
                    _native.define_host_import(
                        self.linker, wasi, name, functype, _router.badf_import
                    )
        finally:
            lib.wasm_importtype_vec_delete(ctypes.byref(imports))

    def new_instance(
        self, memory_limit: int, router: _router.HostRouter, fuel: int | None = None
    ) -> tuple[_native.NativeInstance, int]:
        """A fresh instance whose epoch callback consults ``router`` and whose imports read
        ``router.store_data`` (the store's data: the instance keeps it alive), ``qj.host``
        calling ``router.on_host``; returns it and its key.

        The key must be released with :func:`release_store` when the instance is closed.
        """
        key = _router.register(router)
        try:
            inst = _native.NativeInstance(
                self.engine,
                self.pre,
                memory_limit,
                _router.epoch_callback(),
                key,
                fuel=fuel,
                data=router.store_data,
                hot=self.hot_pages,
            )
        except BaseException:
            _router.stores.remove(key)
            raise
        # borrowed: closing the instance clears it (the guest runs only while the owner holds
        # the instance)
        router.store_data.owner = id(router)
        return inst, key

    def bare_instance(self) -> _native.NativeInstance:
        """A fresh instance for the host's own look at the image (the caller closes it)."""
        # no memory limit, a deadline no epoch advance reaches, and key 0 (no router: a
        # callback that did run would stop it)
        return _native.NativeInstance(
            self.engine,
            self.pre,
            -1,
            _router.epoch_callback(),
            0,
            fuel=1 << 40 if self.metered else None,
            deadline=1 << 40,
        )

    def _probe(self) -> int:
        """The scratch buffer's address (the same in every instance: they share the image)."""
        inst = self.bare_instance()
        try:
            return inst.call_export(b"qj_scratch") & 0xFFFFFFFF
        finally:
            inst.close()


def _functype(params: list[int], results: list[int]) -> int:
    """A new ``wasm_functype_t`` (owned by the caller) from value kinds."""
    vecs: list[_capi.PtrVec] = []
    for kinds in (params, results):
        vec = _capi.PtrVec()
        types = (ctypes.c_void_p * max(len(kinds), 1))(*(lib.wasm_valtype_new(k) for k in kinds))
        lib.wasm_valtype_vec_new(ctypes.byref(vec), len(kinds), types)  # takes the valtypes
        vecs.append(vec)
    functype: int = lib.wasm_functype_new(ctypes.byref(vecs[0]), ctypes.byref(vecs[1]))
    return functype


def _name(vec: ctypes._Pointer[_capi.ByteVec]) -> str:
    """A ``wasm_name_t`` borrowed from the library, as text."""
    return ctypes.string_at(vec.contents.data, vec.contents.size).decode("utf-8", "replace")


def _serialize(module: int) -> bytes:
    """The compiled module as bytes for the disk cache."""
    vec = _capi.ByteVec()
    err = lib.wasmtime_module_serialize(module, ctypes.byref(vec))
    if err:
        raise OSError(f"wasmtime could not serialize the module: {_capi.take_error(err)}")
    try:
        return ctypes.string_at(vec.data, vec.size)
    finally:
        lib.wasm_byte_vec_delete(ctypes.byref(vec))


def _wasmtime_version() -> str:
    """Identify the wasmtime build cheaply (importlib.metadata costs tens of milliseconds):
    the native library's size and modification time change with every install. A stale key
    only costs a recompile: deserializing an incompatible artifact fails and is retried."""
    try:
        st = _capi.LIBRARY.stat()
    except OSError:
        return "unknown"
    return f"{_capi.LIBRARY.name}:{st.st_size}:{st.st_mtime_ns}"


release_store = _router.stores.remove

_engines: dict[bool, EngineState] = {}
_engine_lock = threading.Lock()


def _forget_after_fork() -> None:
    """In a child made by ``fork``: the parent's engines are left behind, not used.

    Only the forking thread lives on in a child, so the engines' deadline and worker threads
    are gone (a timeout would never fire, a timer never wake), and a lock another thread held
    at the fork (the engine's, or one inside wasmtime) stays held for good. The child's first
    run makes engines of its own, with threads of their own (the compiled guest comes from
    the disk cache).
    """
    global _engine_lock
    _engines.clear()
    _engine_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def get_engine(cache: Path | None = None, *, metered: bool = False) -> EngineState:
    """The process's engine (or its fuel-metered twin), created on first use."""
    eng = _engines.get(metered)
    if eng is None:
        with _engine_lock:
            eng = _engines.get(metered)
            if eng is None:
                eng = _engines[metered] = EngineState(cache, metered=metered)
    return eng
