"""The handle callers hold: :class:`CodeExecution`, and the drivers that run it.

``await execution`` drives the run on the current event loop (any anyio backend): guest slices
run on worker threads, async host calls run in the awaiting task's task group, and the report
callback is called there in order. ``run_sync`` drives it from synchronous code. A run with no
async host function and no report callback runs in worker jobs alone either way: one, or one
per wake-up when it waits for timers.

A run waiting for a timer holds no thread: the driver waits on its event loop (or, for worker
jobs, the deadline thread submits the next slice at the due time), and a stop (timeout,
``terminate``) wakes it at once.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator
from typing import TYPE_CHECKING, Any, Final

from quickjail.sandbox import _engine, _stacks
from quickjail.sandbox._abi import QJ_FAIL, QJ_PENDING
from quickjail.sandbox._blocking import Later, Wake, on_own_loop
from quickjail.sandbox._continuation import Continuation
from quickjail.sandbox._durable import Answer
from quickjail.sandbox._family import adopt, calling
from quickjail.sandbox._hostcall import PendingCall
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program, content_id
from quickjail.sandbox._result import CodeResult, ErrorInfo
from quickjail.sandbox._run import Run
from quickjail.sandbox._values import Reply
from quickjail.sandbox.host import Pause, close_calls, is_async_callable

if TYPE_CHECKING:
    import anyio
    import anyio.from_thread
    import anyio.lowlevel
else:  # a sync run without async callables never needs anyio: import it on first use
    from quickjail.sandbox._lazy import lazy_module

    anyio = lazy_module("anyio", "lowlevel", "from_thread")

__all__ = ["CodeExecution", "task_cancelled"]

_MAIN: Final = threading.main_thread().ident
PAUSED: Final = (0, False, b"")
"""What awaiting an async host call gives when its function paused it (see ``Pause``)."""
Settled = tuple[int, bool, Reply]


class CodeExecution:
    """A run in progress: await it for the :class:`CodeResult`, stream its reports, stop it.

    ``await execution`` (any anyio backend) drives the run on the current event loop: guest
    slices run on worker threads, async host calls run in the current task group. Only one
    task may await it; awaiting it again returns the same result.

    Once the guest is done, the run waits for the ``report`` callback to take every report,
    but not past the run's stop: at its timeout (or ``terminate``) a callback still running is
    cancelled, the reports it did not get stay in ``CodeResult.reports``, a ``RuntimeError``
    in ``host_errors`` says how many it got, and the status stays the guest's own outcome.
    Without a timeout, only ``terminate`` (or cancelling the awaiting task) ends a callback
    that never returns. An async host function that raises the backend's cancellation
    exception while the run is not being cancelled fails that call (its promise rejects in
    the guest) and the run goes on.
    """

    def __init__(
        self,
        engine: _engine.EngineState,
        opts: RunOptions,
        program: Program | ErrorInfo,
        resumed: tuple[Continuation, list[Answer]] | None = None,
    ) -> None:
        self._engine = engine
        self._resumed = resumed  # a paused run's continuation and its answers (resume())
        self._opts = opts
        self._program = program
        self._has_async = isinstance(program, Program) and any(
            f.is_async for f in program.functions
        )
        self._run: Run | None = None
        self._pending_stop: str | None = None
        self._result: CodeResult | None = None
        self._started = False
        self._lock = threading.Lock()
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._wake: anyio.Event | None = None
        self._alone: anyio.CancelScope | None = None  # the host call awaited in the driver
        self._loop_thread: int | None = None
        self._report_cursor_events: list[anyio.Event] = []
        self._content_id: str | None = None
        self._delivered = 0  # reports the report callback has taken (async driver)
        self._delivering = False  # the report callback's task has not drained its stream yet
        adopt(self)  # started by a host function: stops with the run that called it

    @property
    def content_id(self) -> str:
        """sha256 of the build ID, the sources, the module graph and the options."""
        if self._content_id is None:
            self._content_id = content_id(self._opts, self._program, self._engine.guest.build_id)
        return self._content_id

    @property
    def running(self) -> bool:
        """True from the first await until the run ends."""
        return self._started and self._result is None

    @property
    def result(self) -> CodeResult | None:
        """The result once the run ended, else None."""
        return self._result

    @property
    def reports_so_far(self) -> list[Any]:
        """The reports received until now (a copy)."""
        if self._result is not None:
            return list(self._result.reports)
        run = self._run
        return list(run.reports) if run is not None else []

    def terminate(self, reason: str = "terminated") -> None:
        """Stop the run from any thread or task; a no-op once it ended."""
        if not isinstance(reason, str):
            raise TypeError("reason must be a str")
        with self._lock:
            if self._result is not None:
                return
            run = self._run
            if run is None:
                self._pending_stop = self._pending_stop or reason
                return
        run.terminate(reason)

    def __await__(self) -> Generator[Any, None, CodeResult]:
        return self.wait().__await__()

    async def wait(self) -> CodeResult:
        """Drive the run to its end and return the result (same as ``await execution``)."""
        if self._result is not None:
            return self._result
        if self._started:
            raise RuntimeError("this run is already being awaited by another task")
        self._started = True
        return await self._drive()

    async def reports(self) -> AsyncIterator[Any]:
        """Yield each report as it arrives, then end when the run ends.

        Iterating does not drive the run: await the execution in another task (or iterate
        after starting it with a task group).
        """
        index = 0
        while True:
            current = self.reports_so_far
            while index < len(current):
                yield current[index]
                index += 1
            if self._result is not None:
                final = self._result.reports
                while index < len(final):
                    yield final[index]
                    index += 1
                await anyio.lowlevel.checkpoint()  # ending is a cancellation point too
                return
            event = anyio.Event()
            self._report_cursor_events.append(event)
            # re-check after registering so no report slips between the two
            if len(self.reports_so_far) > index or self._result is not None:
                continue
            await event.wait()

    def run_sync(self) -> CodeResult:
        """Drive the run from synchronous code, blocking the caller: on the caller's thread
        (its guest stack, :mod:`._stacks`), or where it has none to spare on a worker thread.
        Slices after a wait for timers run on worker threads."""
        if self._result is not None:
            return self._result
        if self._started:
            raise RuntimeError("this run is already being driven")
        if self._has_async or is_async_callable(self._opts.report):
            # async callables need an event loop: a private one (on a thread of its own when
            # this thread already runs one, as in a notebook)
            on_own_loop(self._wait_quietly, self.terminate)
            assert self._result is not None
            return self._result
        self._started = True
        box: list[CodeResult | BaseException] = []
        stack = _stacks.enter()
        if stack is not None:
            return self._run_here(stack, box)
        wake = Wake()
        try:
            self._engine.workers.submit(self._whole_run_job(box, wake.set, self._sync_report))
        except BaseException:
            wake.set()  # no job will: close the write end here
            wake.wait()
            raise
        self._wait_or_stop(wake.wait)
        return self._outcome_of(box)

    def _wait_or_stop(self, wait: Callable[[], None]) -> None:
        """Wait for the run's end on its worker; an exception of the wait (Ctrl-C's
        ``KeyboardInterrupt``, raised on this thread) stops the run, waits for it to end, and
        is re-raised: an interrupted caller never leaves its guest running."""
        try:
            wait()
        except BaseException:
            self.terminate("interrupted")
            wait()
            raise

    def _run_here(
        self, stack: _stacks.GuestStack, box: list[CodeResult | BaseException]
    ) -> CodeResult:
        """The run's first slice on this thread, on its guest stack ``stack`` (entered); on the
        main thread the epoch ticks meanwhile, so a signal handler's exception stops it."""
        later = Later()
        ticker = self._engine.main_ticker if threading.get_ident() == _MAIN else None
        try:
            if ticker is not None:
                ticker.enter()
            self._whole_run_job(box, later.set, self._sync_report)()
        finally:
            if ticker is not None:
                ticker.leave()
            _stacks.leave(stack)
        # at once, unless the run waits for timers (its next slices: workers)
        self._wait_or_stop(later.wait)
        return self._outcome_of(box)

    async def _wait_quietly(self) -> None:
        """``wait()`` returning nothing: on the main thread, asyncio's runner may ``repr`` its
        task (through the SIGINT handler it installed), and a task holding a large result
        would be rendered whole (a 60 MiB result cost 5 s)."""
        await self.wait()

    def _sync_report(self, value: Any) -> None:
        cb = self._opts.report
        if cb is None:
            return
        try:
            cb(value)
        except Exception as exc:
            if self._run is not None:
                self._run.keep_error(exc)

    def _create_run(self) -> Run | None:
        with self._lock:
            if self._pending_stop is not None:
                self._result = CodeResult(status="terminated", reason=self._pending_stop)
                return None
            if isinstance(self._program, ErrorInfo):
                self._result = CodeResult(status="error", error=self._program)
                return None
            try:
                self._run = Run(self._engine, self._opts, self._program, self._resumed)
            except MemoryError as exc:
                # wasmtime refused a store or instance: the process already holds
                # MAX_LIVE_SANDBOXES, or the machine is out of memory. An outcome, not a raise.
                self._result = CodeResult(
                    status="error",
                    error=ErrorInfo(
                        name="InternalError",
                        message=(
                            f"no sandbox could be created ({exc}); one process runs at most "
                            f"{_engine.MAX_LIVE_SANDBOXES} at once"
                        ),
                    ),
                    host_errors=[exc],
                )
                return None
            self._run.on_stop = self._stopped
            return self._run

    def _finish(self, run: Run, status: int | None, *, release: bool = True) -> CodeResult:
        try:
            result = run.finish(status, release=release)
        except BaseException:
            run.release()  # whatever failed, the run ends and its instance goes
            raise
        with self._lock:
            self._result = result
        self._notify_reports()
        return result

    def _stopped(self) -> None:
        """The run is stopping (any thread): wake the driver, and cancel a host call it awaits
        alone (see ``_await_alone``)."""
        self._poke()
        scope = self._alone
        if scope is not None:
            self._on_loop(scope.cancel)

    def _poke(self) -> None:
        """Wake the driver (from any thread)."""
        wake = self._wake
        if wake is not None:
            self._on_loop(wake.set)

    def _on_loop(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` on the driver's event loop: now on its thread, else soon from there
        (nothing without a loop)."""
        token = self._token
        if token is None:
            return
        if threading.get_ident() == self._loop_thread:
            fn()
        else:
            _soon(token, fn)

    def _notify_reports(self) -> None:
        if (
            self._token is not None
            and self._loop_thread is not None
            and threading.get_ident() != self._loop_thread
        ):
            _soon(self._token, self._notify_reports)  # anyio events are set on their loop
            return
        events, self._report_cursor_events = self._report_cursor_events, []
        for ev in events:
            ev.set()

    async def _in_worker(self, run: Run, work: Callable[[], int]) -> int | None:
        """Run one slice on a worker thread; cancellation stops the guest and propagates."""
        token = self._token
        done = anyio.Event()
        box: list[int | None] = []

        def job() -> None:
            try:
                box.append(run.run_slice(work))
            finally:
                _soon(token, done.set)

        self._engine.workers.submit(job)
        await self._await_job(done)
        return box[0] if box else QJ_FAIL

    async def _await_job(self, done: anyio.Event) -> None:
        """Wait for a worker job; cancelling the waiter stops the run, waits (shielded) for
        the guest to leave the worker, and the cancellation propagates."""
        try:
            await done.wait()
        except BaseException:
            self.terminate("cancelled")
            with anyio.CancelScope(shield=True):
                await done.wait()
            raise

    def _whole_run_job(
        self,
        box: list[CodeResult | BaseException],
        signal: Callable[[], None],
        on_report: Callable[[Any], None],
    ) -> Callable[[], None]:
        """A worker job running the whole run (its first slice, and the next ones when it
        waits for timers); ``signal`` wakes the waiter."""

        def job() -> None:
            try:
                run = self._create_run()
                if run is None:
                    assert self._result is not None
                    box.append(self._result)
                    signal()
                    return
            except BaseException as exc:  # delivered to the waiter
                box.append(exc)
                signal()
                return
            run.on_report_threadsafe = on_report
            self._slice_job(run, run.slice_first, box, signal)

        return job

    def _slice_job(
        self,
        run: Run,
        work: Callable[[], int],
        box: list[CodeResult | BaseException],
        signal: Callable[[], None],
    ) -> None:
        """Run one slice on this worker. When the guest then waits for a timer, the next slice
        is submitted at the due time (or at once when the run stops) and this worker is free
        meanwhile; otherwise the run ends here."""
        ended = True
        try:
            status = run.run_slice(work)
            if status == QJ_PENDING and run.stop_reason is None and not run.dispatch.paused:
                if run.wake_in is not None:
                    self._wake_later(run, run.wake_in, box, signal)
                    ended = False
                    return
                run.terminate("deadlock")  # nothing could ever resume it
            box.append(self._finish(run, status, release=False))
        except BaseException as exc:  # delivered to the waiter
            box.append(exc)
        finally:
            if ended:
                try:
                    signal()  # the sync waiter's wake-up releases the GIL (see Wake)
                finally:
                    run.release()  # freeing the instance is off the waiter's path

    def _wake_later(
        self,
        run: Run,
        delay: float,
        box: list[CodeResult | BaseException],
        signal: Callable[[], None],
    ) -> None:
        """Submit the run's next slice after ``delay`` seconds, or as soon as it is stopped."""
        once = threading.Lock()
        key = 0

        def wake() -> None:
            if not once.acquire(blocking=False):
                return
            self._engine.deadlines.cancel(key)
            run.on_stop = self._poke
            self._engine.workers.submit(
                functools.partial(self._slice_job, run, run.slice_wake, box, signal)
            )

        run.on_stop = wake
        key = self._engine.deadlines.add(time.monotonic() + delay, wake)
        if run.stop_reason is not None:
            wake()  # stopped before on_stop was in place

    def _outcome_of(self, box: list[CodeResult | BaseException]) -> CodeResult:
        out = box[0]
        if isinstance(out, BaseException):
            raise out
        if self._run is not None and self._run.fatal is not None:
            raise self._run.fatal
        return out

    async def _drive_simple(self) -> CodeResult:
        """The whole run in one worker job: no async host functions, no report callback."""
        token = self._token
        done = anyio.Event()
        box: list[CodeResult | BaseException] = []
        job = self._whole_run_job(
            box, lambda: _soon(token, done.set), lambda _value: self._notify_reports()
        )
        self._engine.workers.submit(job)
        await self._await_job(done)
        return self._outcome_of(box)

    async def _drive(self) -> CodeResult:
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        self._wake = anyio.Event()
        if self._opts.report is None and not self._has_async:
            return await self._drive_simple()
        run = self._create_run()
        if run is None:
            assert self._result is not None
            return self._result
        report_cb = self._opts.report
        send_report, receive_report = anyio.create_memory_object_stream[Any](math.inf)

        def on_report(value: Any) -> None:
            _soon(
                self._token,
                self._report_arrived,
                send_report if report_cb is not None else None,
                value,
            )

        run.on_report_threadsafe = on_report
        status: int | None = QJ_FAIL
        try:
            async with anyio.create_task_group() as tg:
                if report_cb is not None:
                    self._delivering = True
                    tg.start_soon(self._deliver_reports, run, report_cb, receive_report)
                else:
                    receive_report.close()
                try:
                    status = await self._slices(run)
                except anyio.get_cancelled_exc_class():
                    # the awaiting task is cancelled while the guest waits (for host calls,
                    # timers): the run ends as terminated, as when a slice is cut short
                    run.terminate("cancelled")
                    raise
                send_report.close()
                await self._until_delivered(run)
                tg.cancel_scope.cancel()
        finally:
            send_report.close()
            await close_calls(run.host_calls)  # what host functions kept for the run
            if self._result is None:
                self._finish(run, status)
        assert self._result is not None
        if run.fatal is not None:
            raise run.fatal
        return self._result

    async def _slices(self, run: Run) -> int | None:
        """Run the guest's slices, starting its async host calls between them, until it is
        done or stopped; returns the last slice's status."""
        assert self._wake is not None
        settled: list[Settled] = []
        in_flight = 0  # async host calls started and not yet handed to the guest (or paused)
        status = await self._in_worker(run, run.slice_first)
        async with anyio.create_task_group() as calls:
            while status == QJ_PENDING and run.stop_reason is None:
                new = run.take_new_calls()
                wake_in = run.wake_in  # the guest's next timer, if it waits for one
                if run.dispatch.paused and in_flight == 0 and not new:
                    break  # parked with paused calls, nothing else in flight: the run pauses
                if len(new) == 1 and in_flight == 0 and wake_in is None:
                    # the guest waits for this one call and nothing else: await it here,
                    # with no task and no wake-up between the call and the next slice
                    run.pause_deadline()
                    outcome = await self._await_alone(run, new[0])
                    run.resume_deadline()
                    if outcome is PAUSED:
                        continue
                    if outcome is None or run.stop_reason is not None:
                        break
                    status = await self._in_worker(
                        run, functools.partial(run.slice_resume, [outcome])
                    )
                    continue
                for call in new:
                    calls.start_soon(self._host_call, run, call, settled)
                    in_flight += 1
                if wake_in is None and in_flight == 0:
                    run.terminate("deadlock")  # nothing could ever resume it
                    break
                if wake_in is None:
                    run.pause_deadline()  # waiting for host calls alone
                with anyio.move_on_after(math.inf if wake_in is None else wake_in):
                    while not settled and run.stop_reason is None:
                        await self._wake.wait()
                        self._wake = anyio.Event()
                if wake_in is None:
                    run.resume_deadline()
                if run.stop_reason is not None:
                    break
                if not settled:
                    status = await self._in_worker(run, run.slice_wake)
                    continue
                batch = [o for o in settled if o is not PAUSED]
                in_flight -= len(settled)
                settled.clear()
                if batch:
                    status = await self._in_worker(run, functools.partial(run.slice_resume, batch))
            calls.cancel_scope.cancel()
        return status

    async def _until_delivered(self, run: Run) -> None:
        """Wait until the report callback took every report, or the run is stopped (its
        deadline passed, ``terminate``); then the caller cancels a callback still running."""
        assert self._wake is not None
        while self._delivering and run.stop_reason is None:
            await self._wake.wait()
            self._wake = anyio.Event()
        if self._delivering:
            run.keep_error(
                RuntimeError(
                    f"the report callback was cancelled when the run stopped "
                    f"({run.stop_reason}) after taking {self._delivered} of "
                    f"{len(run.reports)} reports"
                )
            )

    def _report_arrived(self, send: Any, value: Any) -> None:
        if send is not None:
            try:
                send.send_nowait(value)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
        self._notify_reports()

    async def _deliver_reports(self, run: Run, cb: Callable[[Any], Any], receive: Any) -> None:
        async with receive:
            async for value in receive:
                try:
                    out = cb(value)
                    if inspect.isawaitable(out):
                        await out
                except anyio.get_cancelled_exc_class() as exc:
                    if task_cancelled():
                        raise  # the run stopped: this task is being cancelled
                    run.keep_error(exc)
                except Exception as exc:
                    run.keep_error(exc)
                except BaseException as exc:  # SystemExit, KeyboardInterrupt: as in _host_call
                    run.keep_error(exc)
                    run.fatal = exc
                    run.terminate("interrupted")
                    break
                self._delivered += 1
        self._delivering = False
        self._poke()

    async def _host_call(self, run: Run, call: PendingCall, settled: list[Settled]) -> None:
        """Await one async host call as a task and hand its outcome to the driver."""
        outcome = await self._call_outcome(run, call)
        if outcome is not None:
            settled.append(outcome)
        assert self._wake is not None
        self._wake.set()

    async def _await_alone(self, run: Run, call: PendingCall) -> Settled | None:
        """Await the one call the guest waits for in the driver itself; a stop of the run
        (``_stopped``, any thread) cancels it. None when the run stopped."""
        with anyio.CancelScope() as scope:
            self._alone = scope
            try:
                if run.stop_reason is not None:
                    return None  # stopped before the scope was in place
                return await self._call_outcome(run, call)
            finally:
                self._alone = None
        return None

    async def _call_outcome(self, run: Run, call: PendingCall) -> Settled | None:
        """Await one async host call: ``(call id, ok, value message)`` for the guest,
        ``PAUSED`` when the function paused the call, or None when it stopped the run.

        The backend's cancellation exception only propagates when this task is being
        cancelled (the run stops, the awaiting task is cancelled); raised by a host function
        on its own it fails the call like any exception, else the guest would wait forever.
        ``SystemExit``/``KeyboardInterrupt`` stop the run and reach the awaiter bare, never
        wrapped in a task group's exception group.
        """
        token = calling.set(run)  # runs the function starts are the run's (sandbox._family)
        try:
            value = await call.fn.fn(*call.args)
        except anyio.get_cancelled_exc_class() as exc:
            if task_cancelled():
                raise
            ok, data = run.dispatch.settle(call.fn, exc, ok=False)
        except Pause as exc:
            refused = run.dispatch.pause(call.fn, call.call_id, call.raw, exc)
            if refused is None:
                return PAUSED
            ok, data = run.dispatch.settle(call.fn, refused, ok=False)
        except Exception as exc:
            ok, data = run.dispatch.settle(call.fn, exc, ok=False)
        except BaseException as exc:
            # SystemExit, KeyboardInterrupt: stop the run; the driver re-raises it bare once
            # the run has ended, as for a sync host function
            run.keep_error(exc)
            run.fatal = exc
            run.terminate("interrupted")
            return None
        else:
            ok, data = run.dispatch.settle(call.fn, value, ok=True)
        finally:
            calling.reset(token)
        return call.call_id, ok, data


def task_cancelled() -> bool:
    """Whether the cancellation exception just caught is this task's own: an anyio scope around
    it was cancelled, or asyncio was asked to cancel the task outside anyio (``Task.cancel``,
    as asyncio's runner does on Ctrl-C). Otherwise a callback raised it on its own (a host
    function, a report callback), and it is that callback's failure."""
    if anyio.current_effective_deadline() == -math.inf:
        return True
    asyncio = sys.modules.get("asyncio")  # not imported: no asyncio loop runs this task
    if asyncio is None:
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # another event loop (trio)
        return False
    return task is not None and task.cancelling() > 0


def _soon(token: anyio.lowlevel.EventLoopToken | None, fn: Callable[..., None], *args: Any) -> None:
    """Schedule ``fn(*args)`` on the token's event loop from another thread, without waiting.

    anyio's ``from_thread.run_sync`` blocks the calling thread until the loop has run the
    function; a worker finishing a slice only needs to wake the loop, so it uses the native
    non-blocking primitive of the backend when there is one.
    """
    if token is None:
        return
    native = token.native_token
    try:
        if hasattr(native, "call_soon_threadsafe"):
            native.call_soon_threadsafe(fn, *args)
        elif hasattr(native, "run_sync_soon"):
            native.run_sync_soon(fn, *args)
        else:
            anyio.from_thread.run_sync(fn, *args, token=token)
    except RuntimeError:
        pass  # the loop is gone, and whoever waited on it with it
