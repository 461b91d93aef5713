"""The hot path: stores, instances, calls and host imports straight through wasmtime's C API.

wasmtime-py's high-level objects cost tens of microseconds per call (argument type checks,
wrapper objects for every export). A run needs only a handful of operations, so this module
does them with one ctypes crossing each: create a store with its limits and epoch callback,
instantiate from the pre-linked module (then populate the engine's hot pages,
:mod:`._prefault`), look up four exports, call an export with raw i32
arguments, read the memory's base address, and delete the store.

Host imports are defined once per process on the shared linker as *unchecked* functions (raw
argument arrays): ``qj.host`` and the clock are C functions of the host library
(:mod:`._hostlib`) that find their run through the store's data pointer (its
:class:`~._hostlib.StoreData`); the other WASI imports answer "bad file descriptor".
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from quickjail.sandbox import _capi, _hostlib, _signals, _stacks
from quickjail.sandbox._capi import lib
from quickjail.sandbox._hostlib import StoreData
from quickjail.sandbox._prefault import HotPages

__all__ = [
    "BadPointer",
    "GuestStopped",
    "NativeInstance",
    "define_host_import",
    "define_native_import",
]

_store_new = lib.wasmtime_store_new
_store_context = lib.wasmtime_store_context
_store_delete = lib.wasmtime_store_delete
_store_limiter = lib.wasmtime_store_limiter
_epoch_callback = lib.wasmtime_store_epoch_deadline_callback
_set_deadline = lib.wasmtime_context_set_epoch_deadline
_pre_instantiate = lib.wasmtime_instance_pre_instantiate
_export_get = lib.wasmtime_instance_export_get
_call = lib.wasmtime_func_call_unchecked
_CALL: int = ctypes.cast(_call, ctypes.c_void_p).value or 0
_mem_data = lib.wasmtime_memory_data
_mem_size = lib.wasmtime_memory_data_size
_mem_grow = lib.wasmtime_memory_grow
_error_delete = lib.wasmtime_error_delete
_trap_delete = lib.wasm_trap_delete
_trap_code = lib.wasmtime_trap_code
_set_fuel = lib.wasmtime_context_set_fuel
_get_fuel = lib.wasmtime_context_get_fuel

_as_utf8 = ctypes.pythonapi.PyUnicode_AsUTF8AndSize
_as_utf8.argtypes = (ctypes.py_object, ctypes.POINTER(ctypes.c_ssize_t))
_as_utf8.restype = ctypes.c_void_p
_Raw = _capi.ValRaw
_ARRAYS = {n: _Raw * n for n in range(1, 5)}  # argument arrays: the exports take up to four
_STACK_OVERFLOW = 0
_OUT_OF_FUEL = 11
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


class NativeInstance:
    """One store and one fresh instance of the guest."""

    __slots__ = (
        "_alloc",
        "_base",
        "_ctx",
        "_data",
        "_hot",
        "_inst",
        "_mem",
        "_resume",
        "_run",
        "_sampled",
        "_size",
        "_store",
    )

    def __init__(
        self,
        engine: int,
        pre: int,
        memory_limit: int,
        epoch_cb: Any,
        epoch_key: int,
        fuel: int | None = None,
        deadline: int = 1,
        data: StoreData | None = None,
        hot: HotPages | None = None,
    ) -> None:
        """Create the store (with its limits and epoch callback) and instantiate ``pre``.

        ``engine`` and ``pre`` are the addresses of a ``wasm_engine_t`` and the
        ``wasmtime_instance_pre_t`` made from it; ``deadline`` is in epochs from now.
        ``data`` becomes the store's data (the host library's imports read it; the instance
        keeps it alive as long as the store); without it the guest's clock answers EBADF and
        ``qj.host`` E_HOST. ``hot``: the engine's hot pages, populated (or this run sampled).
        """
        _signals.guard()  # a guest's trap must reach wasmtime's handler, not a later one
        self._data = data
        self._hot = hot
        self._sampled = False
        store = _store_new(engine, ctypes.addressof(data) if data is not None else None, None)
        if not store:
            raise MemoryError("wasmtime could not create a store")
        self._store = store
        self._ctx = _store_context(store)
        _store_limiter(store, memory_limit, -1, -1, -1, -1)
        _epoch_callback(store, epoch_cb, epoch_key, None)
        _set_deadline(self._ctx, deadline)
        if fuel is not None:
            err = _set_fuel(self._ctx, fuel)
            if err:
                _error_delete(err)
                self.close()
                raise ValueError("fuel needs an engine with fuel metering")
        inst = _capi.Instance()
        trap = ctypes.c_void_p()
        err = _pre_instantiate(pre, self._ctx, ctypes.byref(inst), ctypes.byref(trap))
        if err or trap:
            text = _capi.take_error(err) if err else "instantiation trapped"
            if trap:
                _trap_delete(trap)
            self.close()
            raise MemoryError(f"the sandbox could not be instantiated: {text}")
        self._inst = inst
        self._run = self._export(inst, b"qj_run").of.func
        self._resume: Any = None  # looked up on first use: most runs never resume or allocate
        self._alloc: Any = None
        self._mem = self._export(inst, b"memory").of.memory
        if data is not None:
            data.memory = self._mem  # the imports may now answer
        self._base = 0
        self._size = 0
        if hot is not None:
            self._sampled = hot.start(*self.memory())

    def _export(self, inst: Any, name: bytes) -> Any:
        ext = _capi.Extern()
        if not _export_get(self._ctx, ctypes.byref(inst), name, len(name), ctypes.byref(ext)):
            raise RuntimeError(f"the guest has no export {name.decode()}")
        return ext

    def _invoke(self, func: Any, args: tuple[int, ...]) -> int:
        n = len(args) or 1
        vals = _ARRAYS[n]()
        for i, a in enumerate(args):
            vals[i].i32 = a
        trap = ctypes.c_void_p()
        stack = _stacks.current()
        if stack is None:
            err = _call(self._ctx, ctypes.byref(func), vals, n, ctypes.byref(trap))
        else:  # the caller's thread, on its guest stack
            err = stack.call(_CALL, self._ctx, ctypes.byref(func), vals, n, ctypes.byref(trap))
        if err:
            raise GuestStopped(_capi.take_error(err))
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

    def call_export(self, name: bytes) -> int:
        """Call the export ``name`` with no arguments (an i32 result); for the engine's probe."""
        return self._invoke(self._export(self._inst, name).of.func, ())

    def run(self, ptr: int, length: int) -> int:
        return self._invoke(self._run, (ptr, length))

    def resume(self, call_id: int, ok: int, ptr: int, length: int) -> int:
        if self._resume is None:
            self._resume = self._export(self._inst, b"qj_resume").of.func
        return self._invoke(self._resume, (call_id, ok, ptr, length))

    def alloc(self, size: int) -> int:
        if self._alloc is None:
            self._alloc = self._export(self._inst, b"qj_alloc").of.func
        return self._invoke(self._alloc, (size,)) & 0xFFFFFFFF

    def memory(self, need: int = 0) -> tuple[int, int]:
        """Base address and size of linear memory.

        Memories never move (the engine is configured so), so the base is cached; the size is
        re-read when a caller needs more than the size last seen (memory only grows).
        """
        if need > self._size or not self._base:
            mem = ctypes.byref(self._mem)
            self._base = _mem_data(self._ctx, mem) or 0  # the address, as an int (or None)
            self._size = _mem_size(self._ctx, mem)
        return self._base, self._size

    def grow_to(self, size: int) -> bool:
        """Grow linear memory to ``size`` bytes (a multiple of 64 KiB); False when the store's
        limiter refused (over the memory limit) or ``size`` is below the current size."""
        current = self.memory(1 << 62)[1]
        if size < current or size % 65536:
            return size == current
        if size == current:
            return True
        prev = ctypes.c_uint64(0)
        err = _mem_grow(
            self._ctx, ctypes.byref(self._mem), (size - current) // 65536, ctypes.byref(prev)
        )
        if err:
            _error_delete(err)
            return False
        return self.memory(size)[1] >= size

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
        return self.place_parts((data,), len(data), scratch, scratch_size)

    def place_parts(
        self, parts: Sequence[bytes | str], total: int, scratch: int, scratch_size: int
    ) -> int | None:
        """:meth:`place` for data given as parts of ``total`` bytes in all, each copied
        straight to its offset: the host never joins them into one more copy."""
        if total <= scratch_size:
            self.write_parts(scratch, parts, total)
            return 0
        ptr = self.alloc(total)
        if ptr == 0:
            return None
        self.write_parts(ptr, parts, total)
        return ptr

    def write_parts(self, ptr: int, parts: Sequence[bytes | str], total: int) -> None:
        """Copy ``parts`` one after another into guest memory at ``ptr``; :class:`BadPointer`
        when the ``total`` bytes they must fill lie out of bounds (checked before any copy).

        A str part must be ASCII: it is copied from its own characters (which are its UTF-8),
        never encoded into a host copy first; ``parts`` holds it alive meanwhile.
        """
        if sum(map(len, parts)) != total:
            raise ValueError("the parts do not add up to their total")
        at = self.check_span(ptr, total)
        for part in parts:
            n = len(part)
            if isinstance(part, str):
                ctypes.memmove(at, _ascii_address(part), n)
            else:
                ctypes.memmove(at, part, n)
            at += n

    def play(self, op: int, a: int, b: int, c: int, d: int) -> int:
        """Call ``qj.host(op, a, b, c, d)`` as the guest would, through the host library's own
        dispatch (span checks, the owner's answer, the reply's copy): for the isolation suite
        and ``quickjail stress``, which play a compromised guest."""
        if self._data is None or not self._store:
            raise RuntimeError("the instance has no store data to answer for it")
        base, size = self.memory()
        return _hostlib.play(self._data, base, size, op, a, b, c, d)

    def drop(self, spans: Iterable[tuple[int, int]]) -> None:
        """Give back the resident pages wholly inside the guest spans ``(ptr, length)``.

        Only for memory that holds nothing the guest still needs, while no call runs: Linux
        drops the pages (MADV_DONTNEED), so the next touch maps them afresh from the module's
        memory image (or zeros), as in a fresh instance. A parked run then holds no pages it
        only used while running. A no-op on other systems.
        """
        if _madvise is None or not self._store:
            return
        self._sampled = False  # what the run wrote is no longer all resident
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
        """Free the store, the instance and its memory (idempotent); the store's owner is
        forgotten first, so the host library holds no pointer to it past the store."""
        if self._data is not None:
            self._data.owner = None
        if self._sampled and self._store and self._hot is not None:
            self._sampled = False
            self._hot.learn(*self.memory())
        store, self._store = self._store, None
        if store:
            _store_delete(store)


