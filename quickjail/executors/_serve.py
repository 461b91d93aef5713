"""The worker side of a remote run: an ordinary in-process run whose host functions are proxies.

:class:`ServedRun` reads a ``start`` frame, rebuilds the run's options and prepared program,
and replaces every host function by a proxy with the same name and JS mode that sends a
``call`` frame to the caller and waits for its ``reply``: a sync proxy blocks the run's guest
thread, an async one awaits. The proxies' ``HostCalls`` admits everything: quotas, validation
and what an exception may show are the caller's (it replies with the value, or the exact
``(name, message)`` the program must see). Reports stream as ``report`` frames as they
happen; the rest of the :class:`~quickjail.sandbox.CodeResult` goes in the ``result`` frame.

A ``pause`` reply makes the proxy raise :class:`~quickjail.sandbox.host.Pause` with the
caller's info, so the call parks here as it would in-process; a run that pauses sends its
continuation sealed for transit (:mod:`quickjail.executors._durable`), and a ``start`` that
carries one resumes it.

Transport-agnostic: ``send`` delivers a frame to the caller (any thread), and the transport
hands the caller's frames to :meth:`ServedRun.deliver` (any thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel

from quickjail.executors import _durable, _wire
from quickjail.sandbox import _engine, _values
from quickjail.sandbox._abi import FN_ASYNC, FN_VALUE
from quickjail.sandbox._execution import CodeExecution, _soon
from quickjail.sandbox._result import CodeResult, ErrorInfo
from quickjail.sandbox.errors import ContinuationError, TransferError
from quickjail.sandbox.host import HostCalls, HostFunction, Pause

__all__ = ["ServedRun"]


class _Shown(Exception):
    """A proxied call failed in the caller: the program sees exactly this name and message."""

    def __init__(self, js_name: str, message: str) -> None:
        super().__init__(message)
        self.js_name = js_name


class _Stopping(Exception):
    """The run is stopping (terminate, or the caller is gone): a waiting proxy gives up."""


class _AdmitAll:
    """The worker's ``HostCalls``: the caller applies the quotas and describes the errors."""

    def admit(self, fn: HostFunction, nbytes: int) -> None:
        return None

    def reply(self, fn: HostFunction, nbytes: int) -> None:
        return None

    def describe(self, exc: BaseException) -> tuple[str, str] | None:
        if isinstance(exc, _Shown):
            return exc.js_name, str(exc)
        return None


class _ProxyTable:
    """A ``HostTable`` whose data is already in the program; only ``calls`` is used."""

    @property
    def modules(self) -> Mapping[str, Mapping[str, Any]]:
        return {}

    @property
    def globals(self) -> Mapping[str, Any]:
        return {}

    def calls(self) -> HostCalls:
        return _AdmitAll()


class _Waiter:
    """A proxied call waiting for its reply (a thread's event, or an event loop's)."""

    __slots__ = ("aevent", "event", "paused", "reply", "token")

    def __init__(self, token: anyio.lowlevel.EventLoopToken | None) -> None:
        self.token = token
        self.event = threading.Event()
        self.aevent = anyio.Event() if token is not None else None
        self.reply: tuple[bool, bytes] | None = None
        self.paused = False  # the reply is a Pause's info

    def wake(self) -> None:
        self.event.set()
        if self.aevent is not None:
            _soon(self.token, self.aevent.set)


def _is_ours(exc: BaseException) -> bool:
    """A host error that is the caller's own failure seen through a proxy (the caller keeps
    the real exception), or the proxies giving up on a stopping run."""
    return isinstance(exc, _Shown | _Stopping)


