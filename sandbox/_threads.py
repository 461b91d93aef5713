"""The threads behind every run: a growing pool of workers with large native stacks, and one
deadline thread.

Guest code runs on worker threads created with a native stack large enough for wasmtime's
wasm stack (see WASM-NOTES: 16 MiB of wasm stack does not fit Python's default thread stack).
A sync host function runs on the worker executing its guest and may block it for as long as it
likes (I/O, or a nested run of its own), so the pool never makes a job wait for a busy worker
for long: it keeps ``core`` threads, adds one whenever a job has waited :data:`GROW_AFTER`
with no worker free, up to a cap, and lets an extra thread exit after :data:`IDLE_EXIT`
seconds without work. A worker blocks for good only inside a guest slice, which holds a live
instance; with a cap above the engine's number of live instances, some worker is always free
to make progress, so re-entrant runs and blocking host functions cannot deadlock the pool.

Deadlines (timeouts, the repeated epoch advances of a stopping run, the pool's growth checks)
are kept by one thread that calls back when each passes.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable

__all__ = ["GROW_AFTER", "IDLE_EXIT", "WORKER_STACK", "Deadlines", "Workers", "start_thread"]

WORKER_STACK = 32 * 1024 * 1024
GROW_AFTER = 0.05  # seconds a job waits with no worker free before the pool adds a thread
IDLE_EXIT = 10.0  # seconds an extra (above core) worker waits for work before it exits
_RETRY_SPAWN = 1.0  # seconds before trying again when the OS refused a new thread
_STACK_LOCK = threading.Lock()  # threading.stack_size is process-wide


def _new_stack_lock() -> None:
    """After ``fork``, in the child: a lock another thread held at the fork stays held."""
    global _STACK_LOCK
    _STACK_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_stack_lock)


def start_thread(target: Callable[[], object], name: str) -> threading.Thread:
    """Start a daemon thread with a :data:`WORKER_STACK` native stack: guest code may run on it.

    Raises:
        RuntimeError: the OS refused a thread.
    """
    with _STACK_LOCK:
        old = threading.stack_size()
        threading.stack_size(WORKER_STACK)
        try:
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
        finally:
            threading.stack_size(old)
    return t


class Deadlines:
    """One thread that calls back when deadlines pass."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: dict[int, tuple[float, Callable[[], None]]] = {}
        self._next = 1
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """How many callbacks are waiting for their deadline."""
        with self._cond:
            return len(self._items)

    def add(self, when: float, fn: Callable[[], None]) -> int:
        """Call ``fn`` on the deadline thread once ``time.monotonic()`` reaches ``when``."""
        with self._cond:
            key = self._next
            self._next += 1
            self._items[key] = (when, fn)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="quickjail-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()
            return key

    def cancel(self, key: int) -> None:
        """Forget a callback that has not been called yet (a no-op otherwise)."""
        with self._cond:
            self._items.pop(key, None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [k for k, (w, _) in self._items.items() if w <= now]
                fns = [self._items.pop(k)[1] for k in due]
                if not fns:
                    wait = min((w for w, _ in self._items.values()), default=now + 3600) - now
                    self._cond.wait(timeout=max(0.0005, wait))
                    continue
            for fn in fns:
                try:
                    fn()
                except Exception:  # one failing callback must not stop every other deadline
                    continue
            del fns


class Workers:
    """A pool of threads with a native stack large enough for the wasm stack.

    Accounting (under ``_lock``): ``_threads`` workers are alive; ``_idle`` of them wait for a
    job no submit has claimed yet; ``_backlog`` jobs sit in the queue with no worker claimed
    for them (only while no worker is idle). Workers are interchangeable: any worker waiting on
    the queue may take any job, so only the counts matter. A job that raises does not end its
    worker (jobs deliver their own outcomes; the pool only has to outlive them).

    Idle workers sleep in a blocking read of a pipe, and a submit that claims one writes one
    byte to wake it (a new thread, or a busy worker taking a backlog job, takes its job
    without a byte; so at most one byte per thread is ever pending and the write never
    blocks). The write releases the GIL before it wakes the worker, so the woken worker (often
    scheduled at once, on the submitter's own CPU) finds the GIL free; waking it from a queue
    or a lock while holding the GIL made it wait for the GIL, then for the GIL's mutex, two
    more context switches per job. Extra threads exit through a reaper on the deadline
    thread, which claims each idle extra worker with an exit token (``None``) once no job was
    submitted for ``idle_exit`` seconds.
    """

    def __init__(
        self,
        core: int,
        cap: int,
        deadlines: Deadlines,
        *,
        grow_after: float = GROW_AFTER,
        idle_exit: float = IDLE_EXIT,
        name: str = "quickjail-worker",
    ) -> None:
        if not 1 <= core <= cap:
            raise ValueError("Workers needs 1 <= core <= cap")
        self.core = core
        self.cap = cap
        self._deadlines = deadlines
        self._grow_after = grow_after
        self._idle_exit = idle_exit
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()  # one byte per queued job (None: exit)
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._backlog = 0
        self._grow_scheduled = False
        self._submits = 0  # jobs submitted so far: the reaper's sign that work came
        self._reap_scheduled = False

    @property
    def threads(self) -> int:
        """How many worker threads are alive."""
        with self._lock:
            return self._threads

    @property
    def idle(self) -> int:
        """How many worker threads wait for work."""
        with self._lock:
            return self._idle

    def submit(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on a worker: an idle one, a new one below ``core``, else the first one
        free; a job that finds none free for :data:`GROW_AFTER` gets a new thread (up to
        ``cap``)."""
        with self._lock:
            self._submits += 1
            self._queue.put(fn)  # first: a thread spawned below takes a job at once
            wake = self._idle > 0
            if wake:
                self._idle -= 1
            elif self._threads < self.core and self._try_spawn():
                pass
            elif self._threads == 0:
                self._queue.get_nowait()  # no thread is alive: the queue held this job alone
                raise RuntimeError("quickjail could not start a worker thread")
            else:
                self._backlog += 1
                self._schedule_grow(self._grow_after)
        if wake:
            os.write(self._wake_w, b"\0")  # after the lock: the GIL is released while it wakes

    def _schedule_grow(self, delay: float) -> None:
        if not self._grow_scheduled and self._threads < self.cap:
            self._grow_scheduled = True
            self._deadlines.add(time.monotonic() + delay, self._grow)

    def _grow(self) -> None:
        """Give every job still waiting for a worker a new thread (up to ``cap``)."""
        with self._lock:
            self._grow_scheduled = False
            while self._backlog > 0 and self._threads < self.cap:
                if not self._try_spawn():
                    self._schedule_grow(_RETRY_SPAWN)
                    return
                self._backlog -= 1

    def _try_spawn(self) -> bool:
        """Start a worker that will take a queued job (under ``_lock``); False if the OS
        refused a thread."""
        try:
            start_thread(self._loop, self._name)
        except RuntimeError:
            return False
        self._threads += 1
        return True

    def _schedule_reap(self, seen: int) -> None:
        """Check again in ``idle_exit`` seconds whether jobs came since ``seen`` (under
        ``_lock``)."""
        if not self._reap_scheduled:
            self._reap_scheduled = True
            self._deadlines.add(time.monotonic() + self._idle_exit, lambda: self._reap(seen))

    def _reap(self, seen: int) -> None:
        """Tell idle extra workers to exit when no job was submitted since the last check."""
        with self._lock:
            self._reap_scheduled = False
            if self._threads <= self.core:
                return
            if self._submits == seen:
                exits = min(self._idle, self._threads - self.core)
                self._idle -= exits
                for _ in range(exits):
                    self._queue.put(None)
            else:
                exits = 0
            if self._threads - exits > self.core:
                self._schedule_reap(self._submits)  # busy extras: look again later
        for _ in range(exits):
            os.write(self._wake_w, b"\0")

    def _loop(self) -> None:
        take = True  # a thread is spawned for a job already queued
        while True:
            if not take:
                os.read(self._wake_r, 1)  # idle: blocks, without the GIL, until claimed
            take = False
            try:
                job = self._queue.get_nowait()
            except queue.Empty:  # a byte with no job (a forked child shares the pipe)
                continue
            if job is None:  # the reaper claimed this worker (and its idle count)
                with self._lock:
                    self._threads -= 1
                return
            try:
                job()
            except BaseException:
                pass  # the job delivers its own outcome; the worker outlives it
            del job  # an idle worker must not keep the last job (and its run) alive
            with self._lock:
                if self._backlog > 0:
                    self._backlog -= 1
                    take = True  # a queued job no worker was claimed for: this one's
                else:
                    self._idle += 1
                    if self._threads > self.core:
                        self._schedule_reap(self._submits)
