"""How a thread waiting for a sync run is woken by the worker that ends it."""

from __future__ import annotations

import os
import threading

__all__ = ["Later", "Wake"]


class Later:
    """How a run begun on the caller's thread wakes it when it ends on a worker (after waiting
    for timers): a :class:`Wake` made only when the caller has to wait."""

    __slots__ = ("_done", "_lock", "_wake")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = False
        self._wake: Wake | None = None

    def set(self) -> None:
        with self._lock:
            self._done = True
            wake = self._wake
        if wake is not None:
            wake.set()

    def wait(self) -> None:
        with self._lock:
            if self._done:
                return
            wake = self._wake = Wake()
        wake.wait()


class Wake:
    """How a worker wakes the thread waiting for a sync run: a pipe of its own.

    The worker writes one byte and closes its end; the waiter reads it and closes the other.
    ``os.write`` releases the GIL before it wakes the waiter, which (often scheduled at once on
    the worker's own CPU) then finds the GIL free. Waking it with a lock, with the GIL held,
    made it wait for the GIL and then for the GIL's mutex: two more context switches per run.

    A waiter interrupted (``KeyboardInterrupt``) leaves its end open until the object goes, so
    the worker's late write never meets a closed pipe (no ``EPIPE``, no ``SIGPIPE`` in a
    program that restored its default action). A process out of file descriptors waits on a
    lock instead: the pipe is an optimization, never a new way for a run to fail.
    """

    __slots__ = ("_lock", "_r", "_w")

    def __init__(self) -> None:
        self._lock: threading.Lock | None = None
        try:
            self._r, self._w = os.pipe()
        except OSError:  # EMFILE, ENFILE: many runs waiting at once in a small fd budget
            self._r = self._w = -1
            self._lock = threading.Lock()
            self._lock.acquire()

    def set(self) -> None:
        """Wake the waiter (once; later calls do nothing)."""
        if self._lock is not None:
            if self._lock.locked():
                self._lock.release()
            return
        w, self._w = self._w, -1
        if w < 0:
            return
        try:
            os.write(w, b"\0")
        finally:
            os.close(w)

    def wait(self) -> None:
        """Block until :meth:`set` (without the GIL), then close the read end."""
        if self._lock is not None:
            self._lock.acquire()
            return
        os.read(self._r, 1)  # b"" also ends the wait: the write end closed unwritten
        r, self._r = self._r, -1
        os.close(r)

    def __del__(self) -> None:
        for fd in (self._r, self._w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
