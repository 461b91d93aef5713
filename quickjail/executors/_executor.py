"""What every executor shares: the channel to a worker, the executor's open/closed state.

:class:`Connection` is one run's channel to the worker that runs it and :class:`Transport`
where runs go (a pool of processes, a cluster's actors); :class:`ExecutorBase` holds the
open/closed state, the runs waiting for a worker and the count of workers that died before
they served; :func:`host_threads` are the caller's threads serving remote runs' sync host
calls. :class:`~quickjail.executors._remote.RemoteExecution` drives a run over them.
"""

from __future__ import annotations

import collections
import os
import threading
from types import TracebackType
from typing import Any, Final, Protocol, Self

import anyio
import anyio.lowlevel

from quickjail.executors._errors import ExecutorClosed, ExecutorError, WorkerStartError
from quickjail.sandbox._execution import _soon
from quickjail.sandbox._family import Parent, calling
from quickjail.sandbox._hostcall import invoke
from quickjail.sandbox._log import LOGGER
from quickjail.sandbox._threads import Deadlines, Workers
from quickjail.sandbox.host import HostFunction

__all__ = [
    "HOST_THREADS_CAP",
    "MAX_START_FAILURES",
    "Connection",
    "ExecutorBase",
    "Killable",
    "Transport",
    "WorkerLost",
    "host_threads",
    "on_host_thread",
]

HOST_THREADS_CAP: Final = 4096
"""Threads serving the sync host calls of remote runs at most, process-wide: a shared pool
that grows on demand (a blocking call never waits for, or holds up, another run's calls)
and whose idle threads exit; the cap only keeps a runaway from exhausting the process."""
MAX_START_FAILURES: Final = 3
"""Workers (processes, actors) in a row that may die before they serve before the runs waiting
for one raise ``WorkerStartError`` and no more are started until the next run (which tries
again: the cause may have passed)."""


class WorkerLost(Exception):
    """The worker went away during the run (it died, was killed, or its channel broke).

    ``how`` says what is known, e.g. ``"the worker process died (killed by SIGKILL)"``.
    """

    def __init__(self, how: str) -> None:
        super().__init__(how)
        self.how = how


class Connection(Protocol):
    """One remote run's channel to the worker that runs it."""

    async def send(self, frame: bytes) -> None:
        """Send a frame to the worker (the transport frames it)."""
        ...

    async def receive(self) -> bytes:
        """The worker's next frame, size-capped by the transport.

        Raises:
            WorkerLost: the worker is gone (the message says how).
            ProtocolError: the worker broke the framing (a frame over the cap).
        """
        ...

    def stop(self, reason: str) -> None:
        """Ask the worker to stop the run: any thread, never blocks, a no-op before the run's
        start was sent; a gone worker is told by ``receive``."""
        ...

    def kill(self) -> None:
        """Stop the worker hard; any thread; idempotent. ``receive`` then raises WorkerLost."""
        ...

    async def aclose(self) -> None:
        """The run is over: the worker goes back to its pool, or is replaced if killed."""
        ...


class Killable(Protocol):
    def kill(self) -> None: ...


class Transport(Protocol):
    """Where remote runs go: a pool of worker processes, a cluster's actors."""

    async def connect(self) -> Connection:
        """A channel to a worker ready for one run; waits for capacity (the bounded queue)."""
        ...


class ExecutorBase:
    """What the executors share: the open/closed state, the runs waiting for a worker, and the
    context-manager protocol (``with`` or ``async with``; leaving calls :meth:`close`).

    A subclass sets ``_what`` (how errors name it), keeps ``_closed`` and implements
    ``connect`` (the :class:`Transport`) and an idempotent ``close``.
    """

    _what = "the executor"
    _closed = False
    _pid: int  # the process that made it (its workers and threads are that process's)
    _failures = 0  # workers in a row that died before they served
    _broken: str | None = None  # why no more are started until the next run
    _waiting: collections.deque[Any]  # runs waiting for a worker (each has .error, .wake())

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        self = super().__new__(cls)
        self._pid = os.getpid()
        return self

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    @property
    def forked(self) -> bool:
        """True in a child of ``fork`` of the process that made the executor: its workers
        and threads belong to that parent, so it refuses runs here and its ``close`` only
        marks it closed (it must not stop the parent's workers)."""
        return os.getpid() != self._pid

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        raise NotImplementedError

    def _fail_waiting(self, kind: type[ExecutorError], message: str) -> list[Any]:
        """Under the lock: the runs waiting for a worker, each told to raise ``kind(message)``
        (wake them, outside the lock when possible); none wait any more."""
        waiting, self._waiting = list(self._waiting), collections.deque()
        for waiter in waiting:
            waiter.error = kind(message)
        return waiting

    def _start_failed(self, detail: str) -> bool:
        """Under the lock: count a worker that died before it served. At
        ``MAX_START_FAILURES`` in a row the executor is broken until the next run, every
        waiting run raises ``WorkerStartError("<n> <detail>")``, and True is returned."""
        self._failures += 1
        if self._failures < MAX_START_FAILURES:
            return False
        self._broken = f"{self._failures} {detail}"
        LOGGER.error("%s cannot start workers: %s", self._what, self._broken)
        for waiter in self._fail_waiting(WorkerStartError, self._broken):
            waiter.wake()
        return True

    def _check_open(self) -> None:
        if self.forked:
            raise ExecutorError(
                f"{self._what} was made in process {self._pid}, and this process is a fork of "
                "it: its workers and threads are the parent's. Make a new one in this process."
            )
        if self._closed:
            raise ExecutorClosed(f"{self._what} is closed")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.close)


_host_pool: Workers | None = None
_host_pool_lock = threading.Lock()


def _forget_host_pool() -> None:
    """After ``fork``, in the child: the host-call threads are the parent's (none runs here),
    and a lock another thread held at the fork stays held; the child makes its own."""
    global _host_pool, _host_pool_lock
    _host_pool = None
    _host_pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_host_pool)


def host_threads() -> Workers:
    """The threads that call sync host functions for remote runs (created on first use)."""
    global _host_pool
    with _host_pool_lock:
        if _host_pool is None:
            _host_pool = Workers(
                1, HOST_THREADS_CAP, Deadlines(), grow_after=0.0, name="quickjail-host-call"
            )
        return _host_pool


async def on_host_thread(
    fn: HostFunction, args: tuple[Any, ...], caller: Parent | None = None
) -> tuple[bool, Any]:
    """:func:`invoke` on a host-call thread; a cancelled waiter abandons the call (the
    function runs to its end there; its outcome is dropped). Runs the function starts there
    are ``caller``'s (:mod:`quickjail.sandbox._family`)."""
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    box: list[tuple[bool, Any] | BaseException] = []

    def job() -> None:
        mark = calling.set(caller)
        try:
            box.append(invoke(fn, args))
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: the awaiter raises it
            box.append(exc)
        finally:
            calling.reset(mark)
        _soon(token, done.set)

    host_threads().submit(job)
    await done.wait()
    out = box[0]
    if isinstance(out, BaseException):
        raise out
    return out
