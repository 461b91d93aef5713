"""The threads behind every run: workers with large native stacks, and one deadline thread.

Guest code runs on worker threads created with a native stack large enough for wasmtime's
wasm stack (see WASM-NOTES: 16 MiB of wasm stack does not fit Python's default thread stack).
Deadlines (timeouts, and the repeated epoch advances of a stopping run) are kept by one thread
that calls back when each passes.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

__all__ = ["WORKER_STACK", "Deadlines", "Workers"]

WORKER_STACK = 32 * 1024 * 1024


class Workers:
    """Threads with a native stack large enough for the wasm stack; they run guest slices."""

    def __init__(self, max_workers: int) -> None:
        self._max = max_workers
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0

    def submit(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if self._idle == 0 and len(self._threads) < self._max:
                self._spawn()
            else:
                self._idle -= 1
        self._queue.put(fn)

    def _spawn(self) -> None:
        old = threading.stack_size()
        threading.stack_size(WORKER_STACK)
        try:
            t = threading.Thread(target=self._loop, name="quickjail-worker", daemon=True)
            t.start()
        finally:
            threading.stack_size(old)
        self._threads.append(t)

    def _loop(self) -> None:
        while True:
            fn = self._queue.get()
            if fn is None:
                return
            try:
                fn()
            finally:
                with self._lock:
                    self._idle += 1


class Deadlines:
    """One thread that calls back when run deadlines pass."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: dict[int, tuple[float, Callable[[], None]]] = {}
        self._next = 1
        self._thread: threading.Thread | None = None

    def add(self, when: float, fn: Callable[[], None]) -> int:
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
