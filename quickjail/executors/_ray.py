"""Runs in Ray actors: :class:`RayExecutor` (the ``quickjail[ray]`` extra).

Each actor is a Python process of the Ray cluster, placed by Ray, with the engine and the
compiled guest loaded once; it runs up to ``concurrency`` sandboxes at once, each an ordinary
in-process run (:class:`~quickjail.executors._serve.ServedRun`) on its own thread. A run is a
streaming-generator call of the actor (``run``): the worker's frames (reports, host calls,
the result) come back through Ray as they happen, and the caller's frames (host-call replies,
``terminate``) go to the run in progress through a second method (``deliver``) in a
concurrency group of its own, so a busy actor still takes them at once. Frames are the
executor wire format (:mod:`quickjail.executors._wire`): Ray carries them as opaque bytes.

On the caller's side one thread per run takes the frames from Ray (no event loop ever waits
on Ray, so asyncio, trio and ``run_sync``'s own loop all work) and hands them to the run's
task. An actor that dies (its process killed, crashed, out of memory, or killed by this
executor because a run on it outlived its deadline) ends the runs it had with status
``error``, reason ``"worker_lost"``, exactly as a dead pool worker does, and is replaced. A
run the caller stops hard is sent ``terminate`` and its actor is killed only if the run goes
on (``KILL_GRACE``), so cancelling one run does not take the others on its actor.

Ray itself is imported only when a :class:`RayExecutor` is made, so ``quickjail.executors``
does not need Ray installed.
"""

from __future__ import annotations

import collections
import os
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any, Final

import anyio
import anyio.lowlevel

from quickjail.executors import _wire
from quickjail.executors._errors import (
    ExecutorClosed,
    ExecutorError,
    QueueFull,
)
from quickjail.executors._ray_owner import RayOwner
from quickjail.executors._remote import MAX_START_FAILURES, RemoteExecutor, WorkerLost
from quickjail.executors._serve import ServedRun
from quickjail.sandbox._execution import _soon

__all__ = [
    "CLOSE_WAIT",
    "CONTROL_CONCURRENCY",
    "DEFAULT_CONCURRENCY",
    "KILL_GRACE",
    "MAX_EARLY_FRAMES",
    "MAX_START_FAILURES",
    "POLL_INTERVAL",
    "STREAM_AHEAD",
    "RayExecutor",
]

DEFAULT_CONCURRENCY: Final = 4
"""Runs one actor executes at once (threads of its ``runs`` concurrency group)."""
CONTROL_CONCURRENCY: Final = 2
"""Threads an actor keeps for the caller's frames (replies, ``terminate``), apart from runs."""
STREAM_AHEAD: Final = 16
"""Frames a run's actor may yield ahead of the caller taking them (Ray's generator
back-pressure); past that the run's next frame waits in the actor."""
POLL_INTERVAL: Final = 0.1
"""Seconds a caller's stream thread waits on Ray before checking whether its run was closed."""
MAX_EARLY_FRAMES: Final = 1024
"""Caller frames an actor keeps for runs it has not started yet (a ``terminate`` can overtake
its run's start); the oldest go first."""
KILL_GRACE: Final = 5.0
"""Seconds a run stopped hard by its caller (cancelled, past its deadline, a protocol
violation) may go on in its actor before the actor itself is killed."""
CLOSE_WAIT: Final = 30.0
"""Seconds ``close()`` waits for the caller-side stream threads of its runs to end. Each ends
within ``POLL_INTERVAL`` of the close; until they have, one might still touch Ray, and a Ray
driver touched after ``ray.shutdown()`` ends its whole process."""
_EXTRA_HINT: Final = "the Ray executor needs Ray: pip install 'quickjail[ray]'"


