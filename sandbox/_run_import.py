"""What a run's guest says through its one import, ``qj.host``: the handlers of its ops.

:class:`GuestImport` is a base of :class:`~quickjail.sandbox._run.Run`, which holds the state
the handlers read and charge; they run on the worker thread executing the guest, never raise
and never call back into the guest. Every argument is a guest-chosen value, hostile until
checked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from quickjail.sandbox import _engine, _values
from quickjail.sandbox._abi import (
    E_HOST,
    E_PENDING,
    E_REFUSED,
    E_REPORT_BYTES,
    E_REPORT_COUNT,
    E_UNTRANSFERABLE,
    LOG_CLOSED,
    LOG_LEVELS,
    MODULE_BARE,
    MODULE_BYTECODE,
    MODULE_HOST,
    MODULE_SOURCE,
    MODULE_WANT_TEXT,
    OP_BYTECODE,
    OP_CALL,
    OP_FETCH,
    OP_LOG,
    OP_MODULE,
    OP_OOM,
    OP_REPORT,
    OP_RESULT,
    OP_SLEEP,
    OP_TIMERS,
    OUT_ERROR,
    OUT_LINK_ERROR,
    OUT_VALUE,
    REFUSAL_TEXT_MAX,
)
from quickjail.sandbox._bytecode import module_key
from quickjail.sandbox._family import Stoppable, calling
from quickjail.sandbox._hostcall import Dispatch
from quickjail.sandbox._hostlib import SPAN_OPS, StoreData
from quickjail.sandbox._native import BadPointer, NativeInstance
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program
from quickjail.sandbox._result import LogEntry
from quickjail.sandbox.errors import TransferError
from quickjail.sandbox.host import HostCalls

__all__ = ["U64_MAX", "GuestImport"]

# the ops a run answers with the span (b, c) the import passes: all but the compile-only one
_SPAN_OPS = SPAN_OPS - {OP_BYTECODE}
_OUTCOME_KINDS = frozenset({OUT_VALUE, OUT_ERROR, OUT_LINK_ERROR})
U64_MAX = 2**64 - 1


class GuestImport:
    """The ``qj.host`` handlers of a :class:`~quickjail.sandbox._run.Run` (its base class)."""

    # the state these handlers write (Run's own is in Run.__slots__): slots, not a __dict__
    __slots__ = (
        "_bytecode_hits",
        "_bytes_in",
        "_bytes_out",
        "_log_bytes",
        "_logs_dropped",
        "_module_name_max",
        "_oom",
        "_rejections",
        "_reply",
        "_report_bytes",
        "_sent",
        "_timers_cancelled",
        "_timers_fired",
        "_virtual_ns",
        "wake_in",
    )

    # the run's state the handlers use (Run.__init__ sets it)
    engine: _engine.EngineState
    opts: RunOptions
    program: Program
    dispatch: Dispatch
    reports: list[Any]
    logs: list[LogEntry]
    wake_in: float | None
    on_report_threadsafe: Callable[[Any], None] | None
    _sent: tuple[int, Any] | None
    _oom: bool
    _reply: _values.Reply
    _rejections: int
    _log_bytes: int
    _report_bytes: int
    _logs_dropped: bool
    _bytes_in: int
    _bytes_out: int
    _before: tuple[int, int]
    _decoded: _values.DecodeBudget
    _virtual_ns: int
    _timers_fired: int
    _timers_cancelled: int
    _bytecode_hits: int
    _compiled_now: set[bytes]
    _module_name_max: int | None
    _instance: NativeInstance
    _data: StoreData

    if TYPE_CHECKING:

        def keep_error(self, exc: BaseException) -> None: ...

        def interrupted(self, exc: BaseException) -> None: ...

        def adopt(self, child: Stoppable) -> None: ...

        @property
        def host_calls(self) -> HostCalls | None: ...

    def on_host(
        self, op: int, a: int, b: int, c: int, d: int, view: memoryview | None
    ) -> int | bytes:
        """``qj.host(op, a, b, c, d)``, called by the host library's import (``_host/calls.c``):
        every argument is a guest-chosen i32, hostile until checked. The ops in ``_SPAN_OPS``
        pass a span ``(b, c)`` of guest memory: the import checked it (non-negative, inside
        memory) before calling, and ``view`` is that span, or None when it was outside. No
        handler reads, charges a counter, a limit or a quota with a span it was not given.
        ``view`` is released when this returns: a handler copies what it keeps. A bytes answer
        (at most the scratch buffer's size) is copied there by the import, its length the
        guest's answer."""
        try:
            if op == OP_OOM:
                self._oom = True
                return 0
            if op == OP_SLEEP:
                return self._on_sleep(a, b)
            if op == OP_TIMERS:
                # counts only grow: a guest sending them again (an honest one may, when its
                # result fails to encode) can raise them, never lower them
                self._timers_fired = max(self._timers_fired, a)
                self._timers_cancelled = max(self._timers_cancelled, b)
                return 0
            if op not in _SPAN_OPS:
                return E_HOST
            if view is None:
                raise BadPointer(f"({b}, {c}) is not a span of guest memory")
            if op == OP_CALL:
                return self._on_call(a, view, d)
            if op == OP_LOG:
                return self._on_log(a, view)
            if op == OP_REPORT:
                return self._on_report(view)
            if op == OP_RESULT:
                return self._on_result(a, view)
            if op == OP_FETCH:
                return self._on_fetch(b, c)
            if op == OP_MODULE:
                return self._on_module(a, view)
            return self._on_rejection(view)
        except BadPointer as exc:
            self.keep_error(RuntimeError(f"guest passed a bad pointer (op {op}): {exc}"))
            return E_HOST
        except TransferError as exc:
            self.keep_error(exc)
            if op == OP_RESULT:
                self._sent = (OUT_ERROR, {"name": "TypeError", "message": str(exc)})
            return E_REFUSED
        except Exception as exc:  # never let a host bug trap the guest or vanish
            self.keep_error(exc)
            return E_HOST
        except BaseException as exc:  # SystemExit, KeyboardInterrupt
            self.interrupted(exc)
            return E_HOST

    def _on_sleep(self, ms: int, in_flight: int) -> int:
        """The guest has nothing to run until its next timer, ``ms`` from now.

        With ``deterministic=True`` time is virtual: when no async host call is in flight (they
        take no virtual time), the guest clock jumps by ``ms`` and the guest goes on at once;
        the clock saturates at 2**64 - 1 ns, where every pending timer is due.
        Otherwise the guest returns QJ_PENDING and the driver resumes it after ``ms`` real
        milliseconds (or earlier, when a host call settles), holding no thread meanwhile.
        """
        ms = max(ms, 0)
        if self.opts.deterministic:
            if in_flight <= 0:
                # saturating, as the clock it feeds: past its end the clock stands still and
                # every timer is due (README "Timers"), never wraps to the past
                self._virtual_ns = min(self._virtual_ns + ms * 1_000_000, U64_MAX)
                self._data.virtual_ns = self._virtual_ns
                return 0
            self.wake_in = None
            return E_PENDING
        self.wake_in = ms / 1000
        return E_PENDING

    def _reply_with(self, data: _values.Reply) -> int | bytes:
        """Hand a reply to the guest: into scratch when it fits (the import copies the bytes
        returned), else kept for OP_FETCH (its size returned)."""
        size = len(data)
        self._bytes_in += size
        if size <= self.engine.scratch_size:
            self._reply = b""
            return data if isinstance(data, bytes) else data.tobytes()
        self._reply = data
        return size

    def _on_result(self, kind: int, view: memoryview) -> int:
        # one outcome per run, of a known kind: a guest that sends another is refused
        if self._sent is not None or kind not in _OUTCOME_KINDS:
            return E_HOST
        cap = self.opts.output_limits.max_result_bytes
        length = len(view)
        if length > cap:
            message = f"the result is larger than max_result_bytes ({cap})"
            self._sent = (OUT_ERROR, {"name": "RangeError", "message": message})
            return 0
        data = bytes(view)
        self._bytes_out += length
        # an error record is described leniently: what Python cannot hold becomes text
        value = _values.decode(data, budget=self._decoded, lenient=kind != OUT_VALUE)
        self._sent = (kind, value)
        return 0

    def _on_fetch(self, ptr: int, length: int) -> int:
        reply = self._reply
        if len(reply) != length:
            return E_HOST
        self._instance.write_parts(ptr, _values.reply_parts(reply), length)
        self._reply = b""
        return 0

    def _on_log(self, level: int, view: memoryview) -> int:
        limits = self.opts.output_limits
        length = len(view)
        if (
            self._logs_dropped
            or self._before[1] + len(self.logs) >= limits.max_logs
            or self._log_bytes + length > limits.max_log_bytes
        ):
            # the log is closed for the rest of the run; the guest stops sending (an honest
            # one: a guest that goes on is answered the same, at the cost of this check)
            if not self._logs_dropped:
                self._logs_dropped = True
                note = "[quickjail] log limit reached; later logs were dropped"
                self.logs.append(LogEntry("warn", [note], time.time()))
            return LOG_CLOSED
        try:
            args = _values.decode(bytes(view), budget=self._decoded, lenient=True)
        except TransferError as exc:
            return self._untransferable(exc)
        self._log_bytes += length
        self._bytes_out += length
        lvl = LOG_LEVELS[level] if 0 <= level < len(LOG_LEVELS) else "log"
        self.logs.append(LogEntry(lvl, args if isinstance(args, list) else [args], time.time()))
        return 0

    def _on_rejection(self, view: memoryview) -> int:
        limits = self.opts.output_limits
        length = len(view)
        if (
            self._rejections < limits.max_rejections
            and self._before[1] + len(self.logs) < limits.max_logs
            and self._log_bytes + length <= limits.max_log_bytes
        ):
            reason = _values.decode(bytes(view), budget=self._decoded, lenient=True)
            self._log_bytes += length
            self._rejections += 1
            entry = LogEntry("error", ["Unhandled promise rejection:", reason], time.time())
            self.logs.append(entry)
        return 0

    def _on_report(self, view: memoryview) -> int:
        limits = self.opts.output_limits
        length = len(view)
        if self._before[0] + len(self.reports) >= limits.max_reports:
            return self._refuse(E_REPORT_COUNT, limits.max_reports)
        if self._report_bytes + length > limits.max_report_bytes:
            return self._refuse(E_REPORT_BYTES, limits.max_report_bytes)
        try:
            value = _values.decode(bytes(view), budget=self._decoded)
        except TransferError as exc:
            return self._untransferable(exc)
        self._report_bytes += length
        self._bytes_out += length
        self.reports.append(value)
        notify = self.on_report_threadsafe
        if notify is not None:
            notify(value)
        return 0

    def _refuse(self, code: int, limit: int) -> int:
        """Refuse a report over ``limit``: the guest reads the limit from scratch to name it."""
        self._instance.write(self.engine.scratch_addr, min(limit, U64_MAX).to_bytes(8, "little"))
        return code

    def _untransferable(self, exc: TransferError) -> int:
        """Refuse a report or log the host cannot take, telling the guest why (cut short)."""
        self.keep_error(exc)
        reason = str(exc).encode("utf-8", "replace")[:REFUSAL_TEXT_MAX]
        reason = reason.decode("utf-8", "ignore").encode("utf-8")  # no split character
        self._instance.write(self.engine.scratch_addr, len(reason).to_bytes(4, "little") + reason)
        return E_UNTRANSFERABLE

    def _on_module(self, want: int, view: memoryview) -> int | bytes:
        """Answer a module load: a bare specifier (``MODULE_BARE`` in ``want``) from the host
        modules only, a relative one from the module graph only, so neither stands for the
        other when their names are equal (``./lib`` is never the import ``lib``)."""
        if len(view) > self._longest_module_name():
            return E_REFUSED  # no module has so long a name: nothing to read
        name = bytes(view).decode("utf-8", "replace")
        if want & MODULE_BARE:
            host = self.program.host_modules.get(name)
            return E_REFUSED if host is None else self._reply_with(MODULE_HOST + host)
        src = self.program.modules.get(name)
        if src is None:
            return E_REFUSED
        if want == MODULE_WANT_TEXT:  # a JSON module: the text as written
            return self._reply_with(MODULE_SOURCE + src.encode("utf-8", "surrogatepass"))
        key = module_key(self.engine.guest.build_id, name, src)
        blob = self.engine.bytecode.get(key)
        if blob is not None:
            if key not in self._compiled_now:
                self._bytecode_hits += 1
            return self._reply_with(MODULE_BYTECODE + blob)
        return self._reply_with(MODULE_SOURCE + src.encode("utf-8", "surrogatepass"))

    def _longest_module_name(self) -> int:
        """The longest name, in UTF-8 bytes, of a module this run can load."""
        if self._module_name_max is None:
            names = [*self.program.modules, *self.program.host_modules]
            self._module_name_max = max(
                (len(n.encode("utf-8", "surrogatepass")) for n in names), default=0
            )
        return self._module_name_max

    def _on_call(self, fid: int, view: memoryview, call_id: int) -> int | bytes:
        fn = self.dispatch.function(fid, call_id)
        if fn is None:
            return E_HOST
        admitted = self.dispatch.count
        token = calling.set(self)  # runs the function starts are this run's (sandbox._family)
        try:
            reply = self.dispatch.call(fn, call_id, view)
        finally:
            calling.reset(token)
        if self.dispatch.count != admitted:  # the arguments were read: they count as sent
            self._bytes_out += len(view)
        if reply is None:
            return E_PENDING
        return self._reply_with(reply)
