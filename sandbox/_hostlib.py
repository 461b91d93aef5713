"""The host library: our own C, built with the guest, that answers the guest's clock natively.

``Date.now()`` and ``performance.now()`` read WASI ``clock_time_get``. Answered by a ctypes
callback, each read cost a Python crossing (~3 µs: the GIL, argument packing, a memmove);
``_host/clock.c`` answers it in C instead. It is built next to the guest by
:mod:`sandbox._build` (``_guest/libquickjail_host.so``) and ships in the wheel; a missing
library is an install error, like a missing guest.

The library declares no wasmtime symbol of its own: :func:`clock_time_get` hands it the
addresses of the few wasmtime C API functions it calls, from the library :mod:`._capi` loaded.
Each store's data pointer is the address of its run's :class:`ClockState`, which the function
reads.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path
from typing import Final

from quickjail.sandbox import _capi
from quickjail.sandbox.errors import GuestBuildError

__all__ = [
    "LIBRARY_NAME",
    "MODE_DETERMINISTIC",
    "MODE_REAL",
    "MODE_ZERO",
    "ClockState",
    "clock_time_get",
]

MODE_REAL: Final = 0
"""Real clocks: id 0 is CLOCK_REALTIME (``time.time_ns``), any other id CLOCK_MONOTONIC."""
MODE_DETERMINISTIC: Final = 1
"""``base_ns + reads * 1 ms + virtual_ns`` for any id, counting the read."""
MODE_ZERO: Final = 2
"""Always 0 (compile-only instances have no clock)."""

_GUEST_DIR = Path(__file__).resolve().parent / "_guest"


LIBRARY_NAME: Final = "libquickjail_host.so"
"""The library's file name in ``_guest/`` (``.so`` on macOS too, as Python's extensions)."""


class ClockState(ctypes.Structure):
    """``qj_clock_t`` of ``_host/clock.c``: one store's clock, at the store's data pointer.

    The run owns it and keeps it alive as long as its store; the host library reads and
    writes it while the guest runs (``reads``), the run writes ``virtual_ns`` between calls.
    """

    _fields_ = (
        ("mode", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        ("reads", ctypes.c_uint64),
        ("base_ns", ctypes.c_uint64),
        ("virtual_ns", ctypes.c_uint64),
        ("memory", _capi.Memory),
    )


_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_address = 0


def clock_time_get() -> int:
    """The address of the library's ``clock_time_get`` host function, loading the library
    (and handing it wasmtime's functions) on first use."""
    global _lib, _address
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
            _address = ctypes.cast(lib.qj_clock_time_get, ctypes.c_void_p).value or 0
            _lib = lib  # loaded for good: the linker holds the function's address
        return _address


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