def _ray() -> ModuleType:
    """The ``ray`` module, imported on first use (with the extra to install when missing)."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(_EXTRA_HINT) from exc
    return ray


class SandboxActor:
    """The Ray actor (``ray.remote`` is applied by the executor): runs :class:`ServedRun`s.

    Plain Python so this module imports without Ray; Ray imports it by name in the actor's
    process, whose engine and compiled guest are loaded once, in ``__init__``.
    """

    def __init__(self) -> None:
        from quickjail.sandbox import warm_up

        warm_up()
        self._lock = threading.Lock()
        self._runs: dict[str, ServedRun] = {}
        self._heads = _wire.StartHeads()
        self._early: collections.OrderedDict[str, list[bytes]] = collections.OrderedDict()

    def ping(self) -> int:
        """The actor's process id (and proof it is up)."""
        return os.getpid()

    def run(self, run_id: str, start: bytes) -> Iterator[bytes]:
        """Run one sandbox; yield its frames as they happen, the ``result`` frame last."""
        frames: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        served = ServedRun(start, frames.put, self._heads)
        with self._lock:
            self._runs[run_id] = served
            early = self._early.pop(run_id, [])
        for caller_frame in early:
            self._hand(served, caller_frame)

        def drive() -> None:
            try:
                served.run()
            finally:
                frames.put(None)

        thread = threading.Thread(target=drive, name="quickjail-ray-run", daemon=True)
        thread.start()
        try:
            while (frame := frames.get()) is not None:
                yield frame
        finally:
            with self._lock:
                self._runs.pop(run_id, None)
            served.stop("the caller is gone")  # a no-op once the run has ended

    def deliver(self, run_id: str, frame: bytes) -> None:
        """Hand a caller's frame (a reply, ``terminate``) to a run, even one not started yet."""
        with self._lock:
            served = self._runs.get(run_id)
            if served is None:
                self._early.setdefault(run_id, []).append(frame)
                while len(self._early) > MAX_EARLY_FRAMES:
                    self._early.popitem(last=False)
                return
        self._hand(served, frame)

    @staticmethod
    def _hand(served: ServedRun, frame: bytes) -> None:
        try:
            served.deliver(frame)
        except _wire.ProtocolError:
            pass  # a frame of ours the run no longer takes: nothing to do


class _Actor:
    """One actor of the executor: its handle, its free run slots, how it died."""

    __slots__ = ("free", "handle", "how", "pid", "served")

    def __init__(self, handle: Any, slots: int) -> None:
        self.handle = handle
        self.free = slots
        self.how: str | None = None  # set once dead (why, as the runs on it are told)
        self.pid: Any = handle.ping.options(concurrency_group="control").remote()  # a ref
        self.served = False  # it has sent a frame: it started fine

    def process_id(self) -> int | None:
        """The actor's process id if it was up long enough to say it (never blocks)."""
        ray = _ray()
        try:
            return int(ray.get(self.pid, timeout=0))
        except Exception:
            return None


class _Waiter:
    """A run waiting for a free slot on an actor."""

    __slots__ = ("actor", "error", "event", "token")

    def __init__(self) -> None:
        self.token = anyio.lowlevel.current_token()
        self.event = anyio.Event()
        self.actor: _Actor | None = None
        self.error: ExecutorError | None = None

    def wake(self) -> None:
        _soon(self.token, self.event.set)


