"""A local pool of worker processes: :class:`ProcessPool` (standard library only).

Each worker is ``python -m quickjail.executors._worker`` started with :mod:`subprocess`: its
engine and compiled guest are loaded once, and it serves one run at a time over framed pipes
(stdin and stdout), with a third pipe for stops (a run without host functions occupies the
thread reading stdin; a stop names the run by its number among the worker's runs). Per
worker, one reader thread takes its frames (each length checked against ``MAX_FRAME_BYTES``
before the body is read, at most ``MAX_BUFFERED_BYTES`` waiting for the run), and the
caller's frames are written by the sending thread when the worker's (non-blocking) pipe has
room, else by one writer thread, so nothing that drives a run ever blocks on a pipe: any event
loop (asyncio, trio), or the thread calling ``run_sync`` (which then waits on the run's
connection itself, with no event loop, when nothing async is involved).

A worker that exits, is killed, or breaks the protocol is reaped and replaced; its run ends
``error`` (see :mod:`quickjail.executors._remote`). A run waits for a free worker in a FIFO
queue of at most ``max_queued`` runs; past that, awaiting a run raises :class:`QueueFull`.
"""

from __future__ import annotations

import collections
import os
import select
import signal
import site
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Final

import anyio
import anyio.lowlevel

from quickjail.executors import _wire
from quickjail.executors._errors import (
    ExecutorClosed,
    ExecutorError,
    QueueFull,
)
from quickjail.executors._pool_conn import MAX_BUFFERED_BYTES, PoolConnection
from quickjail.executors._remote import RemoteExecutor, WorkerLost
from quickjail.sandbox._execution import _soon
from quickjail.sandbox._log import LOGGER

__all__ = ["CLOSE_GRACE", "DEFAULT_MAX_QUEUED", "MAX_BUFFERED_BYTES", "ProcessPool"]

DEFAULT_MAX_QUEUED: Final = 1000
"""Runs that may wait for a free worker before awaiting one more raises ``QueueFull``."""
CLOSE_GRACE: Final = 5.0
"""Seconds ``close()`` gives an idle worker to exit at the end of its stdin before killing it."""
_EXTERNAL_KILLS: Final = frozenset({-signal.SIGKILL, -signal.SIGTERM})
"""How a worker ends when something outside killed it (the OOM killer, an operator): not a
failure to start, so it is replaced without counting toward ``MAX_START_FAILURES``."""
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def _worker_command() -> list[str]:
    """The command starting one worker (tests replace it with a hostile one)."""
    return [sys.executable, "-m", "quickjail.executors._worker"]


def _environment() -> dict[str, str]:
    """The worker's environment: ours, and when quickjail was not imported from an installed
    location (a source checkout on ``sys.path``), its folder appended to ``PYTHONPATH``."""
    env = dict(os.environ)
    installed = {*site.getsitepackages(), site.getusersitepackages()}
    if _PACKAGE_ROOT not in installed:
        path = env.get("PYTHONPATH")
        env["PYTHONPATH"] = (path + os.pathsep if path else "") + _PACKAGE_ROOT
    return env


def _unsent(parts: list[bytes | memoryview], sent: int) -> list[bytes | memoryview]:
    """What is left of ``parts`` once ``sent`` bytes of them were written."""
    rest: list[bytes | memoryview] = []
    for part in parts:
        if sent >= len(part):
            sent -= len(part)
            continue
        rest.append(memoryview(part)[sent:] if sent else part)
        sent = 0
    return rest


def _how(returncode: int | None) -> str:
    if returncode is None:
        return "its channel broke"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    return f"exit code {returncode}"


