"""Guest stacks: a sync run enters the guest on the caller's own thread.

The guest may use up to the engine's ``max_wasm_stack`` of native stack (16 MiB), more than a
thread's default stack, so a sync run used to hand its guest to a worker thread created with a
large stack and wait for it: two cross-thread wake-ups per run, the larger part of a small
run's cost on a busy or virtual machine. Now the calling thread gets a guest stack of its own
(:data:`STACK_SIZE`, mapped once per thread, its pages committed only when touched) and the
host library (``_host/stack.c``) switches to it for each call into the guest; host functions
the guest calls run there too, as they ran on the worker's stack.

- One stack per thread, entered once at a time: a nested run (a host function that runs code
  itself) finds its thread's stack busy and takes the worker thread, as every run did before.
- After a run, the pages below the top :data:`KEEP_RESIDENT` bytes go back to the system: a
  deep recursion leaves no mebibytes resident on an idle thread. A thread's stack is unmapped
  when the thread ends.
- On the process's main thread, Python runs signal handlers (Ctrl-C) only between Python
  steps, and a guest in a loop takes none. While a guest runs there, :class:`MainTicker`
  advances the engine's epoch every :data:`TICK` seconds, so the guest's epoch callback (C,
  ``_host/epoch.c``) runs Python on the main thread: a handler's exception stops the run and
  reaches the caller (:meth:`~quickjail.sandbox._run.Run.interrupted`).
- Linux on x86-64 and aarch64 with CPython before 3.14. Elsewhere, on CPython 3.14 (which
  checks recursion against the thread's own stack bounds) and in a process that imported
  ``greenlet`` (whose switches copy slices of the thread's stack, and a host function may
  switch), :func:`enter` answers None and runs take the worker thread.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any, Final

from quickjail.sandbox import _hostlib
from quickjail.sandbox._threads import WORKER_STACK

__all__ = [
    "KEEP_RESIDENT",
    "STACK_SIZE",
    "TICK",
    "GuestStack",
    "MainTicker",
    "current",
    "enter",
    "leave",
]

STACK_SIZE: Final = WORKER_STACK
"""A guest stack's size: the worker threads' stack size."""
KEEP_RESIDENT: Final = 256 * 1024
"""Bytes at a stack's top left resident after a run (a small run's frames)."""
TICK: Final = 0.05
"""Seconds between epoch advances while a guest runs on the main thread."""

_SUPPORTED: Final = sys.platform.startswith("linux") and sys.version_info < (3, 14)
_local = threading.local()
_functions: Any = None


def _lib() -> Any:
    """The host library's stack functions, typed (loaded once)."""
    global _functions
    if _functions is None:
        lib = _hostlib.library()
        new, free, trim, call = (
            lib.qj_stack_new,
            lib.qj_stack_free,
            lib.qj_stack_trim,
            lib.qj_stack_call,
        )
        new.restype, new.argtypes = ctypes.c_void_p, (ctypes.c_size_t,)
        free.restype, free.argtypes = None, (ctypes.c_void_p, ctypes.c_size_t)
        trim.restype, trim.argtypes = (
            ctypes.c_int,
            (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t),
        )
        call.restype = ctypes.c_void_p
        call.argtypes = (ctypes.c_void_p, ctypes.c_size_t, *(ctypes.c_void_p,) * 6)
        _functions = (new, free, trim, call)
    return _functions


class GuestStack:
    """One thread's guest stack: :meth:`call` runs a C function on it. Closed (unmapped) when
    its thread ends, or by :meth:`close` (idempotent)."""

    __slots__ = ("__weakref__", "_address", "_call", "_free", "_trim", "busy", "running")

    def __init__(self) -> None:
        new, self._free, self._trim, self._call = _lib()
        address = new(STACK_SIZE)
        if not address:
            raise MemoryError("no guest stack could be mapped")
        self._address: int = address
        self.busy = False  # entered by a run on its thread
        self.running = False  # a call is on it: code it calls runs there already

    def call(self, fn: int, *args: Any) -> int:
        """``fn(*args)`` (five pointer-sized arguments; a pointer-sized result) on this stack.
        Releases the GIL, as a ctypes call does. Not while a call is on it (see
        :func:`current`)."""
        if self.running:
            raise RuntimeError("the guest stack is in use by a call below this one")
        self.running = True
        try:
            return int(self._call(self._address, STACK_SIZE, fn, *args) or 0)
        finally:
            self.running = False

    def trim(self) -> bool:
        """Give back the pages below the top :data:`KEEP_RESIDENT` bytes, if the last run went
        that deep; whether it did."""
        return bool(self._address) and self._trim(self._address, STACK_SIZE, KEEP_RESIDENT) == 1

    def close(self) -> None:
        """Unmap the stack (idempotent); only when no call is on it."""
        address, self._address = self._address, 0
        if address:
            self._free(address, STACK_SIZE)

    def __del__(self) -> None:
        self.close()


def current() -> GuestStack | None:
    """The guest stack a call into a guest on this thread switches to, or None: the call runs
    on the stack it is made on (a worker's, or the guest stack itself when a host function
    that the guest called enters a guest again, such as an engine's first probe)."""
    stack: GuestStack | None = getattr(_local, "entered", None)
    return None if stack is None or stack.running else stack


def enter() -> GuestStack | None:
    """This thread's guest stack, entered (calls into the guest switch to it until
    :func:`leave`), or None: the platform has none, it is busy (a nested run) or no memory."""
    if not _SUPPORTED or "greenlet" in sys.modules:
        # greenlets copy slices of a thread's stack on a switch, and a host function may switch
        return None
    stack: GuestStack | None = getattr(_local, "stack", None)
    if stack is None:
        try:
            stack = _local.stack = GuestStack()
        except (MemoryError, OSError):
            return None
    if stack.busy:
        return None
    stack.busy = True
    _local.entered = stack
    return stack


def leave(stack: GuestStack) -> None:
    """Leave ``stack`` (entered by :func:`enter` on this thread) and trim it."""
    _local.entered = None
    stack.busy = False
    stack.trim()


class MainTicker:
    """Advances an engine's epoch every :data:`TICK` seconds while a guest runs on the main
    thread (see the module's docstring). Armed by the first such run and disarmed at the first
    tick with none running: back-to-back runs cost one deadline every tick, not one per run."""

    def __init__(
        self, advance: Callable[[], None], later: Callable[[float, Callable[[], None]], Any]
    ) -> None:
        self._advance = advance
        self._later = later
        self._lock = threading.Lock()
        self._running = 0
        self._armed = False

    def enter(self) -> None:
        """A guest starts running on the main thread: arm the ticker if it is not."""
        with self._lock:
            self._running += 1
            if self._armed:
                return
            self._armed = True
        self._later(TICK, self._tick)

    def leave(self) -> None:
        """That guest stopped running there (the next tick disarms when none is left)."""
        with self._lock:
            self._running -= 1

    def _tick(self) -> None:
        with self._lock:
            if not self._running:
                self._armed = False
                return
        self._advance()
        self._later(TICK, self._tick)
