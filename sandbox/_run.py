"""One run: a fresh instance, what its guest says through ``qj.host``, and its outcome.

A run executes as *slices* on worker threads: a slice is one call into the guest (start, or
resume after async host calls settled). Everything the guest says arrives through the single
import ``qj.host`` and is handled by :meth:`Run.on_host`, which never raises and never calls
back into the guest. The driver (:mod:`quickjail.sandbox._execution`) decides which thread
runs which slice.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from quickjail.sandbox import _durable, _engine, _values
from quickjail.sandbox._abi import (
    OUT_ERROR,
    QJ_DONE,
    QJ_FAIL,
    QJ_PENDING,
)
from quickjail.sandbox._continuation import Continuation
from quickjail.sandbox._durable import Answer
from quickjail.sandbox._family import Children, Stoppable
from quickjail.sandbox._hostcall import Dispatch, PendingCall
from quickjail.sandbox._hostlib import MODE_DETERMINISTIC, MODE_REAL, StoreData
from quickjail.sandbox._idle import IdlePages
from quickjail.sandbox._log import MAX_HOST_ERRORS, keep_error
from quickjail.sandbox._native import BadPointer, GuestStopped, NativeInstance
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._outcome import Outcome, decide
from quickjail.sandbox._program import Program
from quickjail.sandbox._record import DETERMINISTIC_EPOCH_NS, run_record
from quickjail.sandbox._result import CodeResult, ErrorInfo, LogEntry, RunMetrics
from quickjail.sandbox._run_import import U64_MAX, GuestImport
from quickjail.sandbox.host import HostCalls

__all__ = ["MAX_HOST_ERRORS", "Run"]

NUDGE_INTERVAL = 0.005  # seconds between epoch advances while a stopped run winds down


class _Stopped(Exception):
    """Internal: the guest trapped (a limit, terminate, or a broken instance)."""


class Run(GuestImport):
    """The host side of one run; lives as long as its instance."""

    # slots, not a __dict__ (with GuestImport's): a parked run holds this object, and a dict of
    # its 45 attributes was about 1 KiB of every idle sandbox
    __slots__ = (
        "__weakref__",
        "_answers",
        "_before",
        "_children",
        "_compiled_now",
        "_cpu",
        "_data",
        "_deadline_at",
        "_deadline_key",
        "_decoded",
        "_idle",
        "_instance",
        "_slices",
        "_started",
        "_store_key",
        "_time_left",
        "_trap",
        "dispatch",
        "done",
        "engine",
        "fatal",
        "host_errors",
        "lock",
        "logs",
        "on_report_threadsafe",
        "on_stop",
        "opts",
        "program",
        "reports",
        "stop_reason",
    )

    def __init__(
        self,
        engine: _engine.EngineState,
        opts: RunOptions,
        program: Program,
        resumed: tuple[Continuation, list[Answer]] | None = None,
    ) -> None:
        """A fresh instance for the run, or with ``resumed``, the paused run of that
        continuation (its memory and host state restored), whose first slice delivers the
        answers to its paused calls."""
        self.engine = engine
        self.opts = opts
        self.program = program
        self.lock = threading.Lock()
        self.stop_reason: str | None = None
        self.done = False
        self.reports: list[Any] = []
        self.logs: list[LogEntry] = []
        self.host_errors: list[BaseException] = []
        self._decoded = _values.DecodeBudget.for_run(opts.memory_limit_bytes)
        self.dispatch = Dispatch(
            program.functions,
            opts.host.calls() if opts.host is not None and program.functions else None,
            # not the bound method: the run would be a reference cycle, freed only by the GC
            functools.partial(keep_error, self.host_errors),
            self._decoded,
        )
        self.on_report_threadsafe: Callable[[Any], None] | None = None
        self.on_stop: Callable[[], None] | None = None
        self.fatal: BaseException | None = None  # SystemExit/KeyboardInterrupt from the host
        # runs its host functions started (sandbox._family): stopped when this run is
        self._children = Children()
        self._sent: tuple[int, Any] | None = None
        self._oom = False
        self._trap: GuestStopped | None = None
        self._reply: _values.Reply = b""
        self._rejections = 0
        self._log_bytes = 0
        self._report_bytes = 0
        self._logs_dropped = False
        self._bytes_in = 0
        self._bytes_out = 0
        self._before = (0, 0)  # reports and logs of the legs before a resume (their limits)
        self._answers: list[Answer] | None = None
        self._slices = 0
        self._cpu = 0.0
        # the store's data: the guest's clock, answered by the host library without calling
        # Python (the run only moves deterministic time for timers: virtual_ns, saturating at
        # 2**64 - 1 there), and the owner qj.host calls, this run, once the instance exists
        self._data = StoreData(
            mode=MODE_DETERMINISTIC if opts.deterministic else MODE_REAL,
            base_ns=DETERMINISTIC_EPOCH_NS,
            scratch=engine.scratch_addr,
            scratch_size=engine.scratch_size,
        )
        self._virtual_ns = 0  # how far deterministic time jumped for timers
        self.wake_in: float | None = None  # seconds until the guest's next timer, when waiting
        self._timers_fired = 0
        self._timers_cancelled = 0
        self._bytecode_hits = 0
        self._compiled_now: set[bytes] = set()
        self._module_name_max: int | None = None
        self._started = time.perf_counter()
        self._instance, self._store_key = engine.new_instance(
            opts.memory_limit_bytes, self, fuel=opts.fuel
        )
        self._idle = IdlePages(self._instance, engine.deadlines, engine.idle_spans)
        self._deadline_key: int | None = None
        self._deadline_at: float | None = None
        self._time_left: float | None = None
        if resumed is not None:
            try:
                _durable.restore(self, resumed[0])
            except BaseException:
                self.release()
                raise
            self._answers = resumed[1]
        if opts.timeout is not None:
            self._deadline_at = time.monotonic() + opts.timeout
            self._deadline_key = engine.deadlines.add(
                self._deadline_at, _weakly(self, Run._on_deadline)
            )

    @property
    def instance(self) -> NativeInstance:
        return self._instance

    @property
    def store_data(self) -> StoreData:
        """The store's data, which the host library's imports read (the guest's clock)."""
        return self._data

    @property
    def virtual_ns(self) -> int:
        """How far deterministic time jumped for timers."""
        return self._virtual_ns

    def set_virtual_ns(self, value: int) -> None:
        self._virtual_ns = value
        self._data.virtual_ns = value & U64_MAX

    def counters(self) -> dict[str, int]:
        """What the run used of its limits so far, every leg counted (``_durable``)."""
        return {
            "reports": self._before[0] + len(self.reports),
            "report_bytes": self._report_bytes,
            "logs": self._before[1] + len(self.logs),
            "log_bytes": self._log_bytes + (1 << 62 if self._logs_dropped else 0),
            "rejections": self._rejections,
            "bytes_in": self._bytes_in,
            "bytes_out": self._bytes_out,
            "timers_fired": self._timers_fired,
            "timers_cancelled": self._timers_cancelled,
            "bytecode_hits": self._bytecode_hits,
            "host_calls": self.dispatch.count,
            "quota_refusals": self.dispatch.refusals,
        }

    def restore_counters(self, c: dict[str, int]) -> None:
        """Take on the counters of the legs before a resume (:meth:`counters`)."""
        self._before = (c["reports"], c["logs"])
        self._report_bytes = c["report_bytes"]
        self._logs_dropped = c["log_bytes"] >= 1 << 62
        self._log_bytes = c["log_bytes"] % (1 << 62)
        self._rejections = c["rejections"]
        self._bytes_in, self._bytes_out = c["bytes_in"], c["bytes_out"]
        self._timers_fired, self._timers_cancelled = c["timers_fired"], c["timers_cancelled"]
        self._bytecode_hits = c["bytecode_hits"]
        self.dispatch.count, self.dispatch.refusals = c["host_calls"], c["quota_refusals"]

    # control, from any thread

    def _on_deadline(self) -> None:
        self.terminate("timeout")

    def pause_deadline(self) -> None:
        """Stop the clock while the run only waits for host calls (opt-out of counting them)."""
        if self.opts.timeout_includes_host_calls or self._deadline_key is None:
            return
        self.engine.deadlines.cancel(self._deadline_key)
        self._deadline_key = None
        assert self._deadline_at is not None
        self._time_left = max(0.0, self._deadline_at - time.monotonic())

    def resume_deadline(self) -> None:
        if self._time_left is None or self.done:
            return
        self._deadline_at = time.monotonic() + self._time_left
        self._time_left = None
        self._deadline_key = self.engine.deadlines.add(
            self._deadline_at, _weakly(self, Run._on_deadline)
        )

    def should_stop(self) -> bool:
        return self.stop_reason is not None

    def interrupted(self, exc: BaseException) -> None:
        """``exc`` (a SystemExit or KeyboardInterrupt from a host function, or any exception a
        signal handler raised while the epoch callback asked, on the main thread) stops the
        run; it is kept in ``host_errors`` and in ``fatal``, for the caller to re-raise."""
        self.keep_error(exc)
        self.fatal = exc
        self.terminate("interrupted")

    def terminate(self, reason: str) -> bool:
        """Ask the run to stop, and the runs its host functions started; returns False when
        it already ended or is stopping."""
        with self.lock:
            if self.done or self.stop_reason is not None:
                return False
            self.stop_reason = reason
        self._nudge()
        wake = self.on_stop
        if wake is not None:
            wake()  # a driver waiting for host calls must notice too
        self._children.stop(reason)
        return True

    @property
    def host_calls(self) -> HostCalls | None:
        return self.dispatch.calls

    def adopt(self, child: Stoppable) -> None:
        """``child`` was started by one of this run's host functions: it stops with this run
        (at once, when this run is already stopping)."""
        with self.lock:
            self._children.adopt(child, self.stop_reason)

    def _nudge(self) -> None:
        """Advance the epoch, and again every few milliseconds until the run has ended.

        A store's epoch callback may be deciding "continue" for an earlier advance at the very
        moment this run's stop is requested; its next deadline then lies past this advance,
        and one advance alone would be lost. Repeating until the run ends closes that race.
        The run has ended once it is finished or released (whichever path got there) or
        collected: the repeat holds only a weak reference to it.
        """
        if self.done:
            return
        self.engine.increment_epoch()
        self.engine.deadlines.add(time.monotonic() + NUDGE_INTERVAL, _weakly(self, Run._nudge))

    def keep_error(self, exc: BaseException) -> None:
        """Keep a host-side exception for the result, without pinning its frames' locals."""
        keep_error(self.host_errors, exc)

    # slices, on a worker thread

    def slice_start(self) -> int:
        record = run_record(self.engine, self.opts, self.program, self.should_stop)
        if isinstance(record, tuple):
            self._sent = record
            return QJ_DONE
        self._bytecode_hits += record.bytecode_hits
        self._compiled_now = record.compiled_now
        self._bytes_in += record.total
        scratch, room = self.engine.scratch_addr, self.engine.scratch_size
        ptr = self._call(self._instance.place_parts, record.parts, record.total, scratch, room)
        if ptr is None:
            self._oom = True
            return QJ_FAIL
        status: int = self._call(self._instance.run, ptr, record.total)
        return status

    def slice_first(self) -> int:
        """The run's first slice: start it, or for a resumed run answer its paused calls."""
        answers, self._answers = self._answers, None
        if answers is None:
            return self.slice_start()
        functions = self.program.functions
        settled = [(cid, *self.dispatch.answer(functions[fid], v)) for cid, fid, v in answers]
        return self.slice_resume(settled)

    def slice_resume(self, settled: list[tuple[int, bool, _values.Reply]]) -> int:
        status = QJ_PENDING
        for call_id, ok, data in settled:
            self.dispatch.release(call_id)
            self._bytes_in += len(data)
            ptr = self._call(self._place, data)
            if ptr is None:
                self._oom = True
                return QJ_FAIL
            status = self._call(self._instance.resume, call_id, 1 if ok else 0, ptr, len(data))
            if status != QJ_PENDING:
                break
        return status

    def _place(self, data: _values.Reply) -> int | None:
        scratch, room = self.engine.scratch_addr, self.engine.scratch_size
        return self._instance.place_parts(_values.reply_parts(data), len(data), scratch, room)

    def _call(self, func: Callable[..., Any], *args: Any) -> Any:
        if self.stop_reason is not None:
            raise _Stopped
        try:
            return func(*args)
        except GuestStopped as exc:
            self._trap = exc
            raise _Stopped from None

    def slice_wake(self) -> int:
        """Resume the guest for its timers (``qj_resume`` with call id 0)."""
        status: int = self._call(self._instance.resume, 0, 1, 0, 0)
        return status

    def run_slice(self, work: Callable[[], int]) -> int | None:
        """Run one slice on the current (worker) thread; None when the guest trapped.

        Never raises: a host failure (a bug, an input the host cannot encode) ends the run as
        an error naming the exception's class (the exception goes to ``host_errors``), and a
        SystemExit/KeyboardInterrupt stops the run and is kept in ``fatal`` for the driver.
        """
        t0 = time.thread_time()
        self.wake_in = None
        try:
            self._slices += 1
            self._idle.running()  # a pending drop must not touch a running guest
            status = work()
            if status == QJ_PENDING:
                self._idle.parked()
            return status
        except _Stopped:
            return None
        except BadPointer:
            return QJ_FAIL
        except Exception as exc:
            self.keep_error(exc)
            self.dispatch.log.host_failed(exc)
            message = (
                f"the host failed while running the code ({type(exc).__name__}); "
                "the exception is in CodeResult.host_errors"
            )
            self._sent = (OUT_ERROR, {"name": "InternalError", "message": message})
            return QJ_DONE
        except BaseException as exc:
            self.fatal = exc
            self.terminate("interrupted")
            return None
        finally:
            self._cpu += time.thread_time() - t0

    def take_new_calls(self) -> list[PendingCall]:
        return self.dispatch.take_pending()

    # the end

    def finish(self, status_code: int | None, *, release: bool = True) -> CodeResult:
        """Decide the outcome from host facts and (unless told not to) release the instance,
        even when deciding fails."""
        self._end()
        try:
            return self._outcome(status_code)
        finally:
            if release:
                self.release()

    def _end(self) -> None:
        """Mark the run over: terminate becomes a no-op, the nudge and the deadline stop."""
        with self.lock:
            self.done = True
            key, self._deadline_key = self._deadline_key, None
        if key is not None:
            self.engine.deadlines.cancel(key)

    def _outcome(self, status_code: int | None) -> CodeResult:
        try:
            peak = self._instance.memory(1 << 40)[1]
        except Exception:
            peak = 0
        fuel_used = None
        if self.opts.fuel is not None:
            fuel_used = self.opts.fuel - self._instance.fuel_left()
        continuation = None
        if self.parked_paused(status_code):
            # the guest waits for paused calls alone (and maybe timers): it is the value
            try:
                continuation = _durable.capture(self)
                outcome = Outcome("paused")
            except Exception as exc:  # the host could not copy it: the run fails, told why
                self.keep_error(exc)
                message = f"the paused run could not be saved ({type(exc).__name__})"
                outcome = Outcome("error", error=ErrorInfo("InternalError", message))
        else:
            outcome = decide(
                status_code,
                trap=self._trap,
                stop_reason=self.stop_reason,
                oom=self._oom,
                sent=self._sent,
                sources=self.program.user_sources,
            )
        if (
            outcome.status == "error"
            and status_code is None
            and self._trap is not None
            and self.stop_reason is None
        ):
            self.keep_error(self._trap)
        wall = (time.perf_counter() - self._started) * 1000
        metrics = RunMetrics(
            wall_ms=wall,
            guest_cpu_ms=self._cpu * 1000,
            peak_memory_bytes=peak,
            host_calls=self.dispatch.count,
            bytes_in=self._bytes_in,
            bytes_out=self._bytes_out,
            reports=len(self.reports),
            logs=len(self.logs),
            slices=self._slices,
            quota_refusals=self.dispatch.refusals,
            fuel_used=fuel_used,
            bytecode_hits=self._bytecode_hits,
            timers_fired=self._timers_fired,
            timers_cancelled=self._timers_cancelled,
        )
        result = CodeResult(
            status=outcome.status,
            result=outcome.result,
            error=outcome.error,
            reports=list(self.reports),
            logs=list(self.logs),
            duration_ms=wall,
            metrics=metrics,
            reason=outcome.reason,
            host_errors=list(self.host_errors),
            run_id=self.dispatch.log.run_id,
            paused=list(self.dispatch.paused) if continuation is not None else [],
            continuation=continuation,
        )
        return result

    def parked_paused(self, status_code: int | None) -> bool:
        """Whether the guest parked with paused calls and was not stopped: the run pauses."""
        return (
            status_code == QJ_PENDING
            and bool(self.dispatch.paused)
            and self.stop_reason is None
            and self._trap is None
        )

    def release(self) -> None:
        """Free the store and its instance (idempotent); the result stays. Ends the run too,
        for a path that never reached :meth:`finish`."""
        self._end()
        self._idle.release()  # a drop still pending is a no-op from now on
        _engine.release_store(self._store_key)
        self._instance.close()
        # the driver's callbacks refer back to its handle, which refers to this run: drop
        # them, so that refcounting frees a run at once (cyclic garbage waits for the GC)
        self.on_stop = self.on_report_threadsafe = None


def _weakly(run: Run, method: Callable[[Run], None]) -> Callable[[], None]:
    """A deadline callback calling ``method(run)`` that does not keep ``run`` alive."""
    ref = weakref.ref(run)

    def call() -> None:
        target = ref()
        if target is not None:
            method(target)

    return call
