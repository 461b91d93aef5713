"""The caller side of a remote run: :class:`RemoteExecution`, over any :class:`Transport`.

The worker runs the sandbox; the caller keeps everything that belongs to the caller: the
host functions (sync ones on a thread, async ones in the awaiting task's task group, calls
concurrent as in-process), the run's ``HostCalls`` (quotas), ``prepare`` (validation) and
``describe`` through the sandbox's own :class:`~quickjail.sandbox._hostcall.Dispatch`, the
report callback, and the real exceptions for ``CodeResult.host_errors``.

The worker is hostile, like a compromised guest: every frame is size-capped by the transport
and checked here (:mod:`quickjail.executors._wire`), its payloads are decoded with the run's
budget, and every output limit holds here too, before anything is decoded: reports against
``max_reports`` and ``max_report_bytes`` (every leg of a durable run), the result against
``max_result_bytes``, the logs against ``max_logs`` and ``max_log_bytes`` (sizes with a
quarter of room for values the worker encodes again: ``_wire.re_encoded``). Anything
else ends the run as ``error`` (reason ``"protocol_violation"``) and kills the worker. The
caller also holds the deadline: no result ``DEADLINE_GRACE`` seconds after the run's timeout
(or ``TERMINATE_GRACE`` after a ``terminate``) and the worker is killed; the run ends
``terminated`` with that reason. A worker that dies ends the run ``error`` (reason
``"worker_lost"``, ``error.name == "WorkerLost"``, the message says how it died).

A host function's ``Pause`` parks the call on the worker; a run that pauses there comes back
with its continuation, checked here before it is the caller's (:mod:`._durable`), and a
resumed run (:meth:`RemoteExecutor.resumption`) carries one to its worker.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
import anyio.lowlevel

from quickjail.executors import _durable, _wire
from quickjail.executors._executor import (
    HOST_THREADS_CAP,
    MAX_START_FAILURES,
    Connection,
    ExecutorBase,
    Killable,
    Transport,
    WorkerLost,
    host_threads,
)
from quickjail.executors._remote_calls import HostCallSide, reply_frame
from quickjail.sandbox import _engine, _values
from quickjail.sandbox._continuation import Continuation
from quickjail.sandbox._durable import Answer
from quickjail.sandbox._execution import CodeExecution, _soon
from quickjail.sandbox._family import Children, Stoppable, adopt
from quickjail.sandbox._hostcall import Dispatch
from quickjail.sandbox._log import RunLog
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program, content_id
from quickjail.sandbox._result import CodeResult, ErrorInfo, PausedCall, RunMetrics
from quickjail.sandbox._run import MAX_HOST_ERRORS
from quickjail.sandbox.errors import TransferError
from quickjail.sandbox.host import HostCalls, HostFunction, close_calls, is_async_callable

if TYPE_CHECKING:
    from quickjail.executors._remote_sync import SyncDriver

__all__ = [
    "DEADLINE_GRACE",
    "HOST_THREADS_CAP",
    "MAX_START_FAILURES",
    "TERMINATE_GRACE",
    "Connection",
    "RemoteExecution",
    "RemoteExecutor",
    "Transport",
    "WorkerLost",
    "host_threads",
    "reply_frame",
]

DEADLINE_GRACE: Final = 2.0
"""Seconds past a run's timeout the caller waits for the worker's own result before killing
it (the worker enforces the timeout itself; this only catches a hung or stopped worker)."""
TERMINATE_GRACE: Final = 2.0
"""Seconds after ``terminate`` the caller waits for the worker's result before killing it."""


