"""wasmtime's C API, declared with ctypes: only the functions quickjail calls.

The ``wasmtime`` package ships its native library next to its Python bindings, and importing
those bindings declares every function of the C API (tens of milliseconds of a process's first
run). This module loads the same library file, found through the package's import spec without
importing the package, and declares only what the engine and the hot path use. Opaque objects
(engine, module, linker, store, context, errors, traps) are plain addresses (``int``); the few
structures passed by value or filled in by the library are declared with their C layout.

The library is the same file wasmtime-py loads, so the dynamic loader shares one copy between
the two (the guest build still uses wasmtime-py to make its snapshot).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["LIBRARY", "ByteVec", "Extern", "Func", "Instance", "Memory", "ValRaw", "lib"]

_c = ctypes
_ptr = _c.c_void_p
_size = _c.c_size_t
_u8, _u32, _u64, _i64 = _c.c_uint8, _c.c_uint32, _c.c_uint64, _c.c_int64


def _library_path() -> Path:
    """The native library inside the installed ``wasmtime`` package, where wasmtime-py looks:
    ``<package>/<platform>-<machine>/<library>``."""
    spec = importlib.util.find_spec("wasmtime")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the wasmtime package is not installed")
    osname = "android" if hasattr(sys, "getandroidapilevel") else sys.platform
    names = {
        "linux": "_libwasmtime.so",
        "android": "_libwasmtime.so",
        "win32": "_wasmtime.dll",
        "darwin": "_libwasmtime.dylib",
    }
    if osname not in names:
        raise ImportError(f"wasmtime does not support the platform {osname}")
    if hasattr(os, "uname"):
        machine = os.uname().machine
    else:  # Windows: platform costs a few milliseconds to import, so only here
        import platform

        machine = platform.machine()
    machine = {"AMD64": "x86_64", "arm64": "aarch64", "ARM64": "aarch64"}.get(machine, machine)
    package = Path(next(iter(spec.submodule_search_locations)))
    return package / f"{osname}-{machine}" / names[osname]


LIBRARY = _library_path()
"""The wasmtime shared library this process uses."""
lib = _c.CDLL(str(LIBRARY))


class ByteVec(_c.Structure):
    """``wasm_byte_vec_t`` (also ``wasm_name_t``)."""

    _fields_ = (
        ("size", _size),
        ("data", _c.POINTER(_c.c_char)),
    )


class PtrVec(_c.Structure):
    """Any ``wasm_*_vec_t`` of pointers (import types, value types)."""

    _fields_ = (
        ("size", _size),
        ("data", _c.POINTER(_ptr)),
    )


class Instance(_c.Structure):
    """``wasmtime_instance_t``."""

    _fields_ = (
        ("store_id", _u64),
        ("private", _size),
    )


class Func(_c.Structure):
    """``wasmtime_func_t``."""

    _fields_ = (
        ("store_id", _u64),
        ("private", _ptr),
    )


class Memory(_c.Structure):
    """``wasmtime_memory_t``: ``{ struct { u64 store_id; u32 }; u32 }`` (24 bytes)."""

    _fields_ = (
        ("store_id", _u64),
        ("private1", _u32),
        ("_pad", _u32),  # the inner struct's padding
        ("private2", _u32),
    )


class _ExternUnion(_c.Union):
    # the largest members (global, table, memory, tag) take 24 bytes
    _fields_ = (
        ("func", Func),
        ("memory", Memory),
        ("_room", _u64 * 3),
    )


class Extern(_c.Structure):
    """``wasmtime_extern_t``: a kind byte and the union of every kind of export."""

    _fields_ = (
        ("kind", _u8),
        ("of", _ExternUnion),
    )


class ValRaw(_c.Union):
    """``wasmtime_val_raw_t``: 16 bytes, of which quickjail's imports use i32 and i64."""

    _fields_ = (
        ("i32", _c.c_int32),
        ("i64", _i64),
        ("v128", _u8 * 16),
    )


EPOCH_CALLBACK_TYPE = _c.CFUNCTYPE(_size, _ptr, _ptr, _c.POINTER(_u64), _c.POINTER(_u8))
"""``(context, data, *epoch_deadline_delta, *kind) -> wasmtime_error_t*``."""
UNCHECKED_CALLBACK_TYPE = _c.CFUNCTYPE(_size, _ptr, _ptr, _c.POINTER(ValRaw), _size)
"""``(env, caller, args_and_results, n) -> wasm_trap_t*``."""

