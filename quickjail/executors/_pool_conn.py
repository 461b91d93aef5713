"""One run's channel to one pool worker: :class:`PoolConnection` (see :mod:`._pool`).

The worker's reader thread puts the worker's frames here (at most ``MAX_BUFFERED_BYTES``
waiting for the run) and the run's task or thread takes them; the caller's frames go to the
worker from any thread without blocking. A thread-driven run's connection may exist before
its worker does, while it waits in the pool's queue.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from typing import TYPE_CHECKING, Final

import anyio
import anyio.lowlevel

from quickjail.executors import _wire
from quickjail.executors._executor import WorkerLost
from quickjail.sandbox._execution import _soon

if TYPE_CHECKING:
    from quickjail.executors._pool import ProcessPool, _Slot, _Worker

__all__ = ["MAX_BUFFERED_BYTES", "PoolConnection"]

MAX_BUFFERED_BYTES: Final = _wire.MAX_FRAME_BYTES
"""Bytes of a worker's frames held for its run at most; past that its pipe waits."""


class PoolConnection:
    """One run's channel to one worker: the worker's frames wait here for the run's task.

    A thread-driven run's connection may exist before its worker does: it waits in the pool's
    queue, and the thread that frees a worker binds it and sends its ``start`` (the run's
    thread waits for frames all along, and is not woken for that)."""

    def __init__(
        self,
        pool: ProcessPool,
        worker: _Worker | None,
        token: anyio.lowlevel.EventLoopToken | None,
    ) -> None:
        self._pool = pool
        self._worker = worker
        self._slot: _Slot | None = None  # its place in the queue while it waits for a worker
        self._token = token  # None: a thread drives the run (the ``*_sync`` methods)
        self._cond = threading.Condition()
        self._frames: collections.deque[bytes] = collections.deque()
        self._bytes = 0
        self._end: BaseException | None = None
        self._event = anyio.Event() if token is not None else None
        self._closed = False
        self._poked = False
        self._run: int | None = None  # the run's number on its worker, once its start is sent
        self._finished = False  # the worker sent the result and went on to other runs
        self.started_at: float | None = None
        """``time.monotonic()`` when the run's ``start`` was sent."""

    # the worker's reader thread

    def abandon(self) -> None:
        """The worker is being killed: a reader waiting for room drops its frame."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def put(self, frame: bytes) -> None:
        """Queue a frame; blocks while ``MAX_BUFFERED_BYTES`` wait (or until closed)."""
        with self._cond:
            while self._bytes and self._bytes + len(frame) > MAX_BUFFERED_BYTES:
                if self._closed or self._end is not None:
                    return
                self._cond.wait()
            self._frames.append(frame)
            self._bytes += len(frame)
            self._cond.notify_all()
        _soon(self._token, self._wake)

    def fail(self, exc: BaseException) -> None:
        """The worker is gone (WorkerLost) or broke the framing (ProtocolError)."""
        with self._cond:
            if self._end is None:
                self._end = exc
            self._cond.notify_all()
        _soon(self._token, self._wake)

    # the run's task

    def _wake(self) -> None:
        assert self._event is not None
        self._event.set()

    async def send(self, frame: bytes) -> None:
        self.send_sync(frame)

    async def receive(self) -> bytes:
        while True:
            with self._cond:
                frame = self._take_locked()
                if frame is not None:
                    return frame
                self._event = anyio.Event()
            await self._event.wait()

    def _take_locked(self) -> bytes | None:
        if self._frames:
            frame = self._frames.popleft()
            self._bytes -= len(frame)
            self._cond.notify_all()
            return frame
        if self._end is not None:
            raise self._end
        return None

    # the thread driving a run without an event loop (RemoteExecution.run_sync)

    def send_sync(self, frame: bytes) -> None:
        """Send a frame to the worker from any thread (never blocks).

        Raises:
            WorkerLost: the worker is gone, or this run is over (a host call that returns
                after its run ended must not reach the worker's next run).
        """
        with self._cond:  # held while writing: close() cannot hand the worker on meanwhile
            worker = self._worker
            if self._closed or self._finished:
                raise WorkerLost("the run is over")
            if worker is None:
                raise WorkerLost("the run has no worker yet")
            worker.write(frame)
            if self._run is None:  # the first frame is the run's start
                self._run = worker.started()
                self.started_at = time.monotonic()

    def stop(self, reason: str) -> None:
        """Ask the worker to stop this run (any thread; never blocks; nothing before the run's
        start was sent, or after it ended)."""
        with self._cond:
            run = None if self._closed or self._finished else self._run
            worker = self._worker
        if run is not None and worker is not None:
            worker.stop(run, reason)

    def receive_sync(self, timeout: float) -> bytes | None:
        """The worker's next frame, waiting at most ``timeout`` seconds (``math.inf``: no
        limit); None when the wait ended first or :meth:`poke` woke it.

        Raises:
            WorkerLost, ProtocolError: as :meth:`receive`.
        """
        with self._cond:
            if not self._frames and self._end is None and not self._poked:
                self._cond.wait(None if timeout == math.inf else max(timeout, 0.0))
            self._poked = False
            return self._take_locked()

    def finish(self) -> None:
        """The worker sent the run's result and goes on to other runs: nothing more goes to
        it for this run (a late host-call reply must not reach the next one); the frames wait
        to be taken."""
        with self._cond:
            self._finished = True  # not closed: the result is still to be put here

    def close_unstarted(self) -> bool:
        """Close it if the run's ``start`` was not sent (then nothing can send it any more: it
        leaves the queue, or its worker goes back as it was): True; False, with nothing
        changed, if it was."""
        with self._cond:
            if self._run is not None:
                return False
            self._closed = True
        self._pool._done(self)
        return True

    def poke(self) -> None:
        """Wake a :meth:`receive_sync` waiting now or next (any thread)."""
        with self._cond:
            self._poked = True
            self._cond.notify_all()

    def kill(self) -> None:
        if self.close_unstarted():
            return  # nothing ran, and the pool can no longer start it
        # after the result the worker may serve the next run already: it is killed all the
        # same (its run found it broken), and that run is told why
        worker = self._worker
        if worker is not None:
            worker.kill("an earlier run on it found it broken" if self._finished else None)

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """The run is done with the worker: it goes back to the pool (see :meth:`aclose`)."""
        with self._cond:
            self._closed = True
            stray = bool(self._frames) and not self._finished
            self._cond.notify_all()
        if stray and self._worker is not None:  # frames after its end: a protocol break
            self._worker.kill()
        self._pool._done(self)
