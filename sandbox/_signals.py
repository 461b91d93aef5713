"""Keeping wasmtime's trap handlers installed (``_host/signals.c``).

wasmtime turns a guest's out-of-bounds access into an error with the signal handlers it installs
when the first engine is made. A handler installed later for the same signals, such as Python's
``faulthandler.enable()`` (which Ray calls in ``ray.init``, and ``PYTHONFAULTHANDLER=1`` or
``-X faulthandler`` turn on), takes those signals first, and a guest trap then ends the whole
process. :func:`capture` records wasmtime's handlers right after the first engine is made;
:func:`restore`, called for every new instance, puts them back when something replaced them, and
logs it once (the other handler no longer sees SIGSEGV, SIGBUS, SIGILL or SIGFPE).
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Callable

from quickjail.sandbox import _hostlib
from quickjail.sandbox._log import LOGGER

__all__ = ["capture", "restore"]

_lock = threading.Lock()
_restore: Callable[[], int] | None = None
_warned = False


def capture() -> None:
    """Record the trap signals' handlers now installed (call right after making the first
    engine; later calls keep the first record)."""
    global _restore
    with _lock:
        if _restore is not None:
            return
        lib = _hostlib.library()
        take = lib.qj_signals_capture
        take.restype = ctypes.c_int
        take.argtypes = ()
        if take() != 0:
            LOGGER.error("could not read the trap signals' handlers: guest traps are unguarded")
            return
        put_back = lib.qj_signals_restore
        put_back.restype = ctypes.c_int
        put_back.argtypes = ()
        _restore = put_back


def restore() -> None:
    """Put wasmtime's trap handlers back if another handler replaced them (cheap when not:
    four ``sigaction`` reads)."""
    global _warned
    put_back = _restore
    if put_back is None:
        return
    n = put_back()
    if n == 0:
        return
    if n < 0:
        LOGGER.error("could not put back wasmtime's trap signal handlers")
        return
    level = logging.DEBUG if _warned else logging.WARNING
    _warned = True
    LOGGER.log(
        level,
        "a signal handler installed after quickjail's engine (faulthandler.enable(), ray.init(),"
        " a crash reporter) replaced wasmtime's trap handler for %d signal(s); put back, so a"
        " guest's trap stays an error of its run instead of ending the process",
        n,
    )