_PP = _c.POINTER(_ptr)
_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    # errors and traps
    "wasmtime_error_new": (_ptr, [_c.c_char_p]),
    "wasmtime_error_message": (None, [_ptr, _c.POINTER(ByteVec)]),
    "wasmtime_error_delete": (None, [_ptr]),
    "wasm_byte_vec_delete": (None, [_c.POINTER(ByteVec)]),
    "wasm_trap_delete": (None, [_ptr]),
    "wasmtime_trap_code": (_c.c_bool, [_ptr, _c.POINTER(_u8)]),
    # configuration and engine
    "wasm_config_new": (_ptr, []),
    "wasmtime_config_epoch_interruption_set": (None, [_ptr, _c.c_bool]),
    "wasmtime_config_consume_fuel_set": (None, [_ptr, _c.c_bool]),
    "wasmtime_config_cranelift_opt_level_set": (None, [_ptr, _u8]),
    "wasmtime_config_async_stack_size_set": (None, [_ptr, _size]),
    "wasmtime_config_max_wasm_stack_set": (None, [_ptr, _size]),
    "wasmtime_config_memory_may_move_set": (None, [_ptr, _c.c_bool]),
    "wasmtime_pooling_allocation_config_new": (_ptr, []),
    "wasmtime_pooling_allocation_config_max_unused_warm_slots_set": (None, [_ptr, _u32]),
    "wasmtime_pooling_allocation_config_total_memories_set": (None, [_ptr, _u32]),
    "wasmtime_pooling_allocation_config_total_core_instances_set": (None, [_ptr, _u32]),
    "wasmtime_pooling_allocation_config_total_tables_set": (None, [_ptr, _u32]),
    "wasmtime_pooling_allocation_config_total_stacks_set": (None, [_ptr, _u32]),
    "wasmtime_pooling_allocation_config_max_memory_size_set": (None, [_ptr, _size]),
    "wasmtime_pooling_allocation_strategy_set": (None, [_ptr, _ptr]),
    "wasm_engine_new_with_config": (_ptr, [_ptr]),
    "wasmtime_engine_increment_epoch": (None, [_ptr]),
    # modules and their imports
    "wasmtime_module_new": (_ptr, [_ptr, _c.c_char_p, _size, _PP]),
    "wasmtime_module_deserialize_file": (_ptr, [_ptr, _c.c_char_p, _PP]),
    "wasmtime_module_serialize": (_ptr, [_ptr, _c.POINTER(ByteVec)]),
    "wasmtime_module_image_range": (None, [_ptr, _PP, _PP]),
    "wasmtime_module_imports": (None, [_ptr, _c.POINTER(PtrVec)]),
    "wasm_importtype_vec_delete": (None, [_c.POINTER(PtrVec)]),
    "wasm_importtype_module": (_c.POINTER(ByteVec), [_ptr]),
    "wasm_importtype_name": (_c.POINTER(ByteVec), [_ptr]),
    "wasm_importtype_type": (_ptr, [_ptr]),
    "wasm_externtype_as_functype_const": (_ptr, [_ptr]),
    "wasm_valtype_new": (_ptr, [_u8]),
    "wasm_valtype_vec_new": (None, [_c.POINTER(PtrVec), _size, _PP]),
    "wasm_functype_new": (_ptr, [_c.POINTER(PtrVec), _c.POINTER(PtrVec)]),
    "wasm_functype_delete": (None, [_ptr]),
    # linking
    "wasmtime_linker_new": (_ptr, [_ptr]),
    "wasmtime_linker_define_func_unchecked": (
        _ptr,
        [_ptr, _c.c_char_p, _size, _c.c_char_p, _size, _ptr, UNCHECKED_CALLBACK_TYPE, _ptr, _ptr],
    ),
    "wasmtime_linker_instantiate_pre": (_ptr, [_ptr, _ptr, _PP]),
    # stores, instances, calls, memory
    "wasmtime_store_new": (_ptr, [_ptr, _ptr, _ptr]),
    "wasmtime_store_context": (_ptr, [_ptr]),
    "wasmtime_store_delete": (None, [_ptr]),
    "wasmtime_store_limiter": (None, [_ptr, _i64, _i64, _i64, _i64, _i64]),
    "wasmtime_store_epoch_deadline_callback": (None, [_ptr, EPOCH_CALLBACK_TYPE, _ptr, _ptr]),
    "wasmtime_context_set_epoch_deadline": (None, [_ptr, _u64]),
    "wasmtime_context_set_fuel": (_ptr, [_ptr, _u64]),
    "wasmtime_context_get_fuel": (_ptr, [_ptr, _c.POINTER(_u64)]),
    "wasmtime_instance_pre_instantiate": (
        _ptr,
        [_ptr, _ptr, _c.POINTER(Instance), _PP],
    ),
    "wasmtime_instance_export_get": (
        _c.c_bool,
        [_ptr, _c.POINTER(Instance), _c.c_char_p, _size, _c.POINTER(Extern)],
    ),
    "wasmtime_func_call_unchecked": (
        _ptr,
        [_ptr, _c.POINTER(Func), _c.POINTER(ValRaw), _size, _PP],
    ),
    "wasmtime_memory_data": (_ptr, [_ptr, _c.POINTER(Memory)]),
    "wasmtime_memory_data_size": (_size, [_ptr, _c.POINTER(Memory)]),
    "wasmtime_memory_grow": (_ptr, [_ptr, _c.POINTER(Memory), _u64, _c.POINTER(_u64)]),
}

for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _restype
    _fn.argtypes = _argtypes
del _name, _restype, _argtypes, _fn


def error_text(err: int) -> str:
    """The message of a ``wasmtime_error_t`` (the error is not freed)."""
    vec = ByteVec()
    lib.wasmtime_error_message(err, _c.byref(vec))
    try:
        return _c.string_at(vec.data, vec.size).decode("utf-8", "replace")
    finally:
        lib.wasm_byte_vec_delete(_c.byref(vec))


def take_error(err: int) -> str:
    """The message of a ``wasmtime_error_t``, freeing the error."""
    try:
        return error_text(err)
    finally:
        lib.wasmtime_error_delete(err)
