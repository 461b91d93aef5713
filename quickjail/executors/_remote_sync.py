"""``RemoteExecution.run_sync`` without an event loop: the calling thread drives the run.

A run with no async host function and no async report callback needs no event loop: the
calling thread waits on the connection for the worker's frames (or the run's deadline, or a
``terminate``), serves each sync host call on a shared growing pool of threads (one blocking
call never waits for, or holds up, another run's calls; the thread replies itself), and calls
the report callback in order as reports arrive, as the in-process ``run_sync`` does. Frames
are checked, and the result assembled, by the same :class:`RemoteExecution` code as the
event-loop driver; only the waiting differs. It saves an event loop per run and a hop
through it per frame.
"""

from __future__ import annotations

import collections
import time
from typing import Any, Protocol

from quickjail.executors import _wire
from quickjail.executors._remote import (
    RemoteExecution,
    WorkerLost,
    host_threads,
    reply_frame,
)
from quickjail.sandbox import _values
from quickjail.sandbox._family import calling
from quickjail.sandbox._hostcall import Dispatch, invoke
from quickjail.sandbox._program import Program
from quickjail.sandbox._result import CodeResult, ErrorInfo
from quickjail.sandbox.host import HostFunction

__all__ = ["SyncConnection", "SyncDriver", "SyncTransport"]


class SyncConnection(Protocol):
    """A :class:`~quickjail.executors._remote.Connection` a thread can drive."""

    @property
    def started_at(self) -> float | None:
        """``time.monotonic()`` when the run's ``start`` frame was sent, if it was."""
        ...

    def stop(self, reason: str) -> None:
        """Ask the worker to stop the run (never blocks; a gone worker is told by receiving)."""
        ...

    def close_unstarted(self) -> bool:
        """:meth:`close` if ``start`` was not sent (True), else nothing (False), atomically."""
        ...

    def send_sync(self, frame: bytes) -> None:
        """Send a frame from any thread without blocking (raises WorkerLost)."""
        ...

    def receive_sync(self, timeout: float) -> bytes | None:
        """The next frame, or None after ``timeout`` seconds or a :meth:`poke`."""
        ...

    def poke(self) -> None:
        """Wake :meth:`receive_sync` (any thread)."""
        ...

    def kill(self) -> None:
        """As ``Connection.kill``."""
        ...

    def close(self) -> None:
        """As ``Connection.aclose``."""
        ...


class SyncTransport(Protocol):
    """A transport whose runs a thread can drive."""

    def connect_sync(self, start: bytes) -> SyncConnection:
        """A connection at once (never waits): on a free worker with ``start`` sent, or
        waiting for one, when the transport sends ``start``; frames, and a failure while it
        waits, come from ``receive_sync``."""
        ...


