"""The host library: our own C, built with the guest, that answers the guest's imports natively.

Two imports are C functions of ``_guest/libquickjail_host.so`` (built next to the guest by
:mod:`sandbox._build`, shipped in the wheel; a missing library is an install error, like a
missing guest):

- WASI ``clock_time_get`` (``_host/clock.c``): ``Date.now()`` and ``performance.now()`` are
  answered in C, with no Python at all;
- ``qj.host`` (``_host/calls.c``): the C function checks the guest's span and calls the store's
  owner, ``on_host(op, a, b, c, d, view)``, through CPython's C API, then copies a short reply
  into the guest's scratch buffer. A ctypes callback cost several microseconds more per call.

The library declares no wasmtime or CPython symbol of its own: :func:`host_call` and
:func:`clock_time_get` hand it the addresses of the few functions it calls, from the wasmtime
library :mod:`._capi` loaded and from ``ctypes.pythonapi`` (stable-ABI functions only). Each
store's data pointer is the address of its :class:`StoreData`.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any, Final

from quickjail.sandbox import _capi
from quickjail.sandbox._abi import (
    OP_BYTECODE,
    OP_CALL,
    OP_FETCH,
    OP_LOG,
    OP_MODULE,
    OP_REJECTION,
    OP_REPORT,
    OP_RESULT,
)
from quickjail.sandbox.errors import GuestBuildError

__all__ = [
    "LIBRARY_NAME",
    "MODE_DETERMINISTIC",
    "MODE_REAL",
    "MODE_ZERO",
    "SPAN_OPS",
    "StoreData",
    "clock_time_get",
    "epoch_callback",
    "host_call",
    "library",
    "play",
    "prefault",
]

MODE_REAL: Final = 0
"""Real clocks: id 0 is CLOCK_REALTIME (``time.time_ns``), any other id CLOCK_MONOTONIC."""
MODE_DETERMINISTIC: Final = 1
"""``base_ns + reads * 1 ms + virtual_ns`` for any id, counting the read; saturates at 2**64 - 1."""
MODE_ZERO: Final = 2
"""Always 0 (compile-only instances have no clock)."""

_GUEST_DIR = Path(__file__).resolve().parent / "_guest"


LIBRARY_NAME: Final = "libquickjail_host.so"
"""The library's file name in ``_guest/`` (``.so`` on macOS too, as Python's extensions)."""


class StoreData(ctypes.Structure):
    """``qj_store_t`` of ``_host/host.h``: one store's data, at the store's data pointer.

    Its owner keeps it alive as long as the store. The clock's fields: the host library reads
    and writes them while the guest runs (``reads``), the run writes ``virtual_ns`` between
    calls. ``owner`` is the address of the object whose ``on_host`` answers ``qj.host``
    (borrowed: set when the instance is made, cleared when it is closed);
    a reply of at most ``scratch_size`` bytes is copied to ``scratch``.
    """

    _fields_ = (
        ("mode", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        ("reads", ctypes.c_uint64),
        ("base_ns", ctypes.c_uint64),
        ("virtual_ns", ctypes.c_uint64),
        ("memory", _capi.Memory),
        ("owner", ctypes.c_void_p),
        ("scratch", ctypes.c_uint32),
        ("scratch_size", ctypes.c_uint32),
    )


SPAN_OPS: Final = frozenset(
    {OP_LOG, OP_REPORT, OP_RESULT, OP_MODULE, OP_CALL, OP_FETCH, OP_REJECTION, OP_BYTECODE}
)
"""The ops whose ``(b, c)`` is a span of guest memory: the import hands the owner a view."""

# what qj_host_init_python takes, in its order (``py`` of _host/calls.c): stable-ABI functions
_PYTHON_FUNCTIONS: Final = (
    "PyGILState_Ensure",
    "PyGILState_Release",
    "PyObject_VectorcallMethod",
    "PyLong_FromLongLong",
    "PyLong_AsLongLong",
    "PyMemoryView_FromMemory",
    "PyBytes_AsStringAndSize",
    "PyObject_Type",
    "PyType_GetFlags",
    "Py_DecRef",
    "PyErr_Occurred",
    "PyErr_Clear",
    "PyErr_WriteUnraisable",
    "PyErr_Fetch",
    "PyErr_Restore",
    "PyObject_CallFunctionObjArgs",
    "PyErr_NormalizeException",
)
# objects the library uses for good: the method it calls, the method that releases a view
_ON_HOST: Final = "on_host"
_RELEASE: Final = "release"

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_addresses: dict[str, int] = {}
_kept: list[Any] = []  # Python objects the library holds borrowed, for good
_play: Any = None
_epoch: int = 0


def _new_lock() -> None:
    """After ``fork``, in the child: a lock another thread held at the fork stays held (the
    library itself stays loaded: its state is the process's, copied whole)."""
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock)


