"""The thread that owns a Ray a :class:`~quickjail.executors.RayExecutor` started itself.

``ray.init`` starts Ray's processes (the GCS, the raylet, the workers) with Linux's
"kill me when my parent dies" signal, and on Linux that parent is the *thread* that called
``ray.init``, not the process. Started on a short-lived thread (an anyio worker thread, a
thread pool's), Ray's processes are killed when that thread ends, and about a minute later
the driver, finding its cluster gone, ends the whole caller's process ("Failed to connect to
GCS ... The program will terminate"). So an executor given ``init=`` calls ``ray.init`` on a
thread of its own that lives until the executor is closed, and calls ``ray.shutdown`` on the
same thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["SHUTDOWN_WAIT", "RayOwner"]

SHUTDOWN_WAIT: Final = 60.0
"""Seconds :meth:`RayOwner.close` waits for ``ray.shutdown`` on the owner thread."""


class RayOwner:
    """Runs ``ray.init(**init)`` on a thread that then waits, and ``ray.shutdown`` there on close.

    Use :meth:`start` once; :meth:`close` is idempotent (and does nothing if never started).
    """

    def __init__(self, ray_init: Callable[..., Any], ray_shutdown: Callable[[], Any]) -> None:
        self._init = ray_init
        self._shutdown = ray_shutdown
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, init: Mapping[str, Any]) -> None:
        """Start Ray on the owner thread and wait until ``ray.init`` returned.

        Raises:
            Exception: whatever ``ray.init`` raised (the thread has then ended).
        """
        if self._thread is not None:
            raise RuntimeError("RayOwner.start was called twice")
        kwargs = dict(init)
        self._thread = threading.Thread(
            target=self._own, args=(kwargs,), name="quickjail-ray-owner", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def close(self) -> None:
        """Shut Ray down on the owner thread and wait for it (at most ``SHUTDOWN_WAIT`` s)."""
        thread = self._thread
        if thread is None or self._stop.is_set():
            return
        self._stop.set()
        if thread is not threading.current_thread():
            thread.join(SHUTDOWN_WAIT)

    def _own(self, init: dict[str, Any]) -> None:
        try:
            self._init(**init)
        except BaseException as exc:  # handed to start()'s caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._stop.wait()
        self._shutdown()