def _ascii_address(text: str) -> int:
    """The address of an ASCII str's bytes: for a compact ASCII str (any str made by Python
    code) CPython hands out the str's own data, no copy; ``text`` must outlive its use."""
    if not text.isascii():
        raise ValueError("only an ASCII str is its own UTF-8")
    size = ctypes.c_ssize_t(0)
    address = _as_utf8(text, ctypes.byref(size))
    if not address or size.value != len(text):
        raise ValueError("the str has no UTF-8 form of its length")
    return int(address)


_keep: list[Any] = []


def define_host_import(
    linker: int,
    module: str,
    name: str,
    functype: int,
    fn: Callable[[Any, int], None],
) -> None:
    """Define an unchecked host import: ``fn(raw_args, n)`` reads and writes raw values.

    ``linker`` and ``functype`` are addresses (the linker copies the type).
    """

    def trampoline(_env: Any, _caller: Any, args: Any, n: int) -> int:
        try:
            fn(args, n)
        except BaseException:  # a ctypes callback must never raise; the run records errors
            pass
        return 0

    _define(linker, module, name, functype, _capi.UNCHECKED_CALLBACK_TYPE(trampoline))


def define_native_import(linker: int, module: str, name: str, functype: int, address: int) -> None:
    """Define an unchecked host import whose callback is the C function at ``address`` (in a
    library loaded for good): the guest calls it with no Python in between."""
    _define(linker, module, name, functype, _capi.UNCHECKED_CALLBACK_TYPE(address))


def _define(linker: int, module: str, name: str, functype: int, cb: Any) -> None:
    _keep.append(cb)  # the linker holds the function pointer for the process's lifetime
    mod, nm = module.encode(), name.encode()
    err = lib.wasmtime_linker_define_func_unchecked(
        linker, mod, len(mod), nm, len(nm), functype, cb, None, None
    )
    if err:
        text = _capi.take_error(err)
        raise RuntimeError(f"could not define {module}.{name}: {text}")
