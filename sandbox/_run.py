"""One run: a fresh instance, its host-call traffic, and the handle callers hold.

A run executes as *slices* on worker threads: a slice is one call into the guest (start, or
resume after async host calls settled). Between slices the driver awaits the run's async host
calls on the caller's event loop. Everything the guest says arrives through the single import
``qj.host`` and is handled by :meth:`Run.on_host`, which never raises and never calls back into
the guest.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import math
import os
import struct
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.lowlevel

from quickjail.sandbox import _engine, _values
from quickjail.sandbox._abi import (
    CALL_ERROR,
    CALL_OK,
    E_HOST,
    E_PENDING,
    E_REFUSED,
    FLAG_ARGS,
    FLAG_BYTECODE,
    FLAG_DYNAMIC,
    KIND_COMPILE,
    KIND_MODULE,
    KIND_SCRIPT,
    LOG_LEVELS,
    MODULE_BYTECODE,
    MODULE_HOST,
    MODULE_SOURCE,
    OP_BYTECODE,
    OP_CALL,
    OP_FETCH,
    OP_LOG,
    OP_MODULE,
    OP_OOM,
    OP_REJECTION,
    OP_REPORT,
    OP_RESULT,
    OUT_ERROR,
    OUT_LINK_ERROR,
    OUT_VALUE,
    QJ_FAIL,
    QJ_PENDING,
    RUN_HEADER,
)
from quickjail.sandbox._bytecode import batch_record, module_key
from quickjail.sandbox._limits import Limits
from quickjail.sandbox._native import GuestStopped, NativeInstance
from quickjail.sandbox._result import CodeResult, ErrorInfo, LogEntry, RunMetrics, error_from_guest

__all__ = ["CodeExecution", "RunOptions"]

MAX_HOST_ERRORS = 100
NUDGE_INTERVAL = 0.005  # seconds between epoch advances while a stopped run winds down
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
DETERMINISTIC_EPOCH_NS = 1_735_689_600_000_000_000  # 2025-01-01T00:00:00Z


@dataclass(frozen=True, slots=True)
class HostFunction:
    """A host callable the guest may call, with its id in the run's dispatch table."""

    fid: int
    fn: Callable[..., Any]
    is_async: bool
    path: str
    validate: Callable[[list[Any]], tuple[tuple[Any, ...], dict[str, Any]]] | None = None


@dataclass(slots=True)
class RunOptions:
    """Validated options of one run (built by :class:`sandbox.Sandbox`)."""

    source: str
    kind: Literal["module", "script"] = "module"
    fn: str = "default"
    args: list[Any] | None = None
    filename: str = "<run_code>"
    report: Callable[[Any], Any] | None = None
    memory_limit_bytes: int = 64 * 2**20
    timeout: float | None = None
    dynamic_code: bool = False
    seed: int | None = None
    limits: Limits = field(default_factory=Limits)
    deterministic: bool = False
    fuel: int | None = None
    timeout_includes_host_calls: bool = True
    modules: dict[str, str] = field(default_factory=dict)
    host_modules: dict[str, bytes] = field(default_factory=dict)
    globals_message: bytes = b""
    functions: list[HostFunction] = field(default_factory=list)
    content_id: Callable[[], str] = lambda: ""
    pre_error: ErrorInfo | None = None
    user_source: str | None = None
    use_bytecode: bool = True


class _Stopped(Exception):
    """Internal: the guest trapped (a limit, terminate, or a broken instance)."""


