"""Guest traps reach wasmtime whoever installs a fault handler later (``_host/signals.c``).

On Linux, wasmtime turns a guest's out-of-bounds access into an error of its run with the
SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers it installs when the first engine is made. A handler
installed later, such as Python's ``faulthandler.enable()`` (``PYTHONFAULTHANDLER=1``,
``-X faulthandler``, pytest) or Ray's failure handler (``ray.init()``), sees those signals
first and ends the process at a guest's trap, which a compromised guest (or a forged
continuation) can cause at will. So :func:`capture` records wasmtime's handlers after the first
engine, :func:`guest_code` records each module's compiled image, and :func:`guard`, called for
every new instance, puts the host library's guard on top of a handler that replaced
wasmtime's: faults in guest code go to wasmtime, every other fault to the replaced handler, as
before. The first time it does, a warning is logged.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable

from quickjail.sandbox import _hostlib
from quickjail.sandbox._capi import lib
from quickjail.sandbox._log import LOGGER

__all__ = ["capture", "guard", "guest_code"]

_lock = threading.Lock()
_guard: Callable[[], int] | None = None
_add_code: Callable[[int, int], int] | None = None
_warned = False


def capture(module: int) -> None:
    """Record the trap handlers now installed (wasmtime's: call right after making an engine;
    the first call's record is kept) and the compiled image of ``module``."""
    global _guard, _add_code
    with _lock:
        if _guard is None:
            library = _hostlib.library()
            take = library.qj_signals_capture
            take.restype, take.argtypes = ctypes.c_int, ()
            if take() != 0:
                LOGGER.error("could not read the trap signals' handlers: guest traps are unguarded")
                return
            add = library.qj_signals_guest_code
            add.restype, add.argtypes = ctypes.c_int, (ctypes.c_size_t, ctypes.c_size_t)
            put = library.qj_signals_guard
            put.restype, put.argtypes = ctypes.c_int, ()
            _add_code, _guard = add, put
        guest_code(module)


def guest_code(module: int) -> None:
    """Record where ``module``'s compiled code lies: a fault there is a guest's trap."""
    add = _add_code
    if add is None:
        return
    start, end = ctypes.c_void_p(), ctypes.c_void_p()
    lib.wasmtime_module_image_range(module, ctypes.byref(start), ctypes.byref(end))
    if not start.value or not end.value or add(start.value, end.value) != 0:
        LOGGER.error("could not record the guest's code range: its traps may be unguarded")


def guard() -> None:
    """Put the guard on top of a handler that replaced wasmtime's (cheap when none did: four
    ``sigaction`` reads)."""
    global _warned
    put = _guard
    if put is None:
        return
    n = put()
    if n == 0:
        return
    if n < 0:
        LOGGER.error("could not guard the trap signals: a guest's trap may end the process")
        return
    level = logging.DEBUG if _warned else logging.WARNING
    _warned = True
    LOGGER.log(
        level,
        "a fault handler installed after quickjail's engine (faulthandler.enable(), ray.init(),"
        " a crash reporter) took %d trap signal(s) from wasmtime's; guarded: faults in guest"
        " code go to wasmtime, others to that handler",
        n,
    )
