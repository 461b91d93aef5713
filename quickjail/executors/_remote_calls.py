"""The caller's side of what a remote run calls back: host calls and the report callback.

:class:`HostCallSide` is a part of :class:`~quickjail.executors._remote.RemoteExecution`: a
call the worker forwards is admitted, decoded and validated by the run's
:class:`~quickjail.sandbox._hostcall.Dispatch`, called (a sync function on the shared
host-call threads, an async one in the run's task group), and answered with a ``reply``
frame, or a ``pause`` frame when the function raised :class:`Pause` and the call can wait
(the dispatch records it: the worker's continuation is checked against it). Reports go to
the report callback in order, on a task of their own, as in-process.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from quickjail.executors import _wire
from quickjail.executors._executor import Connection, WorkerLost, on_host_thread
from quickjail.sandbox import _values
from quickjail.sandbox._execution import task_cancelled
from quickjail.sandbox._family import Stoppable, calling
from quickjail.sandbox._hostcall import Dispatch
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox.host import HostCalls, HostFunction, Pause

__all__ = ["HostCallSide", "reply_frame"]


class HostCallSide:
    """Serving a remote run's host calls (the time spent in them, a sync call in flight) and
    feeding its report callback."""

    if TYPE_CHECKING:
        _opts: RunOptions
        _stop: str | None
        _delivering: bool
        _delivered: int
        _reports: list[Any]
        _poke_event: anyio.Event | None
        _host_busy: int
        _host_since: float
        _host_time: float
        _sync_call: bool
        _in_flight: set[int]
        _fatal: BaseException | None

        def _keep_error(self, exc: BaseException) -> None: ...

        def terminate(self, reason: str = "terminated") -> None: ...

        def adopt(self, child: Stoppable) -> None: ...

        @property
        def host_calls(self) -> HostCalls | None: ...

        def _poke(self) -> None: ...

    async def _serve_host_call(
        self, conn: Connection, dispatch: Dispatch, fn: HostFunction, call_id: int, data: bytes
    ) -> None:
        """Serve one host call as the in-process dispatch does, and reply."""
        self._host_started()
        try:
            frame = await self._serve_call(dispatch, fn, call_id, data)
        finally:
            self._host_ended()
            if not fn.is_async:
                self._sync_call = False
        self._in_flight.discard(call_id)
        try:
            await conn.send(frame)
        except (WorkerLost, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the worker is gone; the receiver sees it

    async def _serve_call(
        self, dispatch: Dispatch, fn: HostFunction, call_id: int, data: bytes
    ) -> bytes:
        """Serve one host call; the frame that answers it."""
        begun = dispatch.begin(fn, data)
        if not isinstance(begun, tuple):
            return reply_frame(call_id, False, begun)
        args, charged = begun
        raw, dispatch.decoded = dispatch.decoded, []  # what a Pause records
        token = calling.set(self)  # runs the function starts are this run's (sandbox._family)
        try:
            if fn.is_async:
                try:
                    value = await fn.fn(*args)
                except anyio.get_cancelled_exc_class() as exc:
                    if task_cancelled():
                        raise  # the run ended: this task is being cancelled
                    return reply_frame(call_id, *dispatch.settle(fn, exc, ok=False))
                except Exception as exc:
                    return self._outcome_frame(dispatch, fn, call_id, raw, False, exc)
                except BaseException as exc:
                    return reply_frame(call_id, *self._interrupted(dispatch, fn, exc))
                return reply_frame(call_id, *dispatch.settle(fn, value, ok=True))
            try:
                # on the shared growing pool, as in-process on the run's guest thread: a
                # blocking host function never waits for, or holds up, another run's calls
                ok, outcome = await on_host_thread(fn, args, self)
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # SystemExit, KeyboardInterrupt from the function
                return reply_frame(call_id, *self._interrupted(dispatch, fn, exc))
            return self._outcome_frame(dispatch, fn, call_id, raw, ok, outcome)
        finally:
            calling.reset(token)
            dispatch.budget.used -= charged

    @staticmethod
    def _outcome_frame(
        dispatch: Dispatch, fn: HostFunction, call_id: int, raw: list[Any], ok: bool, outcome: Any
    ) -> bytes:
        """The frame answering a call that returned or raised: ``reply``, or ``pause`` when
        the function raised :class:`Pause` and the call can wait (the worker's guest parks
        it; the caller keeps the call, to check the worker's continuation against)."""
        if not ok and isinstance(outcome, Pause):
            refused = dispatch.pause(fn, call_id, raw, outcome)
            if refused is None:
                info = _values.encode(outcome.info, path=f"{fn.name}() Pause.info")
                return _wire.pack(_wire.PAUSE, (call_id,), (info,))
            outcome = refused
        return reply_frame(call_id, *dispatch.settle(fn, outcome, ok=ok))

    def _interrupted(
        self, dispatch: Dispatch, fn: HostFunction, exc: BaseException
    ) -> tuple[bool, _values.Reply]:
        """A host function raised SystemExit/KeyboardInterrupt: stop the run; the driver
        re-raises it bare once the run has ended, as in-process."""
        self._keep_error(exc)
        self._fatal = exc
        self.terminate("interrupted")
        return dispatch.settle(fn, RuntimeError("interrupted"), ok=False, record=False)

    def _host_started(self) -> None:
        if self._host_busy == 0:
            self._host_since = time.monotonic()
        self._host_busy += 1

    def _host_ended(self) -> None:
        self._host_busy -= 1
        if self._host_busy == 0:
            self._host_time += time.monotonic() - self._host_since

    async def _until_reports_taken(self, started: float) -> None:
        """After the result: wait until the report callback took every report, but not past
        the run's deadline or a stop (then it is cancelled, and a RuntimeError says so)."""
        timeout = self._opts.timeout
        at = math.inf if timeout is None else started + timeout
        with anyio.move_on_after(max(at - time.monotonic(), 0)):
            while self._delivering and self._stop is None:
                assert self._poke_event is not None
                await self._poke_event.wait()
                self._poke_event = anyio.Event()
        if self._delivering:
            stop = self._stop or "timeout"
            self._keep_error(
                RuntimeError(
                    f"the report callback was cancelled when the run stopped ({stop}) after "
                    f"taking {self._delivered} of {len(self._reports)} reports"
                )
            )

    async def _feed_reports(self, cb: Callable[[Any], Any], receive: Any) -> None:
        async with receive:
            async for value in receive:
                try:
                    out = cb(value)
                    if inspect.isawaitable(out):
                        await out
                except anyio.get_cancelled_exc_class() as exc:
                    if task_cancelled():
                        raise
                    self._keep_error(exc)
                except Exception as exc:
                    self._keep_error(exc)
                except BaseException as exc:
                    self._keep_error(exc)
                    self._fatal = exc
                    self.terminate("interrupted")
                    break
                self._delivered += 1
        self._delivering = False
        self._poke()


def reply_frame(call_id: int, ok: bool, reply: _values.Reply) -> bytes:
    """The ``reply`` frame of a host call's outcome."""
    return _wire.pack(_wire.REPLY, (call_id, ok), (reply,))
