"""How synchronous code waits for a run: the wake-ups of a blocked caller's thread
(:class:`Wake`, :class:`Later`) and the private event loop a run with async callables needs
(:func:`on_own_loop`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio
else:  # a sync run without async callables never needs anyio: import it on first use
    from quickjail.sandbox._lazy import lazy_module

    anyio = lazy_module("anyio")

__all__ = ["Later", "Wake", "on_own_loop"]


def on_own_loop(fn: Callable[[], Awaitable[None]], stop: Callable[[str], None]) -> None:
    """Run ``fn`` to its end on an event loop of its own, blocking the caller.

    On this thread when it runs no event loop; otherwise (a sync call from async code, e.g. in
    a notebook, where ``anyio.run`` refuses to start a second loop) on a thread of its own,
    so ``fn``'s async callables run on that thread's loop, not the caller's. An exception of
    the caller's wait (``KeyboardInterrupt``) calls ``stop("interrupted")``, waits for ``fn``
    to end and is re-raised; ``fn``'s own exception is re-raised here.

    Args:
        fn: The coroutine function to run (``CodeExecution`` driving its run).
        stop: Stops the run (``CodeExecution.terminate``).
    """
    if not _runs_event_loop():
        anyio.run(fn)
        return
    failure: list[BaseException] = []

    def drive() -> None:
        try:
            anyio.run(fn)
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=drive, name="quickjail-run-sync", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:
        stop("interrupted")
        thread.join()
        raise
    if failure:
        raise failure[0]


def _runs_event_loop() -> bool:
    """Whether this thread is running an event loop that anyio knows (asyncio or trio)."""
    try:
        anyio.get_current_task()
    except RuntimeError:  # anyio.NoEventLoopError (sniffio's error before anyio 4.11)
        return False
    return True


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
        """Block until :meth:`set`; a wait interrupted (``KeyboardInterrupt``) may wait again."""
        with self._lock:
            if self._done:
                return
            if self._wake is None:
                self._wake = Wake()
            wake = self._wake
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