class ServedRun:
    """One run on a worker, driven by a ``start`` frame; see the module docstring."""

    def __init__(
        self,
        start: bytes,
        send: Callable[[bytes], None],
        heads: _wire.StartHeads | None = None,
    ) -> None:
        """Rebuild the run from its ``start`` frame (nothing runs until :meth:`run`);
        ``heads`` are the worker's recent ``start`` heads (see :class:`_wire.StartHeads`).

        Raises:
            ProtocolError: ``start`` is not a start frame.
        """
        self._send = send
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._waiters: dict[int, _Waiter] = {}
        self._next_id = 0
        self._stopping = False
        self._sent_reports = 0
        self.ended = False
        """True once the run ended, just before its result frame is sent (a plain flag: a
        ``threading.Event`` costs more to make than the rest of this constructor)."""
        s = _wire.start_from(
            start, proxy=self._proxy, host=_ProxyTable(), report=self._report, heads=heads
        )
        engine = _engine.get_engine(metered=s.opts.fuel is not None)
        resumed = None
        if s.resumed is not None:
            sealed, answers = s.resumed
            try:
                cont = _durable.open_sent(
                    sealed,
                    build_id=engine.guest.build_id,
                    memory_limit_bytes=s.opts.memory_limit_bytes,
                )
            except ContinuationError as exc:
                raise _wire.ProtocolError(f"a continuation that does not load ({exc})") from None
            resumed = (cont, _durable.plan_from(answers, s.opts.memory_limit_bytes))
        self._execution = CodeExecution(engine, s.opts, s.program, resumed)
        self.alone = not s.functions
        """Whether the run has no host functions: the caller then sends it nothing but a stop,
        and the thread that reads the caller's frames may run it (:meth:`start`)."""

    def run(self) -> None:
        """Run to the end and send the ``result`` frame (blocks the calling thread)."""
        try:
            result = self._execution.run_sync()
        except BaseException as exc:  # the worker's own failure: an outcome for the caller
            self._conclude(exc)
        else:
            self._conclude(result)

    def start(self, *, here: bool = False) -> bool:
        """Start the run on the engine's threads without blocking this one: the ``result``
        frame is then sent from there (as :meth:`run` would; it saves a thread hop per run).
        False, and nothing started, when the run needs a thread to drive it (an async host
        function): call :meth:`run` then.

        Args:
            here: run its first slice on this thread, which must have a guest-sized stack
                (``_threads.start_thread``); the slices after a timer wait go to the engine's
                threads. It saves the hand-off to an engine thread and back.
        """
        ex = self._execution
        if ex._has_async:
            return False
        ex._started = True
        box: list[CodeResult | BaseException] = []

        def signal() -> None:  # on an engine thread, which must not see it raise
            try:
                outcome: CodeResult | BaseException = ex._outcome_of(box)
            except BaseException as exc:
                outcome = exc
            try:
                self._conclude(outcome)
            except BaseException:
                self.stop("the worker failed")

        job = ex._whole_run_job(box, signal, ex._sync_report)
        if here:
            job()
        else:
            ex._engine.workers.submit(job)
        return True

    def _conclude(self, outcome: CodeResult | BaseException) -> None:
        """Send the ``result`` frame of the run's outcome (or of the worker's own failure)."""
        if isinstance(outcome, BaseException):
            exc = outcome
            message = f"the worker failed while running the code ({type(exc).__name__}: {exc})"
            result = CodeResult(
                status="error", error=ErrorInfo("InternalError", message[:4096]), host_errors=[exc]
            )
        else:
            result = outcome
        tail = result.reports[self._sent_reports :]
        sealed = None
        if result.status == "paused" and result.continuation is not None:
            try:
                sealed = _durable.seal_for_transit(result.continuation)
            except (TypeError, ValueError) as exc:  # a state over its cap: as in-process
                message = f"the paused run could not be saved ({type(exc).__name__}: {exc})"
                result = CodeResult(status="error", error=ErrorInfo("InternalError", message))
        frame = _wire.result_frame(result, tail, _is_ours, sealed)
        if len(frame) > _wire.MAX_FRAME_BYTES:  # only with output limits raised far
            message = (
                f"the run's outcome ({len(frame)} bytes with its logs) is larger than an "
                f"executor's frame ({_wire.MAX_FRAME_BYTES} bytes)"
            )
            small = CodeResult(status="error", error=ErrorInfo("RangeError", message))
            frame = _wire.result_frame(small, [], _is_ours)
        with self._lock:
            self._stopping = True
        self.ended = True
        self._post(frame)

    def deliver(self, frame: bytes) -> None:
        """Take a ``reply`` or ``terminate`` frame from the caller (any thread)."""
        kind, fields, payloads = _wire.unpack(frame, head_cap=_wire.MAX_FRAME_BYTES)
        if kind == _wire.REPLY and len(fields) == 2 and len(payloads) == 1:
            call_id, ok = fields
            with self._lock:
                waiter = self._waiters.pop(call_id, None)
            if waiter is not None:  # else a late reply to a call the run gave up on
                waiter.reply = (bool(ok), payloads[0])
                waiter.wake()
        elif kind == _wire.PAUSE and len(fields) == 1 and len(payloads) == 1:
            with self._lock:
                waiter = self._waiters.pop(fields[0], None)
            if waiter is not None:
                waiter.reply, waiter.paused = (False, payloads[0]), True
                waiter.wake()
        elif kind == _wire.TERMINATE and len(fields) == 1 and isinstance(fields[0], str):
            self.stop(fields[0])
        else:
            raise _wire.ProtocolError(f"the caller sent an unexpected {kind!r} frame")

    def stop(self, reason: str) -> None:
        """Stop the run (terminate from the caller, or the caller is gone); any thread."""
        self._execution.terminate(reason)
        with self._lock:
            self._stopping = True
            waiters, self._waiters = list(self._waiters.values()), {}
        for waiter in waiters:
            waiter.wake()

    def _post(self, frame: bytes) -> None:
        """Send a frame to the caller; a broken channel stops the run."""
        try:
            with self._send_lock:
                self._send(frame)
        except Exception:
            self.stop("the caller is gone")

    def _report(self, value: Any) -> None:
        try:
            data = _values.encode(value, path="report")
        except TransferError as exc:
            data = _values.encode(f"[quickjail] the report could not cross to the caller: {exc}")
        self._sent_reports += 1
        self._post(_wire.pack(_wire.REPORT, (), (data,)))

    def _begin(self, fid: int, args: tuple[Any, ...], waiter: _Waiter) -> None:
        data = _values.encode(list(args), path="arguments")
        with self._lock:
            if self._stopping:
                raise _Stopping("the run is stopping")
            self._next_id += 1
            call_id = self._next_id
            self._waiters[call_id] = waiter
        self._post(_wire.pack(_wire.CALL, (call_id, fid), (data,)))

    @staticmethod
    def _outcome(waiter: _Waiter) -> Any:
        if waiter.reply is None:
            raise _Stopping("the run is stopping")
        ok, data = waiter.reply
        value = _values.decode(data)
        if waiter.paused:
            raise Pause(value)  # the call parks here, as in-process
        if ok:
            return value
        if not isinstance(value, dict):
            raise _Stopping("a malformed reply")
        raise _Shown(str(value.get("name", "Error")), str(value.get("message", "")))

    def _proxy(self, fid: int, name: str, mode: int) -> HostFunction:
        if mode == FN_ASYNC:

            async def call_async(*args: Any) -> Any:
                waiter = _Waiter(anyio.lowlevel.current_token())
                self._begin(fid, args, waiter)
                assert waiter.aevent is not None
                await waiter.aevent.wait()
                return self._outcome(waiter)

            return HostFunction(name, call_async, is_async=True)

        def call_sync(*args: Any) -> Any:
            waiter = _Waiter(None)
            self._begin(fid, args, waiter)
            waiter.event.wait()
            return self._outcome(waiter)

        return HostFunction(name, call_sync, sync_js=mode == FN_VALUE)