class RemoteExecutor(ExecutorBase):
    """An executor whose runs are :class:`RemoteExecution` handles over its transport."""

    def execution(self, opts: RunOptions, program: Program | ErrorInfo) -> CodeExecution:
        """The handle of a run on this executor (the :class:`~quickjail.sandbox.host.Executor`
        protocol; ``run_code(..., executor=...)`` calls it).

        Raises:
            ExecutorClosed: the executor was closed.
        """
        self._check_open()
        return RemoteExecution(cast(Transport, self), opts, program)

    def resumption(
        self, opts: RunOptions, program: Program, cont: Continuation, plan: list[Answer]
    ) -> CodeExecution:
        """The handle of a paused run resumed on this executor (``resume(..., executor=)``):
        the paused calls are answered here, through the run's ``HostCalls``, and the worker
        gets the continuation and the answers (never the key).

        Raises:
            ExecutorClosed: the executor was closed.
            ContinuationError: the continuation's quota state does not fit the quotas.
        """
        self._check_open()
        return RemoteExecution(cast(Transport, self), opts, program, (cont, plan))


_build_id: str | None = None


def _guest_build_id() -> str:
    global _build_id
    if _build_id is None:
        _build_id = _engine._load_guest_info().build_id
    return _build_id


class RemoteExecution(HostCallSide, CodeExecution):
    """A run executing on a worker: the same handle, semantics and result as in-process.

    Cancelling the awaiting task kills the worker's run (the worker is replaced) and the
    cancellation propagates.
    """

    def __init__(
        self,
        transport: Transport,
        opts: RunOptions,
        program: Program | ErrorInfo,
        resumed: tuple[Continuation, list[Answer]] | None = None,
    ) -> None:
        # not CodeExecution.__init__: no engine here; every public method is overridden
        self._transport = transport
        self._opts = opts
        self._program = program
        self._lock = threading.Lock()
        self._result: CodeResult | None = None
        self._started = False
        self._content_id: str | None = None
        self._reports: list[Any] = []
        self._report_cursor_events: list[anyio.Event] = []
        self._stop: str | None = None  # the stop asked for (terminate, cancellation)
        self._kill_reason: str | None = None  # set when the caller killed the worker
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._stop_event: anyio.Event | None = None
        self._host_errors: list[BaseException] = []
        self._log = RunLog()  # the run's log records and id, on this (the caller's) side
        self._fatal: BaseException | None = None
        self._in_flight: set[int] = set()
        self._sync_call = False  # a sync host call is in flight (at most one can be)
        self._host_busy = 0  # host calls the caller is serving now
        self._host_since = 0.0
        self._host_time = 0.0  # seconds spent serving host calls (timeout_includes_host_calls)
        self._delivering = False
        self._delivered = 0
        self._poke_event: anyio.Event | None = None
        self._wait_scope: anyio.CancelScope | None = None  # the driver's wait for a frame
        self._forwarded = 0  # host calls the worker forwarded
        self._counted = (0, 0)  # the dispatch's calls and refusals when the result arrived
        self._wake_sync: Callable[[], None] | None = None  # wakes the sync driver's thread
        self._dispatch: Dispatch | None = None  # the run's host-call side, made once
        self._paused: tuple[Continuation, list[PausedCall]] | None = None  # a paused result's
        self._sent_resume: tuple[bytes, bytes] | None = None  # sealed for transit, answers
        self._reports_before, self._report_bytes = 0, 0  # the run's, every leg (max_report*)
        self._began: float | None = None  # when the run was awaited: its timeout counts from it
        # runs its host functions started (sandbox._family): stopped when this run is
        self._children = Children()
        adopt(self)  # started by a host function: stops with the run that called it
        if resumed is not None and isinstance(program, Program):
            cont, plan = resumed
            self._reports_before, self._report_bytes = _durable.reports_before(cont)
            answers = _durable.answer_in_caller(cont, plan, program, self._host_side()[0])
            self._sent_resume = (_durable.seal_for_transit(cont), answers)

    @property
    def content_id(self) -> str:
        """sha256 of the build ID, the sources, the module graph and the options."""
        if self._content_id is None:
            self._content_id = content_id(self._opts, self._program, _guest_build_id())
        return self._content_id

    @property
    def reports_so_far(self) -> list[Any]:
        """The reports received until now (a copy)."""
        if self._result is not None:
            return list(self._result.reports)
        return list(self._reports)

    def terminate(self, reason: str = "terminated") -> None:
        """Stop the run from any thread or task; a no-op once it ended."""
        if not isinstance(reason, str):
            raise TypeError("reason must be a str")
        with self._lock:
            if self._result is not None or self._stop is not None:
                return
            self._stop = reason
            token = self._token
            wake = self._wake_sync
        _soon(token, self._poke)
        if wake is not None:
            wake()
        self._children.stop(reason)

    @property
    def host_calls(self) -> HostCalls | None:
        return None if self._dispatch is None else self._dispatch.calls

    def adopt(self, child: Stoppable) -> None:
        """``child`` was started by one of this run's host functions: it stops with this run
        (at once, when this run is already stopping)."""
        with self._lock:
            self._children.adopt(child, self._stop if self._result is None else None)

    def run_sync(self) -> CodeResult:
        """Drive the run from synchronous code (blocks the caller): from this thread when the
        transport allows it and nothing async is involved, else on a private event loop."""
        if self._result is not None:
            return self._result
        if self._started:
            raise RuntimeError("this run is already being driven")
        sync = getattr(self._transport, "connect_sync", None)
        if sync is not None and not self._needs_loop():
            self._started = True
            return _sync_driver()(self, sync).drive()
        if not _in_event_loop():
            anyio.run(self._wait_quietly)
        else:  # called (blocking) from async code: as in-process, it still works
            failed: list[BaseException] = []

            def drive() -> None:
                try:
                    anyio.run(self._wait_quietly)
                except BaseException as exc:
                    failed.append(exc)

            thread = threading.Thread(target=drive, name="quickjail-run-sync")
            thread.start()
            thread.join()
            if failed:
                raise failed[0]
        assert self._result is not None
        return self._result

    def _needs_loop(self) -> bool:
        """Whether driving this run takes an event loop: an async host function, or an async
        report callback (else ``run_sync`` drives it from the calling thread)."""
        program = self._program
        if isinstance(program, Program) and any(f.is_async for f in program.functions):
            return True
        return is_async_callable(self._opts.report)

    # the driver, on the awaiting task's event loop

    def _poke(self) -> None:
        """Wake the driver: its wait for a worker, for a frame, for the report callback (on
        the loop)."""
        if self._wait_scope is not None:
            self._wait_scope.cancel()
        if self._stop_event is not None:
            self._stop_event.set()
        if self._poke_event is not None:
            self._poke_event.set()

    def _notify_reports(self) -> None:
        events, self._report_cursor_events = self._report_cursor_events, []
        for event in events:
            event.set()

    def _end_stopped(self) -> None:
        """End a run its driver left early (cancelled, or a failure of our own) as
        ``terminated``, with what arrived until then; a no-op once it has a result."""
        if self._result is None:
            self._end(
                CodeResult(
                    status="terminated",
                    reason=self._stop or "cancelled",
                    reports=list(self._reports),
                    host_errors=list(self._host_errors),
                )
            )

    def _end(self, result: CodeResult) -> CodeResult:
        if result.run_id is None:
            result = dataclasses.replace(result, run_id=self._log.run_id)
        with self._lock:
            self._result = result
        self._notify_reports()
        return result

    def _keep_error(self, exc: BaseException) -> None:
        if len(self._host_errors) < MAX_HOST_ERRORS:
            exc.__traceback__ = None  # do not pin the frames (they hold the arguments)
            self._host_errors.append(exc)

    async def _drive(self) -> CodeResult:
        self._begin()
        self._token = anyio.lowlevel.current_token()
        self._stop_event = anyio.Event()
        self._poke_event = anyio.Event()
        if self._stop is None and isinstance(self._program, ErrorInfo):
            return self._end(CodeResult(status="error", error=self._program))
        program = self._program
        start = self._start_frame()
        conn = await self._connect() if isinstance(program, Program) else None
        if conn is None or not isinstance(program, Program):
            return self._end(CodeResult(status="terminated", reason=self._stop))
        try:
            result = await self._session(conn, program, start)
        except BaseException:
            conn.kill()  # cancelled (or a failure of our own): the worker's run must not go on
            with anyio.CancelScope(shield=True):
                await conn.aclose()
            await close_calls(self.host_calls)
            self._end_stopped()
            raise
        await close_calls(self.host_calls)  # what host functions kept for the run
        with anyio.CancelScope(shield=True):
            await conn.aclose()
        result = self._end(result)
        if self._fatal is not None:
            raise self._fatal
        return result

    def _start_frame(self) -> bytes:
        """The run's ``start`` frame, built before a worker waits for it (empty when there is
        no program to send); a failure to build it ends the run first."""
        if not isinstance(self._program, Program):
            return b""
        try:
            return _wire.start_frame(self._opts, self._program, self._sent_resume)
        except BaseException:
            self._end_stopped()
            raise

    async def _connect(self) -> Connection | None:
        """A connection from the transport, or None when the run was stopped first."""
        now = getattr(self._transport, "connect_nowait", None)
        if now is not None and self._stop is None:
            conn: Connection | None = now()  # a free worker at once: no waiting to watch
            if conn is not None:
                return conn
        box: list[Connection] = []
        errors: list[Exception] = []
        try:
            async with anyio.create_task_group() as tg:

                async def connect() -> None:
                    try:
                        box.append(await self._transport.connect())
                    except Exception as exc:  # raised bare below, not in an exception group
                        errors.append(exc)
                    tg.cancel_scope.cancel()

                tg.start_soon(connect)
                while not self._timed_out(time.monotonic()):
                    assert self._stop_event is not None
                    with anyio.move_on_after(self._timeout_at(time.monotonic()) - time.monotonic()):
                        await self._stop_event.wait()
                        self._stop_event = anyio.Event()
                tg.cancel_scope.cancel()
        except BaseException:
            if box:  # cancelled just as a worker was found: it goes back as it was
                with anyio.CancelScope(shield=True):
                    await box[0].aclose()
            raise
        if self._stop is not None:
            if box:
                with anyio.CancelScope(shield=True):
                    await box[0].aclose()  # never started: the worker goes back as it was
            return None
        if errors:
            raise errors[0]
        return box[0]

    def _host_side(self) -> tuple[Dispatch, _values.DecodeBudget]:
        """The run's dispatch (its ``HostCalls``: quotas, made once) and decode budget."""
        if self._dispatch is None:
            opts, program = self._opts, self._program
            budget = _values.DecodeBudget.for_run(opts.memory_limit_bytes)
            budget.limit = _wire.re_encoded(budget.limit)  # values the worker encoded again
            functions = program.functions if isinstance(program, Program) else ()
            calls = opts.host.calls() if opts.host is not None and functions else None
            self._dispatch = Dispatch(functions, calls, self._keep_error, budget, log=self._log)
        return self._dispatch, self._dispatch.budget

    async def _session(self, conn: Connection, program: Program, start: bytes) -> CodeResult:
        opts = self._opts
        dispatch, budget = self._host_side()
        cb = opts.report
        started = time.monotonic()
        try:
            await conn.send(start)
        except WorkerLost as exc:
            return self._lost(exc.how)
        if not program.functions and cb is None:  # nothing to serve alongside: no tasks
            outcome = await self._receive(conn, dispatch, None, None, budget, started)
        else:
            send_report, receive_report = anyio.create_memory_object_stream[Any](math.inf)
            with send_report, receive_report:
                async with anyio.create_task_group() as tg:
                    if cb is not None:
                        self._delivering = True
                        tg.start_soon(self._feed_reports, cb, receive_report)
                    async with anyio.create_task_group() as host_calls:
                        outcome = await self._receive(
                            conn, dispatch, host_calls, send_report, budget, started
                        )
                        host_calls.cancel_scope.cancel()
                    send_report.close()
                    if isinstance(outcome, _wire.RemoteResult):
                        await self._until_reports_taken(started)
                    tg.cancel_scope.cancel()
        if isinstance(outcome, CodeResult):
            return outcome
        return self._assemble(outcome)

    async def _receive(
        self,
        conn: Connection,
        dispatch: Dispatch,
        host_calls: anyio.abc.TaskGroup | None,
        send_report: Any,
        budget: _values.DecodeBudget,
        started: float,
    ) -> _wire.RemoteResult | CodeResult:
        """Handle the worker's frames until its result, its loss or a violation; between
        frames, send a requested stop to the worker and kill a worker that outlives the run's
        deadline (+ ``DEADLINE_GRACE``) or a stop (+ ``TERMINATE_GRACE``). A stop wakes the
        wait by cancelling its scope (:meth:`_poke`), so no watcher task is needed."""
        stop_sent: float | None = None
        killed = False
        while True:
            now = time.monotonic()
            if self._timed_out(now) and stop_sent is None:
                stop_sent = now
                conn.stop(self._stop or "")
                continue
            at = math.inf
            if not killed:
                at, reason = self._due(started, stop_sent, now)
                if now >= at:
                    self._kill_reason = reason
                    conn.kill()  # receiving then says the worker is lost
                    killed = True
                    at = math.inf
            frame: bytes | None = None
            with anyio.move_on_after(min(at, self._timeout_at(now)) - now) as scope:
                self._wait_scope = scope
                try:
                    frame = await conn.receive()
                except WorkerLost as exc:
                    return self._lost(exc.how)
                except _wire.ProtocolError as exc:
                    return self._violation(conn, str(exc))
                finally:
                    self._wait_scope = None
            if frame is None:
                continue  # the deadline passed or a stop came: look again
            try:
                outcome = self._take(frame, dispatch, budget)
            except _wire.ProtocolError as exc:
                return self._violation(conn, str(exc))
            if isinstance(outcome, _wire.RemoteResult):
                return outcome
            if outcome is None:
                continue
            if isinstance(outcome, tuple):
                assert host_calls is not None  # _take admits calls only to table functions
                fn, call_id, data = outcome
                host_calls.start_soon(self._serve_host_call, conn, dispatch, fn, call_id, data)
            elif self._delivering:
                send_report.send_nowait(outcome.value)

    def _take(
        self, frame: bytes, dispatch: Dispatch, budget: _values.DecodeBudget
    ) -> _wire.RemoteResult | tuple[HostFunction, int, bytes] | _Report | None:
        """Check one of the worker's frames: its result, a host call to serve, a report (kept
        here, for the caller to deliver).

        Raises:
            ProtocolError: the frame breaks the protocol.
        """
        limits = self._opts.output_limits
        kind, fields, payloads = _wire.unpack(frame)
        if kind == _wire.REPORT:
            if fields or len(payloads) != 1:
                raise _wire.ProtocolError("a malformed report frame")
            if self._reports_before + len(self._reports) >= limits.max_reports:
                raise _wire.ProtocolError("more reports than max_reports")
            self._charge_reports(len(payloads[0]))
            value = _decode(payloads[0], budget)
            self._reports.append(value)
            self._notify_reports()
            return _Report(value)
        if kind == _wire.CALL:
            fn, call_id = self._check_call(fields, payloads, dispatch)
            self._forwarded += 1
            self._in_flight.add(call_id)
            self._sync_call = self._sync_call or not fn.is_async
            return fn, call_id, payloads[0]
        if kind == _wire.RESULT:
            if len(payloads) > 1:
                self._charge_reports(len(payloads[1]))  # the reports not streamed yet
            out = _wire.result_from(fields, payloads, budget, limits)
            if (
                self._reports_before + len(self._reports) + len(out.tail_reports)
                > limits.max_reports
            ):
                raise _wire.ProtocolError("more reports than max_reports")
            if len(out.logs) > limits.max_logs + 1:  # + the "logs dropped" note
                raise _wire.ProtocolError("more logs than max_logs")
            self._counted = (dispatch.count, dispatch.refusals)  # as the result arrived
            if out.sealed is not None:
                assert isinstance(self._program, Program)  # a run without one sends nothing
                count, refusals = self._counts(out)
                self._paused = _durable.accept_paused(
                    out.sealed,
                    build_id=_guest_build_id(),
                    opts=self._opts,
                    program=self._program,
                    dispatch=dispatch,
                    host_calls=count,
                    refusals=refusals,
                )
            return out
        raise _wire.ProtocolError(f"an unexpected {kind!r} frame")

    def _charge_reports(self, nbytes: int) -> None:
        """Count a report payload's bytes: the run's reports, every leg, are held to
        ``max_report_bytes`` here too (a worker past it breaks the protocol)."""
        self._report_bytes += nbytes
        if self._report_bytes > _wire.re_encoded(self._opts.output_limits.max_report_bytes):
            raise _wire.ProtocolError("reports larger than max_report_bytes")

    def _check_call(
        self, fields: list[Any], payloads: list[bytes], dispatch: Dispatch
    ) -> tuple[HostFunction, int]:
        if len(fields) != 2 or len(payloads) != 1:
            raise _wire.ProtocolError("a malformed call frame")
        call_id, fid = fields
        if type(call_id) is not int or not 0 < call_id <= _wire.MAX_CALL_ID:
            raise _wire.ProtocolError("a call with a bad call id")
        if call_id in self._in_flight:
            raise _wire.ProtocolError("a call reusing the id of a call in flight")
        fn = dispatch.function(fid, call_id) if type(fid) is int else None
        if fn is None:
            raise _wire.ProtocolError("a call to a function that is not in the table")
        if not fn.is_async and self._sync_call:
            # a sync call blocks the guest's only thread: a second one cannot be honest
            raise _wire.ProtocolError("a sync call while another is in flight")
        return fn, call_id

    def _lost(self, how: str) -> CodeResult:
        if self._kill_reason is not None:  # we killed it: the stop we asked for
            return CodeResult(
                status="terminated",
                reason=self._kill_reason,
                reports=list(self._reports),
                host_errors=[
                    *self._host_errors,
                    RuntimeError(
                        f"the worker did not stop in time ({self._kill_reason}) and was killed"
                    ),
                ],
            )
        self._log.worker_lost(how)
        return CodeResult(
            status="error",
            reason="worker_lost",
            error=ErrorInfo("WorkerLost", how),
            reports=list(self._reports),
            host_errors=list(self._host_errors),
        )

    def _violation(self, conn: Connection | Killable, detail: str) -> CodeResult:
        conn.kill()
        message = f"the worker broke the protocol ({detail}); it was killed"
        return CodeResult(
            status="error",
            reason="protocol_violation",
            error=ErrorInfo("ProtocolError", message),
            reports=list(self._reports),
            host_errors=[*self._host_errors, _wire.ProtocolError(detail)],
        )

    def _counts(self, out: _wire.RemoteResult) -> tuple[int, int]:
        """The run's host calls and quota refusals: the worker's, with the calls it forwarded
        counted as the caller admitted them, and the caller's refusals."""
        count, refusals = self._counted
        calls = max(out.metrics["host_calls"] - self._forwarded + count, 0)
        return calls, out.metrics["quota_refusals"] + refusals

    def _assemble(self, out: _wire.RemoteResult) -> CodeResult:
        reports = [*self._reports, *out.tail_reports]
        host_errors = [*self._host_errors, *(RuntimeError(t) for t in out.host_errors)]
        fields = out.metrics
        fields["host_calls"], fields["quota_refusals"] = self._counts(out)
        fields["reports"] = len(reports)
        metrics = RunMetrics(**fields)
        reason = out.reason
        stop = self._stop
        if stop is not None and len(stop) > _wire.MAX_REASON_CHARS:
            if reason == stop[: _wire.MAX_REASON_CHARS]:
                reason = stop  # the stop crossed cut to MAX_REASON_CHARS: the whole one
        return CodeResult(
            status=out.status,  # type: ignore[arg-type]  # checked by result_from
            result=out.result,
            error=out.error,
            reports=reports,
            logs=out.logs,
            duration_ms=out.duration_ms,
            metrics=metrics,
            reason=reason,
            host_errors=host_errors[:MAX_HOST_ERRORS],
            paused=[] if self._paused is None else self._paused[1],
            continuation=None if self._paused is None else self._paused[0],
        )

    def _begin(self) -> None:
        """The run is awaited: its timeout counts from now, the wait for a worker included,
        unless the executor is still starting its workers (loading an engine does not count
        in-process either; the worker's own deadline then holds, from the run's start)."""
        if not getattr(self._transport, "warming", False):
            self._began = time.monotonic()

    def _timeout_at(self, now: float) -> float:
        """When the run's timeout passes, counted from its await as in-process: the time it
        waits in the executor's queue for a worker counts (``math.inf``: no timeout, or the
        run is stopping already)."""
        timeout = self._opts.timeout
        if timeout is None or self._stop is not None or self._began is None:
            return math.inf
        extra = 0.0
        if not self._opts.timeout_includes_host_calls:
            extra = self._host_time + (now - self._host_since if self._host_busy else 0)
        return self._began + timeout + extra

    def _timed_out(self, now: float) -> bool:
        """Whether the run is stopping: a stop was asked, or its timeout passed (then it stops
        as ``terminate("timeout")`` would; the worker ends it as its own timeout does)."""
        with self._lock:
            if self._stop is None and now >= self._timeout_at(now):
                self._stop = "timeout"
            return self._stop is not None

    def _due(self, started: float, stop_sent: float | None, now: float) -> tuple[float, str]:
        """When the worker is killed if it has not ended by then, and the reason."""
        due: list[tuple[float, str]] = []
        if stop_sent is not None:
            due.append((stop_sent + TERMINATE_GRACE, self._stop or "terminated"))
        timeout = self._opts.timeout
        if timeout is not None:
            extra = 0.0
            if not self._opts.timeout_includes_host_calls:
                extra = self._host_time + (now - self._host_since if self._host_busy else 0)
            due.append((started + timeout + DEADLINE_GRACE + extra, "timeout"))
        return min(due) if due else (math.inf, "")


@dataclasses.dataclass(frozen=True, slots=True)
class _Report:
    value: Any


_SyncDriver: type[SyncDriver] | None = None


def _sync_driver() -> type[SyncDriver]:
    """``_remote_sync.SyncDriver`` (that module imports this one: imported on first use, then
    kept, as a function-level import costs an import-system lookup per run)."""
    global _SyncDriver
    if _SyncDriver is None:
        from quickjail.executors._remote_sync import SyncDriver

        _SyncDriver = SyncDriver
    return _SyncDriver


def _in_event_loop() -> bool:
    """Whether this thread is running an event loop (anyio.run would refuse to start one)."""
    try:
        anyio.lowlevel.current_token()
    except RuntimeError:
        return False
    return True


def _decode(data: bytes, budget: _values.DecodeBudget) -> Any:
    try:
        return _values.decode(data, budget=budget)
    except TransferError as exc:
        raise _wire.ProtocolError(f"a payload that does not decode ({exc})") from None
