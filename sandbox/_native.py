"""The hot path: stores, instances, calls and host imports straight through wasmtime's C API.

wasmtime-py's high-level objects cost tens of microseconds per call (argument type checks,
wrapper objects for every export). A run needs only a handful of operations, so this module
does them with one ctypes crossing each: create a store with its limits and epoch callback,
instantiate from the pre-linked module, look up four exports, call an export with raw i32
arguments, read the memory's base address, and delete the store.

Host imports are defined once per process on the shared linker as *unchecked* functions (raw
argument arrays), routed to the run executing on the current thread.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from collections.abc import Callable, Iterable
from typing import Any

import wasmtime
from wasmtime import _bindings as ffi

__all__ = ["BadPointer", "GuestStopped", "NativeInstance", "define_host_import"]

_lib: Any = getattr(ffi, "dll")  # noqa: B009 - not re-exported by wasmtime's stubs
_store_new = _lib.wasmtime_store_new
_store_context = _lib.wasmtime_store_context
_store_delete = _lib.wasmtime_store_delete
_store_limiter = _lib.wasmtime_store_limiter
_epoch_callback = _lib.wasmtime_store_epoch_deadline_callback
_set_deadline = _lib.wasmtime_context_set_epoch_deadline
_pre_instantiate = _lib.wasmtime_instance_pre_instantiate
_export_get = _lib.wasmtime_instance_export_get
_call = _lib.wasmtime_func_call_unchecked
_mem_data = _lib.wasmtime_memory_data
_mem_size = _lib.wasmtime_memory_data_size
_error_delete = _lib.wasmtime_error_delete
_trap_delete = _lib.wasm_trap_delete
_trap_code = _lib.wasmtime_trap_code
_error_message = _lib.wasmtime_error_message
_byte_vec_delete = _lib.wasm_byte_vec_delete

_Raw = ffi.wasmtime_val_raw_t
_TrapPtr = ctypes.POINTER(ffi.wasm_trap_t)
_STACK_OVERFLOW = 0
_OUT_OF_FUEL = 11
_set_fuel = _lib.wasmtime_context_set_fuel
_get_fuel = _lib.wasmtime_context_get_fuel
_NO_FINALIZER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)()  # a NULL function pointer
_PAGE = mmap.PAGESIZE
_MADV_DONTNEED = 4
_madvise: Any = None
if sys.platform.startswith("linux"):  # elsewhere MADV_DONTNEED need not give the pages back
    _madvise = ctypes.CDLL(None, use_errno=True).madvise
    _madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    _madvise.restype = ctypes.c_int


class BadPointer(Exception):
    """The guest named memory outside its own linear memory (a bug or a hostile guest)."""


class GuestStopped(Exception):
    """The guest trapped or an epoch callback stopped it; the instance is unusable."""

    def __init__(
        self, message: str, *, stack_overflow: bool = False, out_of_fuel: bool = False
    ) -> None:
        super().__init__(message)
        self.stack_overflow = stack_overflow
        self.out_of_fuel = out_of_fuel


def _error_text(err: Any) -> str:
    vec = ffi.wasm_byte_vec_t()
    _error_message(err, ctypes.byref(vec))
    try:
        return ctypes.string_at(vec.data, vec.size).decode("utf-8", "replace")
    finally:
        _byte_vec_delete(ctypes.byref(vec))


class NativeInstance:
    """One store and one fresh instance of the guest."""

    __slots__ = ("_alloc", "_base", "_ctx", "_mem", "_resume", "_run", "_size", "_store")

    def __init__(
        self,
        engine: wasmtime.Engine,
        pre: wasmtime.InstancePre,
        memory_limit: int,
        epoch_cb: Any,
        epoch_key: int,
        fuel: int | None = None,
    ) -> None:
        store = _store_new(engine.ptr(), None, _NO_FINALIZER)
        if not store:
            raise MemoryError("wasmtime could not create a store")
        self._store = store
        self._ctx = _store_context(store)
        _store_limiter(store, memory_limit, -1, -1, -1, -1)
        _epoch_callback(store, epoch_cb, epoch_key, _NO_FINALIZER)
        _set_deadline(self._ctx, 1)
        if fuel is not None:
            err = _set_fuel(self._ctx, fuel)
            if err:
                _error_delete(err)
                self.close()
                raise ValueError("fuel needs an engine with fuel metering")
        inst = ffi.wasmtime_instance_t()
        trap = _TrapPtr()
        err = _pre_instantiate(pre.ptr(), self._ctx, ctypes.byref(inst), ctypes.byref(trap))
        if err or trap:
            text = _error_text(err) if err else "instantiation trapped"
            if err:
                _error_delete(err)
            if trap:
                _trap_delete(trap)
            self.close()
            raise MemoryError(f"the sandbox could not be instantiated: {text}")
        self._run = self._export(inst, b"qj_run").of.func
        self._resume = self._export(inst, b"qj_resume").of.func
        self._alloc = self._export(inst, b"qj_alloc").of.func
        self._mem = self._export(inst, b"memory").of.memory
        self._base = 0
        self._size = 0

    def _export(self, inst: Any, name: bytes) -> Any:
        ext = ffi.wasmtime_extern_t()
        if not _export_get(self._ctx, ctypes.byref(inst), name, len(name), ctypes.byref(ext)):
            raise RuntimeError(f"the guest has no export {name.decode()}")
        return ext

    def _invoke(self, func: Any, args: tuple[int, ...]) -> int:
        n = max(len(args), 1)
        vals = (_Raw * n)()
        for i, a in enumerate(args):
            vals[i].i32 = a
        trap = _TrapPtr()
        err = _call(self._ctx, ctypes.byref(func), vals, n, ctypes.byref(trap))
        if err:
            text = _error_text(err)
            _error_delete(err)
            raise GuestStopped(text)
        if trap:
            code = ctypes.c_uint8(255)
            has_code = _trap_code(trap, ctypes.byref(code))
            _trap_delete(trap)
            overflow = bool(has_code) and code.value == _STACK_OVERFLOW
            no_fuel = bool(has_code) and code.value == _OUT_OF_FUEL
            raise GuestStopped(
                f"wasm trap (code {code.value if has_code else 'none'})",
                stack_overflow=overflow,
                out_of_fuel=no_fuel,
            )
        return int(vals[0].i32)

    def run(self, ptr: int, length: int) -> int:
        return self._invoke(self._run, (ptr, length))

    def resume(self, call_id: int, ok: int, ptr: int, length: int) -> int:
        return self._invoke(self._resume, (call_id, ok, ptr, length))

    def alloc(self, size: int) -> int:
        return self._invoke(self._alloc, (size,)) & 0xFFFFFFFF

    def memory(self, need: int = 0) -> tuple[int, int]:
        """Base address and size of linear memory.

        Memories never move (the engine is configured so), so the base is cached; the size is
        re-read when a caller needs more than the size last seen (memory only grows).
        """
        if need > self._size or not self._base:
            base = _mem_data(self._ctx, ctypes.byref(self._mem))
            self._base = ctypes.cast(base, ctypes.c_void_p).value or 0
            self._size = int(_mem_size(self._ctx, ctypes.byref(self._mem)))
        return self._base, self._size

    def check_span(self, ptr: int, length: int) -> int:
        """The host address of guest bytes ``[ptr, ptr + length)``, checked against memory."""
        if ptr < 0 or length < 0:
            raise BadPointer(f"negative pointer or length ({ptr}, {length})")
        base, size = self.memory(ptr + length)
        if ptr + length > size:
            raise BadPointer(f"({ptr}, {length}) lies outside {size} bytes of guest memory")
        return base + ptr

    def read(self, ptr: int, length: int) -> bytes:
        """Copy ``length`` guest bytes at ``ptr`` out; :class:`BadPointer` when out of bounds."""
        return ctypes.string_at(self.check_span(ptr, length), length)

    def write(self, ptr: int, data: bytes) -> None:
        """Copy ``data`` into guest memory at ``ptr``; :class:`BadPointer` when out of bounds."""
        ctypes.memmove(self.check_span(ptr, len(data)), data, len(data))

    def place(self, data: bytes, scratch: int, scratch_size: int) -> int | None:
        """Put host data where the next call expects it: the scratch buffer when it fits (the
        call then passes pointer 0), else a guest allocation; None when the guest has no room.
        """
        if len(data) <= scratch_size:
            self.write(scratch, data)
            return 0
        ptr = self.alloc(len(data))
        if ptr == 0:
            return None
        self.write(ptr, data)
        return ptr

    def drop(self, spans: Iterable[tuple[int, int]]) -> None:
        """Give back the resident pages wholly inside the guest spans ``(ptr, length)``.

        Only for memory that holds nothing the guest still needs, while no call runs: Linux
        drops the pages (MADV_DONTNEED), so the next touch maps them afresh from the module's
        memory image (or zeros), as in a fresh instance. A parked run then holds no pages it
        only used while running. A no-op on other systems.
        """
        if _madvise is None or not self._store:
            return
        base, size = self.memory()
        for ptr, length in spans:
            lo = -(-ptr // _PAGE) * _PAGE
            hi = min(ptr + length, size) // _PAGE * _PAGE
            if hi > lo:
                _madvise(base + lo, hi - lo, _MADV_DONTNEED)

    def fuel_left(self) -> int:
        """Fuel remaining in the store (metered engines only)."""
        out = ctypes.c_uint64(0)
        err = _get_fuel(self._ctx, ctypes.byref(out))
        if err:
            _error_delete(err)
            return 0
        return int(out.value)

    def close(self) -> None:
        """Free the store, the instance and its memory (idempotent)."""
        store, self._store = self._store, None
        if store:
            _store_delete(store)


_keep: list[Any] = []


def define_host_import(
    linker: wasmtime.Linker,
    module: str,
    name: str,
    ty: wasmtime.FuncType,
    fn: Callable[[Any, int], None],
) -> None:
    """Define an unchecked host import: ``fn(raw_args, n)`` reads and writes raw values."""

    def trampoline(_env: Any, _caller: Any, args: Any, n: int) -> int:
        try:
            fn(args, n)
        except BaseException:  # a ctypes callback must never raise; the run records errors
            pass
        return 0

    cb = ffi.wasmtime_func_unchecked_callback_t(trampoline)
    _keep.append(cb)  # the linker holds the function pointer for the process's lifetime
    mod, nm = module.encode(), name.encode()
    err = ffi.wasmtime_linker_define_func_unchecked(
        linker.ptr(),
        ctypes.create_string_buffer(mod),
        len(mod),
        ctypes.create_string_buffer(nm),
        len(nm),
        ty.ptr(),
        cb,
        None,
        _NO_FINALIZER,
    )
    if err:
        text = _error_text(err)
        _error_delete(err)
        raise RuntimeError(f"could not define {module}.{name}: {text}")