class Run:
    """The host side of one run; lives as long as its instance."""

    def __init__(self, engine: _engine.EngineState, opts: RunOptions) -> None:
        self.engine = engine
        self.opts = opts
        self.lock = threading.Lock()
        self.stop_reason: str | None = None
        self.done = False
        self.result: CodeResult | None = None
        self.reports: list[Any] = []
        self.logs: list[LogEntry] = []
        self.host_errors: list[BaseException] = []
        self._rejections = 0
        self._outcome: tuple[int, Any] | None = None
        self._oom = False
        self._trap: GuestStopped | None = None
        self._reply: bytes = b""
        self._log_bytes = 0
        self._report_bytes = 0
        self._logs_dropped = False
        self._host_calls = 0
        self._bytes_in = 0
        self._bytes_out = 0
        self._slices = 0
        self._cpu = 0.0
        self._new_calls: list[tuple[int, HostFunction, list[Any]]] = []
        self._in_flight = 0
        self._clock_reads = 0
        self._bytecode_hits = 0
        self._compiled_now: set[bytes] = set()
        self.fuel_used: int | None = None
        self.quota_refusals = 0
        self.started = time.perf_counter()
        self.on_report_threadsafe: Callable[[Any], None] | None = None
        self.on_stop: Callable[[], None] | None = None
        self.fatal: BaseException | None = None
        # instance
        self.instance, self._store_key = engine.new_instance(
            opts.memory_limit_bytes, self, fuel=opts.fuel
        )
        self._deadline_key: int | None = None
        self._deadline_at: float | None = None
        self._time_left: float | None = None
        if opts.timeout is not None:
            self._deadline_at = time.monotonic() + opts.timeout
            self._deadline_key = engine.deadlines.add(self._deadline_at, self._on_deadline)

    # ------------------------------------------------------------ control

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
        if self._time_left is None:
            return
        self._deadline_at = time.monotonic() + self._time_left
        self._time_left = None
        self._deadline_key = self.engine.deadlines.add(self._deadline_at, self._on_deadline)

    def should_stop(self) -> bool:
        return self.stop_reason is not None

    def terminate(self, reason: str) -> bool:
        """Ask the run to stop; returns False when it already ended or is stopping."""
        with self.lock:
            if self.done or self.stop_reason is not None:
                return False
            self.stop_reason = reason
        self._nudge()
        wake = self.on_stop
        if wake is not None:
            wake()  # a driver waiting for host calls must notice too
        return True

    def _nudge(self) -> None:
        """Advance the epoch, and again every few milliseconds until the run has ended.

        A store's epoch callback may be deciding "continue" for an earlier advance at the very
        moment this run's stop is requested; its next deadline then lies past this advance,
        and one advance alone would be lost. Repeating until the run ends closes that race.
        """
        if self.done:
            return
        self.engine.engine.increment_epoch()
        self.engine.deadlines.add(time.monotonic() + NUDGE_INTERVAL, self._nudge)

    # ------------------------------------------------------------ memory access

    def _read(self, ptr: int, length: int) -> bytes:
        base, size = self.instance.memory(ptr + length)
        if ptr < 0 or length < 0 or ptr + length > size:
            raise _BadPointer
        return ctypes.string_at(base + ptr, length)

    def _write(self, ptr: int, data: bytes) -> None:
        base, size = self.instance.memory(ptr + len(data))
        if ptr < 0 or ptr + len(data) > size:
            raise _BadPointer
        ctypes.memmove(base + ptr, data, len(data))

    def write_u64(self, ptr: int, value: int) -> bool:
        try:
            self._write(ptr, struct.pack("<Q", value & 0xFFFFFFFFFFFFFFFF))
        except _BadPointer:
            return False
        return True

    def clock_ns(self, clock_id: int) -> int:
        if self.opts.deterministic:
            # a fixed start that advances by one millisecond per reading
            self._clock_reads += 1
            return DETERMINISTIC_EPOCH_NS + self._clock_reads * 1_000_000
        return time.time_ns() if clock_id == 0 else time.monotonic_ns()

    def _reply_with(self, data: bytes) -> int:
        """Hand a reply to the guest: into scratch when it fits, else kept for OP_FETCH."""
        self._bytes_in += len(data)
        if len(data) <= self.engine.scratch_size:
            self._write(self.engine.scratch_addr, data)
            self._reply = b""
        else:
            self._reply = data
        return len(data)

    # ------------------------------------------------------------ the import

    def on_host(self, op: int, a: int, b: int, c: int, d: int) -> int:
        try:
            if op == OP_CALL:
                return self._on_call(a, b, c, d)
            if op == OP_LOG:
                return self._on_log(a, b, c)
            if op == OP_REPORT:
                return self._on_report(b, c)
            if op == OP_RESULT:
                self._bytes_out += c
                if c > self.opts.limits.max_result_bytes:
                    self._outcome = (
                        OUT_ERROR,
                        {
                            "name": "RangeError",
                            "message": f"the result is larger than max_result_bytes "
                            f"({self.opts.limits.max_result_bytes})",
                        },
                    )
                    return 0
                self._outcome = (a, _values.decode(self._read(b, c)))
                return 0
            if op == OP_OOM:
                self._oom = True
                return 0
            if op == OP_FETCH:
                data = self._reply
                if len(data) != c:
                    return E_HOST
                self._write(b, data)
                self._reply = b""
                return 0
            if op == OP_MODULE:
                return self._on_module(b, c)
            if op == OP_REJECTION:
                limits = self.opts.limits
                if (
                    self._rejections < limits.max_rejections
                    and len(self.logs) < limits.max_logs
                    and self._log_bytes + c <= limits.max_log_bytes
                ):
                    self._log_bytes += c
                    reason = _values.decode(self._read(b, c))
                    self._rejections += 1
                    self.logs.append(
                        LogEntry("error", ["Unhandled promise rejection:", reason], time.time())
                    )
                return 0
            return E_HOST
        except _BadPointer:
            self._host_error(RuntimeError(f"guest passed a bad pointer (op {op})"))
            return E_HOST
        except _values.TransferError as exc:
            self._host_error(exc)
            if op == OP_RESULT:
                self._outcome = (OUT_ERROR, {"name": "TypeError", "message": str(exc)})
            return E_REFUSED
        except BaseException as exc:  # never let a host bug trap the guest or vanish
            self._host_error(exc)
            if not isinstance(exc, Exception):
                # SystemExit, KeyboardInterrupt: stop the run; the caller re-raises it
                self.fatal = exc
                self.terminate("interrupted")
            return E_HOST

    def _host_error(self, exc: BaseException) -> None:
        """Keep a host-side exception for the result, without pinning its frames' locals."""
        tb = exc.__traceback__
        # drop our own frames (they hold the decoded arguments) and clear the rest's locals
        while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            tb = tb.tb_next
        exc.__traceback__ = tb
        if tb is not None:
            traceback.clear_frames(tb)
        if len(self.host_errors) < MAX_HOST_ERRORS:
            self.host_errors.append(exc)

    def _on_log(self, level: int, ptr: int, length: int) -> int:
        limits = self.opts.limits
        if len(self.logs) >= limits.max_logs or self._log_bytes + length > limits.max_log_bytes:
            if not self._logs_dropped:
                self._logs_dropped = True
                self.logs.append(
                    LogEntry(
                        "warn",
                        ["[quickjail] log limit reached; later logs were dropped"],
                        time.time(),
                    )
                )
            return 0
        self._log_bytes += length
        self._bytes_out += length
        args = _values.decode(self._read(ptr, length))
        lvl = LOG_LEVELS[level] if 0 <= level < len(LOG_LEVELS) else "log"
        self.logs.append(LogEntry(lvl, args if isinstance(args, list) else [args], time.time()))
        return 0

    def _on_report(self, ptr: int, length: int) -> int:
        if (
            len(self.reports) >= self.opts.limits.max_reports
            or self._report_bytes + length > self.opts.limits.max_report_bytes
        ):
            return E_REFUSED
        self._report_bytes += length
        self._bytes_out += length
        value = _values.decode(self._read(ptr, length))
        self.reports.append(value)
        notify = self.on_report_threadsafe
        if notify is not None:
            notify(value)
        return 0

    def _on_module(self, ptr: int, length: int) -> int:
        name = self._read(ptr, length).decode("utf-8", "replace")
        host = self.opts.host_modules.get(name)
        if host is not None:
            return self._reply_with(MODULE_HOST + host)
        src = self.opts.modules.get(name)
        if src is not None:
            if self.opts.use_bytecode:
                key = module_key(self.engine.guest.build_id, name, src)
                blob = self.engine.bytecode.get(key)
                if blob is not None:
                    if key not in self._compiled_now:
                        self._bytecode_hits += 1
                    return self._reply_with(MODULE_BYTECODE + blob)
            return self._reply_with(MODULE_SOURCE + src.encode("utf-8", "surrogatepass"))
        return E_REFUSED

    def _on_call(self, fid: int, ptr: int, length: int, call_id: int) -> int:
        funcs = self.opts.functions
        if not 0 <= fid < len(funcs):
            return E_HOST
        hf = funcs[fid]
        if hf.is_async and call_id <= 0:
            return E_HOST
        o = self.opts.limits
        refusal: str | None = None
        if self._host_calls >= o.max_host_calls:
            refusal = f"host call quota exceeded ({o.max_host_calls} calls per run)"
        elif hf.is_async and self._in_flight >= o.max_calls_in_flight:
            refusal = f"too many host calls in flight (at most {o.max_calls_in_flight})"
        elif self._bytes_out + length > o.max_bytes_out:
            refusal = f"host call quota exceeded ({o.max_bytes_out} bytes out per run)"
        if refusal is not None:
            self.quota_refusals += 1
            return self._refuse(hf, {"name": "RangeError", "message": refusal})
        self._host_calls += 1
        self._bytes_out += length
        args = _values.decode(self._read(ptr, length))
        if not isinstance(args, list):
            return E_HOST
        try:
            call_args: tuple[Any, ...] = tuple(args)
            if hf.validate is not None:
                call_args, _ = hf.validate(args)
        except Exception as exc:
            return self._refuse(hf, _js_error_for(exc, hf))
        if hf.is_async:
            self._in_flight += 1
            self._new_calls.append((call_id, hf, list(call_args)))
            return E_PENDING
        try:
            value = hf.fn(*call_args)
            if inspect.isawaitable(value):
                _close_awaitable(value)
                raise TypeError("a sync host function returned an awaitable")
            reply = CALL_OK + _values.encode(value, path=f"{hf.path}() result")
        except Exception as exc:
            self._host_error(exc)
            reply = CALL_ERROR + _values.encode(_js_error_for(exc, hf))
        return self._check_in(self._reply_with(reply))

    def _refuse(self, hf: HostFunction, error: dict[str, Any]) -> int:
        data = _values.encode(error)
        if hf.is_async:  # the guest turns it into a rejected promise
            return self._reply_with(data)
        return self._reply_with(CALL_ERROR + data)

    def _check_in(self, n: int) -> int:
        cap = self.opts.limits.max_bytes_in
        if self._bytes_in > cap:
            self.quota_refusals += 1
            return self._reply_with(
                CALL_ERROR
                + _values.encode(
                    {
                        "name": "RangeError",
                        "message": f"host call quota exceeded ({cap} bytes in per run)",
                    }
                )
            )
        return n

    # ------------------------------------------------------------ slices (worker thread)

    def _compile_missing(self) -> bytes | None:
        """Compile uncached modules of the graph in a throw-away instance; return the entry's
        bytecode if it is (now) cached."""
        o = self.opts
        build = self.engine.guest.build_id
        cache = self.engine.bytecode
        entry_key = module_key(build, o.filename, o.source)
        entry = cache.get(entry_key)
        if entry is not None:
            self._bytecode_hits += 1
        missing: list[tuple[bytes, str, str]] = []
        if entry is None:
            missing.append((entry_key, o.filename, o.source))
        for name, src in o.modules.items():
            key = module_key(build, name, src)
            if cache.get(key) is None:
                missing.append((key, name, src))
        self._compiled_now = {key for key, _, _ in missing}
        if missing:
            _Compiler(self).compile(missing)
            if entry is None:
                entry = cache.get(entry_key)
        return entry

    def slice_start(self) -> int:
        o = self.opts
        bytecode = self._compile_missing() if o.use_bytecode and o.kind == "module" else None
        fn = o.fn.encode()
        filename = o.filename.encode("utf-8", "replace")
        source = bytecode if bytecode is not None else o.source.encode("utf-8", "surrogatepass")
        args = _values.encode(o.args, path="execute.args") if o.args is not None else b""
        glob = o.globals_message
        if o.seed is not None:
            seed = o.seed
        elif o.deterministic:
            seed = 0
        else:
            seed = int.from_bytes(os.urandom(8), "little")
        soft = _soft_limit(o.memory_limit_bytes, self.engine.guest.stack_size)
        flags = (
            (FLAG_DYNAMIC if o.dynamic_code else 0)
            | (FLAG_ARGS if o.args is not None else 0)
            | (FLAG_BYTECODE if bytecode is not None else 0)
        )
        header = RUN_HEADER.pack(
            KIND_SCRIPT if o.kind == "script" else KIND_MODULE,
            flags,
            seed & 0xFFFFFFFF,
            (seed >> 32) & 0xFFFFFFFF,
            soft,
            _engine.JS_STACK_LIMIT,
            len(filename),
            len(source),
            len(fn),
            len(args),
            len(glob),
        )
        record = b"".join((header, filename, source, fn, args, glob))
        return self._enter(self.instance, record)

    def _enter(self, instance: NativeInstance, record: bytes) -> int:
        self._bytes_in += len(record)
        ptr = self._call(_place, self.engine, instance, record)
        if ptr is None:
            self._oom = True
            return QJ_FAIL
        status: int = self._call(instance.run, ptr, len(record))
        return status

    def slice_resume(self, settled: list[tuple[int, bool, bytes]]) -> int:
        status = QJ_PENDING
        for call_id, ok, data in settled:
            self._in_flight -= 1
            self._bytes_in += len(data)
            ptr = self._call(_place, self.engine, self.instance, data)
            if ptr is None:
                self._oom = True
                return QJ_FAIL
            status = self._call(self.instance.resume, call_id, 1 if ok else 0, ptr, len(data))
            if status != QJ_PENDING:
                break
        return status

    def _call(self, func: Callable[..., Any], *args: Any) -> Any:
        if self.stop_reason is not None:
            raise _Stopped
        try:
            return func(*args)
        except GuestStopped as exc:
            self._trap = exc
            raise _Stopped from None

    def run_slice(self, work: Callable[[], int]) -> int | None:
        """Run one slice on the current (worker) thread; None when the guest trapped."""
        _engine.set_current(self)
        t0 = time.thread_time()
        try:
            self._slices += 1
            return work()
        except _Stopped:
            return None
        except _BadPointer:
            return QJ_FAIL
        finally:
            self._cpu += time.thread_time() - t0
            _engine.set_current(None)

    def take_new_calls(self) -> list[tuple[int, HostFunction, list[Any]]]:
        calls, self._new_calls = self._new_calls, []
        return calls

    # ------------------------------------------------------------ finishing

    def finish(self, status_code: int | None, *, release: bool = True) -> CodeResult:
        """Decide the outcome from host facts and release the instance."""
        with self.lock:
            self.done = True
        if self._deadline_key is not None:
            self.engine.deadlines.cancel(self._deadline_key)
        try:
            peak = self.instance.memory(1 << 40)[1]
        except Exception:
            peak = 0
        files: dict[str, str | None] = {
            **self.opts.modules,
            self.opts.filename: self.opts.user_source,
        }
        result: Any = None
        error: ErrorInfo | None = None
        reason: str | None = None
        status: str
        trap = self._trap
        if self.opts.fuel is not None:
            self.fuel_used = self.opts.fuel - self.instance.fuel_left()
        if status_code is None and isinstance(trap, GuestStopped) and trap.out_of_fuel:
            status, reason = "terminated", "fuel"
        elif self.stop_reason is not None and (
            status_code is None or status_code == QJ_PENDING or self._outcome is None
        ):
            status, reason = "terminated", self.stop_reason
        elif status_code is None:
            if self._oom:
                status = "memory"
                error = ErrorInfo("InternalError", "out of memory")
            else:
                status = "error"
                error = ErrorInfo("InternalError", _trap_message(trap))
                if trap is not None:
                    self._host_error(trap)
        elif status_code == QJ_FAIL or self._outcome is None:
            status = "memory" if self._oom else "error"
            error = ErrorInfo(
                "InternalError",
                "out of memory" if self._oom else "the sandbox failed to run the code",
            )
        else:
            kind, payload = self._outcome
            if kind == OUT_VALUE:
                status, result = "success", payload
            else:
                error = error_from_guest(payload, files)
                uncatchable = isinstance(payload, dict) and payload.get("uncatchable") is True
                # status memory needs the host fact (the allocator failed in this run); the
                # error's shape only narrows it, so a program that caught an OOM and then
                # threw something else is an ordinary error
                # QuickJS throws null when it cannot even allocate the error object
                thrown_null = (
                    isinstance(payload, dict) and "thrown" in payload and payload["thrown"] is None
                )
                is_oom_error = thrown_null or (
                    error.name == "InternalError" and error.message == "out of memory"
                )
                if self._oom and (is_oom_error or uncatchable):
                    status = "memory"
                elif kind == OUT_LINK_ERROR:
                    status = "link_error"
                else:
                    status = "error"
        wall = (time.perf_counter() - self.started) * 1000
        metrics = RunMetrics(
            wall_ms=wall,
            guest_cpu_ms=self._cpu * 1000,
            peak_memory_bytes=peak,
            host_calls=self._host_calls,
            bytes_in=self._bytes_in,
            bytes_out=self._bytes_out,
            reports=len(self.reports),
            logs=len(self.logs),
            slices=self._slices,
            quota_refusals=self.quota_refusals,
            fuel_used=self.fuel_used,
            bytecode_hits=self._bytecode_hits,
        )
        self.result = CodeResult(
            status=status,  # type: ignore[arg-type]
            result=result,
            error=error,
            reports=list(self.reports),
            logs=list(self.logs),
            duration_ms=wall,
            metrics=metrics,
            reason=reason,
            host_errors=list(self.host_errors),
        )
        if release:
            self.release()
        return self.result

    def release(self) -> None:
        """Free the store and its instance (idempotent); the result stays."""
        _engine.unregister_store(self._store_key)
        self.instance.close()