class _Worker:
    """One worker process, its reader and writer threads."""

    def __init__(self, pool: ProcessPool) -> None:
        self._pool = weakref.ref(pool)
        control, self._control = os.pipe()  # the worker reads stops from ``control``
        env = _environment()
        env[_wire.CONTROL_FD_ENV] = str(control)
        try:
            self.proc = subprocess.Popen(
                _worker_command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                pass_fds=(control,),
                start_new_session=True,  # a ^C to the caller is the caller's to handle
            )
        except BaseException:
            os.close(self._control)
            raise
        finally:
            os.close(control)
        os.set_blocking(self._control, False)
        self._control_lock = threading.Lock()
        self._runs = 0  # start frames written: the worker numbers its runs the same way
        self.ready = False
        self.dead = False
        self.conn: PoolConnection | None = None
        self.how: str | None = None  # why the caller killed it, when it did
        self._killed = False
        self._lock = threading.Lock()
        assert self.proc.stdin is not None
        self._stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self._stdin_fd, False)
        self._out: collections.deque[list[bytes | memoryview] | None] = collections.deque()
        self._out_cond = threading.Condition()
        self._writing = False  # the writer thread is writing a frame: later ones queue
        self._reader = threading.Thread(
            target=self._read, name="quickjail-pool-reader", daemon=True
        )
        self._writer = threading.Thread(
            target=self._write, name="quickjail-pool-writer", daemon=True
        )
        self._reader.start()
        self._writer.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def write(self, frame: bytes) -> None:
        """Send a frame to the worker's stdin without ever blocking: written at once when the
        pipe has room and nothing is queued before it, else queued for the writer thread."""
        head = len(frame).to_bytes(4, "little")
        with self._out_cond:
            if self._killed or self.proc.returncode is not None:
                raise WorkerLost("the worker process is gone")
            if self._out or self._writing:
                self._out.append([head, frame])
                self._out_cond.notify()
                return
            try:
                sent = os.writev(self._stdin_fd, [head, frame])  # the pipe is non-blocking
            except BlockingIOError:
                sent = 0
            except OSError:
                return  # the process is gone: the reader thread reports it
            rest = _unsent([head, frame], sent)
            if rest:
                self._out.append(rest)
                self._out_cond.notify()

    def started(self) -> int:
        """Count a start frame just written; its run's number on this worker."""
        with self._out_cond:
            self._runs += 1
            return self._runs

    def stop(self, run: int, reason: str) -> None:
        """Write a stop for the worker's ``run``-th run on the control pipe, never blocking:
        a frame that does not fit (stops already fill the pipe) or meets a gone process is
        dropped; the run's deadline and kill still hold."""
        frame = _wire.stop_frame(run, reason)  # under PIPE_BUF: written whole or not at all
        with self._control_lock:
            if self._control < 0:
                return
            try:
                os.write(self._control, frame)
            except OSError:
                pass

    def _close_control(self) -> None:
        with self._control_lock:
            fd, self._control = self._control, -1
        if fd >= 0:
            os.close(fd)

    def kill(self, how: str | None = None) -> None:
        """SIGKILL the process (idempotent); the reader thread then reaps and reports it."""
        with self._out_cond:
            if how is not None and self.how is None:
                self.how = how
            self._killed = True
            self._out.append(None)
            self._out_cond.notify()
        try:
            self.proc.kill()
        except OSError:
            pass
        conn = self.conn
        if conn is not None:
            conn.abandon()

    def shutdown(self) -> None:
        """Close its stdin: an idle worker exits."""
        with self._out_cond:
            self._out.append(None)
            self._out_cond.notify()

    def join(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill("the pool was closed")
            self.proc.wait()
        self._reader.join()
        self._writer.join()

    def _write(self) -> None:
        """Write what :meth:`write` could not, waiting for the pipe to have room."""
        stdin = self.proc.stdin
        assert stdin is not None
        poll = select.poll()
        poll.register(self._stdin_fd, select.POLLOUT)
        try:
            while True:
                with self._out_cond:
                    while not self._out:
                        self._out_cond.wait()
                    parts = self._out.popleft()
                    self._writing = parts is not None
                if parts is None:
                    break
                while parts:
                    poll.poll()
                    try:
                        sent = os.writev(self._stdin_fd, parts)
                    except BlockingIOError:
                        continue
                    parts = _unsent(parts, sent)
                with self._out_cond:
                    self._writing = False
        except (OSError, ValueError):
            pass  # the process is gone: the reader reports it
        finally:
            with self._out_cond:
                self._writing = False
            try:
                stdin.close()
            except OSError:
                pass

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        lost: BaseException
        try:
            while True:
                frame = _wire.read_frame(stdout.read)
                if frame is None:
                    lost = self._lost()
                    break
                if not self.ready:
                    if _wire.unpack(frame)[0] != _wire.READY:
                        raise _wire.ProtocolError("a worker that did not start with ready")
                    self.ready = True
                    self._on_ready()
                    continue
                self._hand_over(frame)
        except _wire.ProtocolError as exc:
            lost = exc
            self.kill()
        except (OSError, ValueError) as exc:
            lost = WorkerLost(f"the worker's channel broke ({exc})")
            self.kill()
        self.dead = True  # before the run hears of it: it must not hand this worker back
        self.shutdown()  # the writer thread ends too
        stdout.close()
        self.proc.wait()
        self._close_control()
        conn = self.conn
        if conn is not None:
            if isinstance(lost, WorkerLost) and self.proc.returncode is not None:
                lost = self._lost()
            conn.fail(lost)
        pool = self._pool()
        if pool is not None:
            pool._dead(self)

    def _on_ready(self) -> None:
        pool = self._pool()
        if pool is not None:
            pool._ready(self)

    def _hand_over(self, frame: bytes) -> None:
        """Give a frame to the run on this worker (no reference to it stays on this thread's
        stack while it waits for the next frame: an idle pool can be collected)."""
        conn = self.conn
        if conn is None:
            raise _wire.ProtocolError("a frame while no run was on the worker")
        if _wire.looks_like_result(frame):
            # the worker goes on first (the next run's start is written before the run's own
            # thread is woken: that thread then finds the GIL free)
            pool = self._pool()
            if pool is not None:
                pool._finished(self, conn)
        conn.put(frame)

    def _lost(self) -> WorkerLost:
        self.proc.wait()
        if self.how is not None:
            return WorkerLost(f"the worker process was stopped: {self.how}")
        return WorkerLost(
            f"the worker process died during the run ({_how(self.proc.returncode)}); "
            "the pool replaces it"
        )


class _Slot:
    """A run waiting for a free worker."""

    __slots__ = ("conn", "error", "event", "queued", "start", "token", "worker")

    def __init__(self, conn: PoolConnection | None = None, start: bytes = b"") -> None:
        self.conn = conn  # set: a thread's run, waiting on its connection (connect_sync)
        self.start = start  # then its start frame, sent by whoever hands it a worker
        self.token = anyio.lowlevel.current_token() if conn is None else None
        self.event = anyio.Event() if conn is None else None
        self.worker: _Worker | None = None
        self.error: ExecutorError | None = None
        self.queued = True

    def wake(self) -> None:
        """Tell the run it has a worker (an event loop's), or that it will get none."""
        if self.conn is not None:
            if self.error is not None:
                self.conn.fail(self.error)
        else:
            assert self.event is not None
            _soon(self.token, self.event.set)


class ProcessPool(RemoteExecutor):
    """Runs in a pool of warm worker processes: ``run_code(..., executor=pool)``.

    Each of the ``workers`` processes loads the engine and the compiled guest once and runs
    one sandbox at a time; the host functions and the report callback stay in this process
    and the worker calls them over its pipe. A worker that dies mid-run (killed, crashed, out
    of memory) ends only that run, with status ``error``, ``reason == "worker_lost"`` and a
    message saying how it died; it is replaced and no other run is affected. A worker that
    hangs is killed once its run's timeout has passed by ``DEADLINE_GRACE`` (a run without a
    timeout can only be stopped by ``terminate`` or by cancelling its awaiting task). A
    worker that breaks the protocol ends its run as ``error`` (``"protocol_violation"``) and
    is replaced. A worker goes on to the next waiting run as soon as it has sent a result, so a
    worker that dies just after that, or whose result then fails its checks (it is killed all
    the same), ends the run it went on to as ``worker_lost``, with a message saying so.

    Runs beyond the free workers wait in a FIFO queue of at most ``max_queued`` (plus one per
    worker still starting); when it is full, awaiting one more run raises :class:`QueueFull`
    at once (nothing ran; retry later).

    Workers start on the first run (or :meth:`start`). Use it as a context manager (``with``
    or ``async with``); :meth:`close` is idempotent, kills workers still running a run (those
    runs end ``worker_lost``), and leaves no process behind.
    """

    _what = "the process pool"

    def __init__(self, workers: int | None = None, *, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        """Args:
            workers: worker processes (default: ``os.cpu_count()``).
            max_queued: runs that may wait for a worker (0: none wait).

        Raises:
            TypeError, ValueError: ``workers`` is not a positive int, or ``max_queued`` not a
                non-negative one.
        """
        if workers is None:
            workers = os.cpu_count() or 1
        if type(workers) is not int or type(max_queued) is not int:
            raise TypeError("workers and max_queued must be ints")
        if workers < 1:
            raise ValueError("workers must be at least 1")
        if max_queued < 0:
            raise ValueError("max_queued must not be negative")
        self._size = workers
        self._max_queued = max_queued
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._idle: collections.deque[_Worker] = collections.deque()
        self._waiting: collections.deque[_Slot] = collections.deque()
        self._closed = False
        self._started = False
        self._failures = 0
        self._broken: str | None = None
        self._finalizer = weakref.finalize(self, _kill_all, self._workers, os.getpid())

    @property
    def workers(self) -> int:
        """The number of worker processes the pool keeps."""
        return self._size

    @property
    def pids(self) -> list[int]:
        """The process ids of the live workers (starting, idle or busy)."""
        with self._lock:
            return [w.pid for w in self._workers]

    @property
    def warming(self) -> bool:
        """Whether workers are not started or still starting: a run awaited now may wait for
        one to load its engine, which its timeout does not count (as in-process)."""
        with self._lock:
            return not self._started or not all(w.ready for w in self._workers)

    def start(self) -> None:
        """Start the workers now rather than on the first run (idempotent)."""
        with self._lock:
            self._start_locked()

    async def connect(self) -> PoolConnection:
        """A connection to a free worker, waiting in the queue for one.

        Raises:
            ExecutorClosed: the pool was closed.
            QueueFull: ``max_queued`` runs wait already.
            WorkerStartError: ``MAX_START_FAILURES`` workers in a row died before they
                were ready while this run waited (the next run tries again).
        """
        token = anyio.lowlevel.current_token()
        slot = self._queue(token)
        if isinstance(slot, PoolConnection):
            return slot
        try:
            assert slot.event is not None
            await slot.event.wait()
        except BaseException:
            with self._lock:
                if slot in self._waiting:
                    self._waiting.remove(slot)
                worker, slot.worker = slot.worker, None
            if worker is not None:
                self._release(worker, None)
            raise
        if slot.error is not None:
            raise slot.error
        assert slot.worker is not None
        return self._hand(slot.worker, token)

    def connect_nowait(self) -> PoolConnection | None:
        """A connection to a worker that is free now (and no run waits before this one),
        else None (then :meth:`connect` waits in the queue). Called on the run's loop.

        Raises:
            ExecutorClosed: the pool was closed.
        """
        with self._lock:
            self._check_open()
            if self._idle and not self._waiting and self._broken is None:
                return self._hand(self._idle.popleft(), anyio.lowlevel.current_token())
        return None

    def connect_sync(self, start: bytes) -> PoolConnection:
        """:meth:`connect` for a thread, which never waits here: the connection of a run on a
        free worker with ``start`` sent, or of a run waiting in the queue, whose ``start``
        the thread that frees a worker sends (the run's thread waits for its frames all
        along; see :class:`PoolConnection`). A failure of the pool while it waits
        (``ExecutorClosed``, ``WorkerStartError``) comes from ``receive_sync``; stopping it
        meanwhile is ``close_unstarted``.

        Raises:
            ExecutorClosed, QueueFull: as :meth:`connect`, at once.
        """
        slot = self._queue(None, start)
        if isinstance(slot, _Slot):
            assert slot.conn is not None
            return slot.conn
        try:
            slot.send_sync(start)
        except WorkerLost as exc:  # its process is gone (the reader may have told it first)
            slot.fail(exc)
        return slot

    def _queue(
        self, token: anyio.lowlevel.EventLoopToken | None, start: bytes | None = None
    ) -> PoolConnection | _Slot:
        """A free worker's connection at once, or the slot of a run now waiting for one (with
        ``start``: a thread's run, whose connection waits in the slot)."""
        with self._lock:
            self._check_open()
            self._revive_locked()
            self._start_locked()
            if self._idle and not self._waiting:
                return self._hand(self._idle.popleft(), token)
            starting = sum(1 for w in self._workers if not w.ready)  # soon free
            if len(self._waiting) >= self._max_queued + starting:
                raise QueueFull(
                    f"all {self._size} workers are busy and {self._max_queued} runs wait"
                )
            if start is None:
                slot = _Slot()
            else:
                waiting = PoolConnection(self, None, None)
                slot = _Slot(waiting, start)
                waiting._slot = slot
            self._waiting.append(slot)
            return slot

    def close(self) -> None:
        """Stop the pool: no more runs, waiting runs raise ExecutorClosed, idle workers exit,
        busy ones are killed (their runs end ``worker_lost``). Idempotent; returns once no
        worker process is left."""
        if self.forked:  # the workers are the parent's: leave them be
            self._closed = True
            return
        with self._lock:
            self._closed = True
            workers = list(self._workers)
            waiting = self._fail_waiting(ExecutorClosed, "the process pool was closed")
            self._idle.clear()
        for slot in waiting:
            slot.wake()
        for worker in workers:
            if worker.conn is not None:
                worker.kill("the pool was closed during the run")
            else:
                worker.shutdown()
        for worker in workers:
            worker.join(CLOSE_GRACE)
        with self._lock:
            self._workers.clear()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._idle)} idle"
        return f"ProcessPool(workers={self._size}, {state})"

    # under the lock, or from the workers' threads

    def _revive_locked(self) -> None:
        """After workers failed to start: the runs that waited were told; a new run tries
        again (the cause may have passed: an OOM kill, a full process table)."""
        if self._broken is None:
            return
        self._broken = None
        self._failures = 0
        for _ in range(self._size - len(self._workers)):
            self._workers.append(_Worker(self))

    def _start_locked(self) -> None:
        if self._started or self._closed:
            return
        self._started = True
        for _ in range(self._size):
            self._workers.append(_Worker(self))

    def _hand(self, worker: _Worker, token: anyio.lowlevel.EventLoopToken | None) -> PoolConnection:
        conn = PoolConnection(self, worker, token)
        worker.conn = conn
        return conn

    def _ready(self, worker: _Worker) -> None:
        with self._lock:
            self._failures = 0
        self._release(worker, None)

    def _finished(self, worker: _Worker, conn: PoolConnection) -> None:
        """The worker sent ``conn``'s result (its reader thread calls this): the worker goes
        on at once, before the run's own thread has even woken to read it."""
        conn.finish()
        self._release(worker, conn)

    def _release(self, worker: _Worker, conn: PoolConnection | None) -> None:
        """A run is done with a worker (or a new one is ready): the next waiting run, or idle.
        A waiting thread's run gets its ``start`` sent from here."""
        with self._lock:
            if conn is not None and worker.conn is not conn:
                return
            worker.conn = None
            if worker._killed or worker.dead or worker not in self._workers:
                return  # the reader thread replaces it
            if self._closed:
                worker.shutdown()
                return
            if not self._waiting:
                self._idle.append(worker)
                return
            slot = self._waiting.popleft()
            slot.queued = False
            handed = slot.conn
            if handed is None:
                slot.worker = worker
            else:
                handed._worker = worker
                worker.conn = handed
        if handed is None:
            slot.wake()
            return
        try:
            handed.send_sync(slot.start)
        except WorkerLost as exc:  # it was stopped first (then nothing reads this), or died
            handed.fail(exc)

    def _done(self, conn: PoolConnection) -> None:
        """A run is done with its connection: its worker goes on, or it leaves the queue."""
        with self._lock:
            slot = conn._slot
            if slot is not None and slot.queued:
                slot.queued = False
                try:
                    self._waiting.remove(slot)
                except ValueError:
                    pass  # the queue was failed (closed, broken) meanwhile
                return
            worker = conn._worker
        if worker is not None:
            self._release(worker, conn)

    def _dead(self, worker: _Worker) -> None:
        """A worker's process is gone: replace it (the reader thread calls this)."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
            if worker in self._workers:
                self._workers.remove(worker)
            if self._closed:
                return
            how = _how(worker.proc.returncode)
            if not worker.ready and worker.proc.returncode not in _EXTERNAL_KILLS:
                if self._start_failed(
                    f"worker processes in a row died before they were ready (the last: {how})"
                ):
                    return
            LOGGER.warning("pool worker (pid %d) %s: starting a new one", worker.proc.pid, how)
            self._workers.append(_Worker(self))


def _kill_all(workers: list[_Worker], owner: int) -> None:
    """At garbage collection or exit without close(): no worker outlives the pool (in the
    process that made it: a forked child exiting must not kill its parent's workers)."""
    if os.getpid() != owner:
        return
    for worker in list(workers):
        worker.kill("the pool was collected")
    for worker in list(workers):
        try:
            worker.proc.wait(CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            pass