def clock_time_get() -> int:
    """The address of the library's ``clock_time_get`` host function (loading it)."""
    return _load()["clock"]


def host_call() -> int:
    """The address of the library's ``qj.host`` host function (loading it)."""
    return _load()["host"]


def library() -> ctypes.CDLL:
    """The host library (loading it); its functions release the GIL when called."""
    _load()
    assert _lib is not None
    return _lib


def prefault() -> Any:
    """The library's ``qj_prefault(base, size, pages, n)`` (``_host/prefault.c``), typed."""
    fn = library().qj_prefault
    fn.restype = ctypes.c_int
    fn.argtypes = (ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32)
    return fn


def epoch_callback(decide: Any, interrupted: Any) -> int:
    """The address of the library's epoch deadline callback (loading it), which asks
    ``decide(key) -> int`` (non-zero: stop) and hands an exception raised meanwhile (a signal
    handler's, on the main thread) to ``interrupted(key, exc)``. The first call's functions
    stay for good."""
    global _epoch
    _load()
    with _lock:
        if not _epoch:
            assert _lib is not None
            init = _lib.qj_epoch_init
            init.restype = ctypes.c_int
            init.argtypes = (ctypes.c_void_p, ctypes.py_object, ctypes.py_object)
            _kept.extend((decide, interrupted))
            error_new = ctypes.cast(_capi.lib.wasmtime_error_new, ctypes.c_void_p)
            if init(error_new, decide, interrupted) != 0:
                raise GuestBuildError("the host library refused the epoch callback's functions")
            _epoch = ctypes.cast(_lib.qj_epoch_callback, ctypes.c_void_p).value or 0
        return _epoch


def play(data: StoreData, base: int, size: int, op: int, a: int, b: int, c: int, d: int) -> int:
    """Answer ``qj.host(op, a, b, c, d)`` as the guest's import does, through the same C,
    for a host that plays the guest (the isolation suite, ``quickjail stress``): ``data``'s
    owner answers, the guest's memory being ``size`` bytes at ``base``. An exception the
    owner lets out (a host bug the guest would only see as E_HOST) is raised here."""
    _load()
    return int(_play(ctypes.byref(data), base, size, op, a, b, c, d))


def _load() -> dict[str, int]:
    """Load the library once, handing it wasmtime's and CPython's functions."""
    global _lib, _play
    with _lock:
        if _lib is None:
            lib = _open(_GUEST_DIR / LIBRARY_NAME)
            init = lib.qj_host_init
            init.restype = ctypes.c_int
            init.argtypes = (ctypes.c_void_p,) * 4
            functions = (
                _capi.lib.wasmtime_caller_context,
                _capi.lib.wasmtime_context_get_data,
                _capi.lib.wasmtime_memory_data,
                _capi.lib.wasmtime_memory_data_size,
            )
            if init(*(ctypes.cast(f, ctypes.c_void_p) for f in functions)) != 0:
                raise GuestBuildError("the host library refused wasmtime's functions")
            init_py = lib.qj_host_init_python
            init_py.restype = ctypes.c_int
            init_py.argtypes = (
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_size_t,
                ctypes.py_object,
                ctypes.py_object,
                ctypes.py_object,
                ctypes.c_uint32,
            )
            table = (ctypes.c_void_p * len(_PYTHON_FUNCTIONS))(
                *(
                    ctypes.cast(getattr(ctypes.pythonapi, n), ctypes.c_void_p).value
                    for n in _PYTHON_FUNCTIONS
                )
            )
            ops = sum(1 << op for op in SPAN_OPS)
            if init_py(table, len(_PYTHON_FUNCTIONS), _ON_HOST, _RELEASE, None, ops) != 0:
                raise GuestBuildError("the host library refused CPython's functions")
            # through PyDLL: called holding the GIL, and an exception left set is raised
            play_fn = ctypes.PyDLL(str(_GUEST_DIR / LIBRARY_NAME), handle=lib._handle).qj_host_play
            play_fn.restype = ctypes.c_int64
            play_fn.argtypes = (
                ctypes.c_void_p,
                ctypes.c_void_p,
                ctypes.c_size_t,
                *(ctypes.c_int32,) * 5,
            )
            _addresses["clock"] = ctypes.cast(lib.qj_clock_time_get, ctypes.c_void_p).value or 0
            _addresses["host"] = ctypes.cast(lib.qj_host_call, ctypes.c_void_p).value or 0
            _play = play_fn
            _lib = lib  # loaded for good: the linker holds the functions' addresses
        return _addresses


def _open(path: Path) -> ctypes.CDLL:
    if not path.exists():
        raise GuestBuildError(
            f"the host library is missing ({path}); build it with `make guest` "
            "(or `python -m quickjail.sandbox._build`)"
        )
    try:
        return ctypes.CDLL(str(path))
    except OSError as exc:
        raise GuestBuildError(f"the host library does not load ({path}): {exc}") from exc