class SyncDriver:
    """Drives one :class:`RemoteExecution` from the thread calling ``run_sync``."""

    def __init__(self, ex: RemoteExecution, connect: Any) -> None:
        self._ex = ex
        self._connect = connect
        self._released: collections.deque[int] = collections.deque()  # budget bytes freed

    def drive(self) -> CodeResult:
        ex = self._ex
        ex._begin()
        program = ex._program
        if ex._stop is None and isinstance(program, ErrorInfo):
            return ex._end(CodeResult(status="error", error=program))
        if ex._stop is not None or not isinstance(program, Program):
            return ex._end(CodeResult(status="terminated", reason=ex._stop))
        conn: SyncConnection = self._connect(ex._start_frame())
        with ex._lock:
            ex._wake_sync = conn.poke  # a stop from now on wakes the session
        try:
            result = self._session(conn, program)
        except BaseException:
            conn.kill()  # a failure of our own (or ^C): the worker's run must not go on
            conn.close()
            ex._children.stop("interrupted")  # nor the runs its host functions started
            ex._end_stopped()
            raise
        finally:
            with ex._lock:
                ex._wake_sync = None
        conn.close()
        result = ex._end(result)
        if ex._fatal is not None:
            raise ex._fatal
        return result

    def _session(self, conn: SyncConnection, program: Program) -> CodeResult:
        """Take the run's frames until its result (or its loss, a violation, or a stop before
        it had a worker); the transport sent or sends its ``start``."""
        ex = self._ex
        opts = ex._opts
        dispatch, budget = ex._host_side()
        ex._delivering = opts.report is not None
        stop_sent: float | None = None
        killed = False
        while True:
            now = time.monotonic()
            stopping = ex._timed_out(now)  # a stop, or the timeout (queue time counts)
            with ex._lock:
                soft = ex._timeout_at(now)  # when it passes, if it has not
            if stopping and stop_sent is None:
                if conn.close_unstarted():  # still waiting for a worker: it never runs
                    ex._delivering = False
                    return CodeResult(status="terminated", reason=ex._stop)
                stop_sent = now
                conn.stop(ex._stop or "timeout")
            at = float("inf")
            if not killed:
                # waiting for a worker: as if it started now (the wait then ends early, and
                # the deadline is computed again once it has)
                started = conn.started_at or now
                with ex._lock:
                    at, reason = ex._due(started, stop_sent, now)
                if now >= at:
                    ex._kill_reason = reason
                    conn.kill()  # receiving then says the worker is lost
                    killed = True
                    at = float("inf")
            try:
                frame = conn.receive_sync(min(at, soft) - now)
            except WorkerLost as exc:
                return ex._lost(exc.how)
            except _wire.ProtocolError as exc:
                return ex._violation(conn, str(exc))
            while self._released:
                budget.used -= self._released.popleft()
            if frame is None:
                continue
            try:
                outcome = ex._take(frame, dispatch, budget)
            except _wire.ProtocolError as exc:
                return ex._violation(conn, str(exc))
            if isinstance(outcome, _wire.RemoteResult):
                ex._delivering = False
                return ex._assemble(outcome)
            if isinstance(outcome, tuple):
                self._start_call(conn, dispatch, *outcome)
            elif outcome is not None and ex._delivering:
                self._report(outcome.value)

    def _report(self, value: Any) -> None:
        """Give a report to the callback, on this thread and in order (as in-process)."""
        ex = self._ex
        cb = ex._opts.report
        assert cb is not None
        try:
            cb(value)
        except Exception as exc:
            ex._keep_error(exc)
        except BaseException as exc:
            ex._keep_error(exc)
            ex._fatal = exc
            ex._delivering = False
            ex.terminate("interrupted")
            return
        ex._delivered += 1

    def _start_call(
        self, conn: SyncConnection, dispatch: Dispatch, fn: HostFunction, call_id: int, data: bytes
    ) -> None:
        """Admit and decode a sync host call here; call it on a host-call thread, which
        replies. The bytes its arguments hold are given back to the budget on this thread."""
        ex = self._ex
        begun = dispatch.begin(fn, data)
        if not isinstance(begun, tuple):
            self._finish(conn, call_id, reply_frame(call_id, False, begun))
            return
        args, charged = begun
        raw, dispatch.decoded = dispatch.decoded, []  # what a Pause records
        with ex._lock:
            ex._host_started()

        def job() -> None:
            mark = calling.set(ex)  # runs the function starts are the run's (sandbox._family)
            try:
                try:
                    ok, outcome = invoke(fn, args)
                except BaseException as exc:  # SystemExit, KeyboardInterrupt from the function
                    frame = reply_frame(call_id, *ex._interrupted(dispatch, fn, exc))
                else:
                    frame = ex._outcome_frame(dispatch, fn, call_id, raw, ok, outcome)
            except BaseException as exc:  # encoding the reply failed: the run must not hang
                ex._keep_error(exc)
                failed = _values.encode({"name": "Error", "message": "host call failed"})
                frame = reply_frame(call_id, False, failed)
            finally:
                calling.reset(mark)
                with ex._lock:
                    ex._host_ended()
                self._released.append(charged)
            self._finish(conn, call_id, frame)

        host_threads().submit(job)

    def _finish(self, conn: SyncConnection, call_id: int, frame: bytes) -> None:
        ex = self._ex
        ex._sync_call = False
        ex._in_flight.discard(call_id)
        try:
            conn.send_sync(frame)
        except Exception:
            pass  # the worker is gone; receiving says so
        # no poke: the driver takes the budget back with the next frame, and a deadline it
        # wakes for early is computed again (time in host calls only moves it later)