class _BadPointer(Exception):
    pass


class _Compiler:
    """Routes the host import of a compile-only instance; nothing but bytecode comes back."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.engine = run.engine
        self.items: list[tuple[bytes, str, str]] = []

    def should_stop(self) -> bool:
        return self.run.should_stop()

    def clock_ns(self, clock_id: int) -> int:
        return 0

    def write_u64(self, ptr: int, value: int) -> bool:
        base, size = self.instance.memory(ptr + 8)
        if ptr < 0 or ptr + 8 > size:
            return False
        ctypes.memmove(base + ptr, struct.pack("<Q", value), 8)
        return True

    def on_host(self, op: int, a: int, b: int, c: int, d: int) -> int:
        if op != OP_BYTECODE or not 0 <= a < len(self.items):
            return 0
        try:
            base, size = self.instance.memory(b + c)
            if b < 0 or c < 0 or b + c > size:
                return E_HOST
            self.engine.bytecode.put(self.items[a][0], ctypes.string_at(base + b, c))
        except Exception:
            return E_HOST
        return 0

    def compile(self, items: list[tuple[bytes, str, str]]) -> None:
        self.items = items
        record_body = batch_record([(name, src) for _, name, src in items])
        header = RUN_HEADER.pack(
            KIND_COMPILE, 0, 0, 0, 0, _engine.JS_STACK_LIMIT, 0, len(record_body), 0, 0, 0
        )
        record = header + record_body
        inst, key = self.engine.new_instance(max(64 * 2**20, len(record) * 8), self)
        self.instance = inst
        try:
            _engine.set_current(self)
            try:
                ptr = _place(self.engine, inst, record)
                if ptr is not None:
                    inst.run(ptr, len(record))
            except (GuestStopped, _BadPointer):
                pass  # the run itself will report what went wrong
        finally:
            _engine.set_current(self.run)
            _engine.unregister_store(key)
            inst.close()


def _place(engine: _engine.EngineState, inst: NativeInstance, data: bytes) -> int | None:
    """Copy host data into the guest for a call: the scratch buffer when it fits (the call
    then passes pointer 0), else a guest allocation; None when the guest has no room."""
    n = len(data)
    if n <= engine.scratch_size:
        ptr, arg = engine.scratch_addr, 0
    else:
        ptr = arg = inst.alloc(n)
        if ptr == 0:
            return None
    base, size = inst.memory(ptr + n)
    if ptr + n > size:
        raise _BadPointer
    ctypes.memmove(base + ptr, data, n)
    return arg


def _soft_limit(hard: int, stack: int) -> int:
    """QuickJS's own cap: below the hard cap by the stack, static data and a reserve."""
    reserve = max(4 * 2**20, hard // 8)
    return max(1 * 2**20, min(hard - stack - reserve, 0xFFFFFFFF))


def _trap_message(trap: BaseException | None) -> str:
    if trap is None:
        return "the sandbox stopped unexpectedly"
    if isinstance(trap, GuestStopped) and trap.stack_overflow:
        return "Maximum call stack size exceeded (native stack)"
    text = str(trap)
    return "the sandbox trapped: " + text.splitlines()[0][:200] if text else "the sandbox trapped"


def _close_awaitable(value: Any) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        close()


def _js_error_for(exc: BaseException, hf: HostFunction) -> dict[str, Any]:
    """The safe JS-side view of a host exception: its class name and no host details."""
    if isinstance(exc, _values.TransferError):
        return {"name": "TypeError", "message": str(exc)}
    safe = getattr(exc, "js_message", None)
    if isinstance(safe, str):
        return {"name": getattr(exc, "js_name", "Error"), "message": safe}
    return {"name": "Error", "message": f"host function {hf.path} failed ({type(exc).__name__})"}


# ---------------------------------------------------------------- the handle


class CodeExecution:
    """A run in progress: await it for the :class:`CodeResult`, stream its reports, stop it.

    ``await execution`` (any anyio backend) drives the run on the current event loop: guest
    slices run on worker threads, async host calls run in the current task group. Only one
    task may await it; awaiting it again returns the same result.
    """

    def __init__(self, engine: _engine.EngineState, opts: RunOptions) -> None:
        self._engine = engine
        self._opts = opts
        self._run: Run | None = None
        self._pending_stop: str | None = None
        self._result: CodeResult | None = None
        self._started = False
        self._lock = threading.Lock()
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._wake: anyio.Event | None = None
        self._loop_thread: int | None = None
        self._report_cursor_events: list[anyio.Event] = []
        self._content_id: str | None = None

    # ------------------------------------------------------------ public surface

    @property
    def content_id(self) -> str:
        """sha256 of the build ID, the sources, the module graph and the options."""
        if self._content_id is None:
            self._content_id = self._opts.content_id()
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
                return
            event = anyio.Event()
            self._report_cursor_events.append(event)
            # re-check after registering so no report slips between the two
            if len(self.reports_so_far) > index or self._result is not None:
                continue
            await event.wait()

    def run_sync(self) -> CodeResult:
        """Drive the run from synchronous code (on worker threads; blocks the caller)."""
        if self._result is not None:
            return self._result
        if self._started:
            raise RuntimeError("this run is already being driven")
        if any(f.is_async for f in self._opts.functions) or _is_async_callable(self._opts.report):
            return anyio.run(self.wait)  # async callables need an event loop
        self._started = True
        done = threading.Event()
        box: list[CodeResult | BaseException] = []
        work = self._whole_run_job(box, done.set, self._sync_report)
        self._engine.workers.submit(work)
        done.wait()
        return self._outcome_of(box)

    # ------------------------------------------------------------ internals

    def _sync_report(self, value: Any) -> None:
        cb = self._opts.report
        if cb is None:
            return
        try:
            cb(value)
        except Exception as exc:
            if self._run is not None:
                self._run._host_error(exc)

    def _create_run(self) -> Run | None:
        with self._lock:
            if self._pending_stop is not None:
                self._result = CodeResult(status="terminated", reason=self._pending_stop)
                return None
            if self._opts.pre_error is not None:
                self._result = CodeResult(status="error", error=self._opts.pre_error)
                return None
            self._run = Run(self._engine, self._opts)
            self._run.on_stop = self._poke
            return self._run

    def _finish(self, run: Run, status: int | None, *, release: bool = True) -> CodeResult:
        result = run.finish(status, release=release)
        with self._lock:
            self._result = result
        self._notify_reports()
        return result

    def _poke(self) -> None:
        """Wake the driver (from any thread)."""
        wake, token = self._wake, self._token
        if wake is None or token is None:
            return
        if threading.get_ident() == self._loop_thread:
            wake.set()
            return
        _soon(token, wake.set)

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
        """A worker job running the whole run (one slice); ``signal`` wakes the waiter."""

        def job() -> None:
            try:
                run = self._create_run()
                if run is None:
                    assert self._result is not None
                    box.append(self._result)
                    return
                run.on_report_threadsafe = on_report
                status = run.run_slice(run.slice_start)
                if status == QJ_PENDING and run.stop_reason is None:
                    run.terminate("deadlock")
                box.append(self._finish(run, status, release=False))
            except BaseException as exc:  # delivered to the waiter
                box.append(exc)
            finally:
                signal()
                if self._run is not None:  # freeing the instance is off the waiter's path
                    self._run.release()

        return job

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
        if self._opts.report is None and not any(f.is_async for f in self._opts.functions):
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
                    tg.start_soon(self._deliver_reports, run, report_cb, receive_report)
                else:
                    receive_report.close()
                settled: list[tuple[int, bool, bytes]] = []
                status = await self._in_worker(run, run.slice_start)
                async with anyio.create_task_group() as calls:
                    while status == QJ_PENDING and run.stop_reason is None:
                        for call_id, hf, args in run.take_new_calls():
                            calls.start_soon(self._host_call, run, call_id, hf, args, settled)
                        run.pause_deadline()
                        while not settled and run.stop_reason is None:
                            await self._wake.wait()
                            self._wake = anyio.Event()
                        run.resume_deadline()
                        if run.stop_reason is not None:
                            break
                        batch = list(settled)
                        settled.clear()
                        status = await self._in_worker(
                            run, functools.partial(run.slice_resume, batch)
                        )
                    calls.cancel_scope.cancel()
                send_report.close()
        finally:
            send_report.close()
            if self._result is None:
                self._finish(run, status)
        assert self._result is not None
        if run.fatal is not None:
            raise run.fatal
        return self._result

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
                except Exception as exc:
                    run._host_error(exc)

    async def _host_call(
        self,
        run: Run,
        call_id: int,
        hf: HostFunction,
        args: list[Any],
        settled: list[tuple[int, bool, bytes]],
    ) -> None:
        try:
            value = await hf.fn(*args)
            data = _values.encode(value, path=f"{hf.path}() result")
            ok = True
        except Exception as exc:
            run._host_error(exc)
            data = _values.encode(_js_error_for(exc, hf))
            ok = False
        settled.append((call_id, ok, data))
        assert self._wake is not None
        self._wake.set()


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


def _is_async_callable(fn: Any) -> bool:
    if fn is None:
        return False
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        type(fn).__call__ if callable(fn) else None
    )