class _Connection:
    """One run's channel to its actor: a thread takes the run's frames from Ray for its task.

    The run's slot on the actor is free again only once the actor's stream has ended (the
    run is over there too) or the actor is gone. ``kill`` stops this run alone when it can:
    it ends the channel at once, sends the run ``terminate``, and kills the actor (and with
    it the other runs on it) only if the run's stream has not ended ``KILL_GRACE`` later.
    """

    def __init__(self, executor: RayExecutor, actor: _Actor) -> None:
        self._executor = executor
        self._actor = actor
        self._run_id = uuid.uuid4().hex
        self._token = anyio.lowlevel.current_token()
        self._cond = threading.Condition()
        self._frames: collections.deque[bytes] = collections.deque()
        self._end: BaseException | None = None
        self._event = anyio.Event()
        self._closed = False  # the caller is done with the channel
        self._killed = False
        self._done = False  # the actor's stream ended (or never started)
        self._released = False
        self._started = False
        self._stream: Any = None  # Ray's ObjectRefGenerator while the stream thread runs

    async def send(self, frame: bytes) -> None:
        actor = self._actor
        if actor.how is not None:
            raise WorkerLost(actor.how)
        if self._stream is None:
            method = actor.handle.run.options(
                concurrency_group="runs", _generator_backpressure_num_objects=STREAM_AHEAD
            )
            self._stream = method.remote(self._run_id, frame)
            self._started = True
            self._executor._spawn(self._pump, "quickjail-ray-stream")
        else:
            self._deliver(frame)

    async def receive(self) -> bytes:
        while True:
            with self._cond:
                if self._frames:
                    frame = self._frames.popleft()
                    self._cond.notify_all()
                    return frame
                if self._end is not None:
                    raise self._end
                self._event = anyio.Event()
            await self._event.wait()

    def stop(self, reason: str) -> None:
        with self._cond:
            started = self._started and not self._done
        if started and self._actor.how is None:
            # cut as a pool's stop is: the caller's result keeps the whole reason
            self._deliver(_wire.pack(_wire.TERMINATE, (reason[: _wire.MAX_REASON_CHARS],)))

    def kill(self) -> None:
        with self._cond:
            if self._killed:
                return
            self._killed = True
            if self._end is None:
                self._end = WorkerLost("the run was stopped hard by its caller")
            self._cond.notify_all()
            started = self._started and not self._done
        _soon(self._token, self._wake)
        if started:
            self._deliver(_wire.pack(_wire.TERMINATE, ("killed",)))
            self._executor._later(KILL_GRACE, self._kill_if_running)

    async def aclose(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            if not self._started:
                self._done = True
        self._settle()

    def _deliver(self, frame: bytes) -> None:
        self._actor.handle.deliver.options(concurrency_group="control").remote(self._run_id, frame)

    def _kill_if_running(self) -> None:
        with self._cond:
            running = not self._done
        if running:
            self._executor._kill(self._actor, f"a run on it went on {KILL_GRACE} s after a kill")

    def _settle(self) -> None:
        """Free the run's slot once the caller is done and the actor's stream has ended."""
        with self._cond:
            if self._released or not (self._done and (self._closed or self._killed)):
                return
            self._released = True
        self._executor._release(self._actor)

    # the stream thread

    def _wake(self) -> None:
        self._event.set()

    def _pump(self) -> None:
        """Take the run's frames from Ray until the stream ends (those after the caller is
        done are dropped), and say how it ended."""
        ray = _ray()
        stream, self._stream = self._stream, None  # this thread's alone: freed before it ends
        ref: Any = None
        end: BaseException
        executor = self._executor
        try:
            while True:
                with self._cond:
                    while len(self._frames) >= STREAM_AHEAD and not (
                        self._closed or self._killed or executor._closed
                    ):
                        self._cond.wait(POLL_INTERVAL)
                if executor._closed:  # its actors are killed; close() waits for this thread
                    end = WorkerLost("the Ray executor was closed during the run")
                    break
                ready, _ = ray.wait([stream], timeout=POLL_INTERVAL)
                if not ready:
                    continue
                try:
                    ref = next(stream)
                except StopIteration:
                    end = WorkerLost("the Ray actor's stream ended before the run's result")
                    break
                frame = ray.get(ref)
                if type(frame) is not bytes or len(frame) > _wire.MAX_FRAME_BYTES:
                    end = _wire.ProtocolError("a frame that is not bytes or over the cap")
                    break
                self._actor.served = True
                with self._cond:
                    if self._closed or self._killed:
                        continue
                    self._frames.append(frame)
                _soon(self._token, self._wake)
        except ray.exceptions.RayActorError as exc:
            end = WorkerLost(self._executor._died(self._actor, exc))
        except ray.exceptions.RayError as exc:  # the actor's run failed, an object was lost
            end = WorkerLost(f"the Ray actor's run failed ({type(exc).__name__}: {_first(exc)})")
        except Exception as exc:  # Ray shut down under the run
            end = WorkerLost(f"the channel to the Ray actor broke ({type(exc).__name__})")
        stream = ref = None  # Ray's generator and last ref freed here, while Ray surely runs
        with self._cond:
            self._done = True
            if self._end is None:
                self._end = end
        _soon(self._token, self._wake)
        self._settle()


class RayExecutor(RemoteExecutor):
    """Runs in Ray actors across a Ray cluster: ``run_code(..., executor=ray_executor)``.

    ``actors`` actors (placed by Ray, ``actor_options`` passed to ``.options()``: resources,
    scheduling strategy, runtime environment) each load the engine and the compiled guest
    once and run up to ``concurrency`` sandboxes at once. The handle, its semantics and the
    :class:`~quickjail.sandbox.CodeResult` are those of an in-process run; the host functions
    and the report callback run in this process and the actor calls them through Ray.

    An actor that dies mid-run (killed, crashed, out of memory) ends its runs with status
    ``error``, ``reason == "worker_lost"``, and is replaced. A run stopped hard by the caller
    (its awaiting task cancelled, no result ``DEADLINE_GRACE`` seconds past its timeout, a
    protocol violation) ends at once and is sent ``terminate``; its actor is killed only if
    the run is still going there ``KILL_GRACE`` seconds later, and with ``concurrency > 1``
    the other runs on it then end ``worker_lost`` too. Runs beyond the free slots wait in a
    FIFO queue of at most ``max_queued``; past that, awaiting one more run raises
    :class:`QueueFull`.

    Ray moves the frames with its own serialization (pickle-based), so the caller trusts the
    cluster's processes: the frames are checked as from a hostile worker, but a compromised
    actor process is not contained the way a ``ProcessPool`` worker is.

    Ray must be initialized (``ray.init(...)``) before the first run, or ``init`` given: the
    executor then calls ``ray.init(**init)`` itself and ``close()`` shuts Ray down. Use it as
    a context manager (``with`` or ``async with``); :meth:`close` is idempotent and kills the
    actors it started (runs still on them end ``worker_lost``).
    """

    _what = "the Ray executor"

    def __init__(
        self,
        actors: int = 1,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_queued: int = 1000,
        actor_options: Mapping[str, Any] | None = None,
        init: Mapping[str, Any] | None = None,
    ) -> None:
        """Args:
            actors: Ray actors to keep.
            concurrency: runs each actor executes at once.
            max_queued: runs that may wait for a free slot (0: none wait).
            actor_options: options for the actors' ``.options()`` (default ``num_cpus=1``).
            init: keyword arguments for ``ray.init`` when Ray is not initialized yet.

        Raises:
            ImportError: Ray is not installed (``pip install 'quickjail[ray]'``).
            ValueError: a count that is not a positive int (``max_queued``: non-negative).
        """
        for name, value, least in (("actors", actors, 1), ("concurrency", concurrency, 1)):
            if type(value) is not int or value < least:
                raise ValueError(f"{name} must be a positive int")
        if type(max_queued) is not int or max_queued < 0:
            raise ValueError("max_queued must be a non-negative int")
        _ray()
        self._size = actors
        self._concurrency = concurrency
        self._max_queued = max_queued
        self._actor_options = {"num_cpus": 1, **(actor_options or {})}
        self._init = dict(init) if init is not None else None
        self._lock = threading.Lock()
        self._actors: list[_Actor] = []
        self._waiting: collections.deque[_Waiter] = collections.deque()
        self._actor_class: Any = None
        self._owner: RayOwner | None = None
        self._started = False
        self._closed = False
        self._failures = 0
        self._broken: str | None = None
        self._threads: set[threading.Thread] = set()  # stream threads and kill timers alive

    @property
    def actors(self) -> int:
        """The number of actors the executor keeps."""
        return self._size

    @property
    def concurrency(self) -> int:
        """Runs each actor executes at once."""
        return self._concurrency

    @property
    def warming(self) -> bool:
        """Whether actors are not started or have not served a run yet: a run awaited now may
        wait for one to load its engine, which its timeout does not count (as in-process)."""
        with self._lock:
            return not self._started or not all(a.served for a in self._actors)

    def actor_pids(self) -> list[int]:
        """The process ids of the live actors (starts them and waits until they are up)."""
        self.start()
        with self._lock:
            actors = list(self._actors)
        return [int(pid) for pid in _ray().get([a.pid for a in actors])]

    def start(self) -> None:
        """Start the actors now rather than on the first run (idempotent)."""
        with self._lock:
            self._check_open()
            self._start_locked()

    async def connect(self) -> _Connection:
        """A connection to an actor with a free slot, waiting in the queue for one.

        Raises:
            ExecutorClosed: the executor was closed.
            QueueFull: ``max_queued`` runs wait already.
            WorkerStartError: ``MAX_START_FAILURES`` actors in a row died before serving a
                run while this run waited (the next run tries again).
        """
        if not self._started:
            await anyio.to_thread.run_sync(self.start)
        with self._lock:
            self._check_open()
            self._revive_locked()
            actor = self._free_locked()
            if actor is not None and not self._waiting:
                actor.free -= 1
                return _Connection(self, actor)
            if len(self._waiting) >= self._max_queued:
                raise QueueFull(
                    f"all {self._size * self._concurrency} run slots are busy and "
                    f"{self._max_queued} runs wait"
                )
            waiter = _Waiter()
            self._waiting.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            with self._lock:
                if waiter in self._waiting:
                    self._waiting.remove(waiter)
                actor, waiter.actor = waiter.actor, None
            if actor is not None:
                self._release(actor)
            raise
        if waiter.error is not None:
            raise waiter.error
        assert waiter.actor is not None
        return _Connection(self, waiter.actor)

    def close(self) -> None:
        """Stop: no more runs, waiting runs raise ExecutorClosed, the actors are killed (runs
        on them end ``worker_lost``), and Ray is shut down if this executor started it.
        Idempotent; in a forked child it only marks the executor closed."""
        if self.forked:  # the actors and Ray are the parent's: leave them be
            self._closed = True
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            actors, self._actors = list(self._actors), []
            waiting = self._fail_waiting(ExecutorClosed, "the Ray executor was closed")
        for waiter in waiting:
            waiter.wake()
        if not self._started:
            return
        ray = _ray()
        for actor in actors:
            actor.how = "the Ray executor was closed during the run"
            if ray.is_initialized():
                ray.kill(actor.handle, no_restart=True)
        self._join_threads()
        if self._owner is not None:
            self._owner.close()

    def _join_threads(self) -> None:
        """Wait (``CLOSE_WAIT`` at most) for the threads that touch Ray for this executor to
        end, so that ``ray.shutdown()`` after ``close()`` never meets one of them: Ray ends
        the whole process of a driver touched after its shutdown. Pending kill timers are
        cancelled (their actors are killed already)."""
        deadline = time.monotonic() + CLOSE_WAIT
        while (left := deadline - time.monotonic()) > 0:
            with self._lock:  # a cancelled timer ends without running its target: drop it
                self._threads = {t for t in self._threads if t.is_alive()}
                threads = [t for t in self._threads if t is not threading.current_thread()]
            if not threads:
                return
            for thread in threads:
                if isinstance(thread, threading.Timer):
                    thread.cancel()
            threads[0].join(left)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        """Run ``target`` on a daemon thread that ``close()`` waits for."""
        self._track(threading.Thread(target=self._tracked(target), name=name, daemon=True))

    def _later(self, delay: float, target: Callable[[], None]) -> None:
        """Run ``target`` after ``delay`` seconds unless the executor is closed first."""
        self._track(threading.Timer(delay, self._tracked(target)))

    def _track(self, thread: threading.Thread) -> None:
        thread.daemon = True
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def _tracked(self, target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())

        return run

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._waiting)} waiting"
        return f"RayExecutor(actors={self._size}, concurrency={self._concurrency}, {state})"

    # under the lock, or from the connections' threads

    def _revive_locked(self) -> None:
        """After actors failed to start: the runs that waited were told; a new run tries
        again with fresh actors (the cause may have passed: a node out of memory)."""
        if self._broken is None:
            return
        self._broken = None
        self._failures = 0
        for _ in range(self._size - len(self._actors)):
            self._actors.append(self._new_actor())

    def _start_locked(self) -> None:
        if self._started:
            return
        ray = _ray()
        if not ray.is_initialized():
            if self._init is None:
                raise ExecutorError("Ray is not initialized: call ray.init() or give init={...}")
            owner = RayOwner(ray.init, ray.shutdown)
            owner.start(self._init)
            self._owner = owner
        self._actor_class = ray.remote(
            concurrency_groups={"runs": self._concurrency, "control": CONTROL_CONCURRENCY},
            max_restarts=0,
            max_task_retries=0,
        )(SandboxActor)
        self._started = True
        for _ in range(self._size):
            self._actors.append(self._new_actor())

    def _new_actor(self) -> _Actor:
        handle = self._actor_class.options(**self._actor_options).remote()
        return _Actor(handle, self._concurrency)

    def _free_locked(self) -> _Actor | None:
        """The live actor with the most free slots, if any has one."""
        best: _Actor | None = None
        for actor in self._actors:
            if actor.how is None and actor.free > 0 and (best is None or actor.free > best.free):
                best = actor
        return best

    def _release(self, actor: _Actor) -> None:
        """A run is done with its slot: the next waiting run takes it, else it is free."""
        with self._lock:
            if actor not in self._actors:
                return  # dead and replaced
            if self._waiting:
                waiter = self._waiting.popleft()
                waiter.actor = actor
                waiter.wake()
                return
            actor.free += 1

    def _kill(self, actor: _Actor, why: str) -> None:
        """Kill an actor (idempotent): its runs end ``worker_lost``, and it is replaced."""
        with self._lock:
            if self._closed:
                return  # close() killed every actor and may have shut Ray down
            if actor.how is None:
                actor.how = f"the Ray actor was killed by the executor ({why})"
        _ray().kill(actor.handle, no_restart=True)
        self._replace(actor)

    def _died(self, actor: _Actor, exc: BaseException) -> str:
        """An actor is gone (Ray said so to one of its runs): what its runs are told."""
        known = actor.process_id()
        with self._lock:
            if actor.how is None:
                pid = f"pid {known}: " if known is not None else ""
                actor.how = (
                    f"the Ray actor died during the run ({pid}{_cause(exc)}); "
                    "the executor replaces it"
                )
            how = actor.how
        self._replace(actor)
        return how

    def _replace(self, actor: _Actor) -> None:
        """A new actor in place of a dead one (unless closed, or actors keep dying at start)."""
        with self._lock:
            if actor not in self._actors or self._closed:
                return
            self._actors.remove(actor)
            if not actor.served:
                if self._start_failed(
                    f"Ray actors in a row died before serving a run (the last: {actor.how})"
                ):
                    return
            else:
                self._failures = 0
            fresh = self._new_actor()
            self._actors.append(fresh)
            while fresh.free and self._waiting:
                fresh.free -= 1
                waiter = self._waiting.popleft()
                waiter.actor = fresh
                waiter.wake()


def _cause(exc: BaseException) -> str:
    """Ray's reason an actor died, in a few words (its message is long and multi-line)."""
    text = str(exc)
    for marker in ("The actor is dead because ", "The actor died because "):
        at = text.find(marker)
        if at >= 0:
            reason = re.split(r"[.,](?:\s|$)", text[at + len(marker) :])[0]
            return reason.replace("`", "").strip()[:200]
    return f"{type(exc).__name__}: {_first(exc)}"


def _first(exc: BaseException) -> str:
    """The first line of an exception's text, shortened."""
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else ""
