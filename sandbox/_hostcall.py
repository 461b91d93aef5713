"""Host calls of one run: the dispatch table, quotas through the table's HostCalls, replies.

A call reaches :meth:`Dispatch.call` with the function's id and its encoded arguments, after
the run has checked the pointer and length. Order of checks: the function exists and the call
is well-formed (the guest's business), the quota admits it (before decoding anything), the
arguments decode and ``prepare`` accepts them (validation), then a sync function is called at
once and an async one is queued for the driver. Every admitted call ends with exactly one
``HostCalls.reply``. Decoded arguments are charged to the run's decode budget while the host
holds them (until a sync call returns, until an async call settles), so calls cannot make the
host hold more than results and reports could.

A function that raises :class:`~quickjail.sandbox.host.Pause` parks its call: the guest keeps
its promise pending, :attr:`Dispatch.paused` records it (with the decoded arguments, before
``prepare``), and the call ends later with the answer ``resume`` delivers through
:meth:`Dispatch.settle` like any async call's outcome (one ``HostCalls.reply`` still).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from quickjail.sandbox import _values
from quickjail.sandbox._abi import CALL_ERROR, CALL_OK
from quickjail.sandbox._log import RunLog
from quickjail.sandbox._result import PausedCall
from quickjail.sandbox._values import Message, Reply
from quickjail.sandbox.errors import HostCallRefused, TransferError
from quickjail.sandbox.host import HostCalls, HostFunction, Pause, Rejection

__all__ = ["Dispatch", "PendingCall", "invoke"]


@dataclass(frozen=True, slots=True)
class PendingCall:
    """An async host call the guest is waiting for."""

    call_id: int
    fn: HostFunction
    args: tuple[Any, ...]
    raw: list[Any] = field(default_factory=list)  # the decoded arguments, before prepare


@dataclass(slots=True)
class Dispatch:
    """The host-call side of one run."""

    functions: tuple[HostFunction, ...]
    calls: HostCalls | None
    on_error: Callable[[BaseException], None]  # keeps a host exception for the result
    budget: _values.DecodeBudget  # the run's: arguments are charged while the call holds them
    count: int = 0
    held: dict[int, int] = field(default_factory=dict)  # async call id -> bytes charged
    refusals: int = 0
    pending: list[PendingCall] = field(default_factory=list)
    log: RunLog = field(default_factory=RunLog)  # the run's records (sandbox/_log.py)
    paused: list[PausedCall] = field(default_factory=list)
    decoded: list[Any] = field(default_factory=list)  # the last call's arguments, before prepare

    def function(self, fid: int, call_id: int) -> HostFunction | None:
        """The function a well-formed call names, or None (an unknown id, a bad call id)."""
        if not 0 <= fid < len(self.functions) or self.calls is None:
            return None
        fn = self.functions[fid]
        if fn.is_async and call_id <= 0:
            return None
        return fn

    def call(self, fn: HostFunction, call_id: int, data: bytes | memoryview) -> Reply | None:
        """Make a call; return the reply for the guest, or None when an async call is queued.

        ``data`` is the arguments message (a view of guest memory is copied out only once the
        quota admitted the call).
        """
        begun = self.begin(fn, data)
        if not isinstance(begun, tuple):
            return begun if fn.is_async else _headed(CALL_ERROR, begun)
        args, charged = begun
        raw, self.decoded = self.decoded, []  # held by the call alone
        if fn.is_async:
            self.held[call_id] = charged
            self.pending.append(PendingCall(call_id, fn, args, raw))
            return None
        try:
            ok, outcome = invoke(fn, args)
        finally:
            self.budget.used -= charged  # the arguments are the function's now, or gone
        if not ok and isinstance(outcome, Pause):
            refused = self.pause(fn, call_id, raw, outcome)
            if refused is None:
                return None  # parked: the guest's promise waits for resume's answer
            ok, outcome = False, refused
        ok, reply = self.settle(fn, outcome, ok=ok)
        return _headed(CALL_OK if ok else CALL_ERROR, reply)

    def begin(
        self, fn: HostFunction, data: bytes | memoryview
    ) -> tuple[tuple[Any, ...], int] | Reply:
        """Admit a call (quota), decode its arguments and ``prepare`` them (validation).

        Returns the prepared arguments and the bytes they hold of the run's decode budget
        (the caller gives them back once the call no longer holds them), or, when the call
        was refused, the error's value message (the call has ended). An executor's caller
        side uses it with :func:`invoke` and :meth:`settle`, as :meth:`call` does.
        """
        assert self.calls is not None
        try:
            self.calls.admit(fn, len(data))
        except HostCallRefused as exc:
            self.refusals += 1
            self.log.refused(fn.name, str(exc))
            return _values.encode({"name": exc.js_name, "message": str(exc)})
        self.count += 1
        mark = self.budget.used
        try:
            args = _values.decode(bytes(data), budget=self.budget)
            if not isinstance(args, list):
                raise TransferError("host call arguments must be an array")
            self.decoded = args
            prepared = fn.prepare(args) if fn.prepare is not None else tuple(args)
        except Exception as exc:  # the program's arguments were refused: not a host error
            self.budget.used = mark
            self.log.refused(fn.name, str(exc), arguments=True)
            return self.settle(fn, exc, ok=False, record=False)[1]
        return prepared, self.budget.used - mark

    def pause(
        self, fn: HostFunction, call_id: int, args: list[Any], exc: Pause
    ) -> BaseException | None:
        """Park a call whose function raised ``exc``; None when parked, else the exception
        that fails the call instead (a call that cannot wait: ``synchronous`` in JS, or an
        ``info`` that cannot travel in a continuation)."""
        if call_id <= 0 or fn.sync_js:
            return TransferError(
                f"host function {fn.name} paused, but its JS call returns its value at once "
                "(synchronous), so it cannot wait"
            )
        try:
            _values.encode(exc.info, path=f"{fn.name}() Pause.info")
        except TransferError as refused:
            return refused
        self.paused.append(PausedCall(call_id, fn.name, args, exc.info))
        return None

    def answer(self, fn: HostFunction, value: Any) -> tuple[bool, Reply]:
        """Settle a paused call with ``resume``'s answer: a value, or a :class:`Rejection`."""
        if isinstance(value, Rejection):
            data = _values.encode({"name": value.name, "message": value.message})
            assert self.calls is not None
            try:
                self.calls.reply(fn, len(data))
            except HostCallRefused as exc:
                self.refusals += 1
                return False, _values.encode({"name": exc.js_name, "message": str(exc)})
            return False, data
        return self.settle(fn, value, ok=True)

    def release(self, call_id: int) -> None:
        """An async call settled: the host no longer holds its arguments for the run.

        Called on the run's slice (with the decodes), so the budget has one writer."""
        self.budget.used -= self.held.pop(call_id, 0)

    def settle(
        self, fn: HostFunction, outcome: Any, *, ok: bool, record: bool = True
    ) -> tuple[bool, Reply]:
        """Encode how a call ended and charge its reply: ``(ok, value message)``; a long
        ASCII text in the result stays the str until it is copied into the guest."""
        assert self.calls is not None
        data: Reply | None = None
        if ok:
            data = _values.encode_scalar(outcome)  # most replies; the path is named only if not
            if data is None:
                try:
                    data = _values.encode_reply(outcome, path=f"{fn.name}() result")
                except TransferError as exc:
                    outcome, ok = exc, False
        if data is None:
            if record:
                self.on_error(outcome)
                self.log.host_error(fn.name, outcome)
            data = _values.encode(self.error_view(outcome, fn))
        try:
            self.calls.reply(fn, len(data))
        except HostCallRefused as exc:
            self.refusals += 1
            self.log.refused(fn.name, str(exc))
            return False, _values.encode({"name": exc.js_name, "message": str(exc)})
        return ok, data

    def error_view(self, exc: BaseException, fn: HostFunction) -> dict[str, str]:
        """The JS-side view of a host exception: what the table allows, else its class only."""
        if isinstance(exc, TransferError):
            return {"name": "TypeError", "message": str(exc)}
        if isinstance(exc, HostCallRefused):
            return {"name": exc.js_name, "message": str(exc)}
        assert self.calls is not None
        shown = self.calls.describe(exc)
        if shown is not None:
            return {"name": shown[0], "message": shown[1]}
        return {
            "name": "Error",
            "message": f"host function {fn.name} failed ({type(exc).__name__})",
        }

    def take_pending(self) -> list[PendingCall]:
        """The async calls queued since the last time (the driver starts them)."""
        calls, self.pending = self.pending, []
        return calls


def _headed(head: bytes, data: Reply) -> Reply:
    """A sync reply: ``head`` (CALL_OK/CALL_ERROR) then the value message."""
    return head + data if isinstance(data, bytes) else Message((head, *data.parts))


_PLAIN: Final = frozenset({int, str, float, bool, type(None), list, dict, tuple, bytes})


def invoke(fn: HostFunction, args: tuple[Any, ...]) -> tuple[bool, Any]:
    """Call a sync host function: ``(True, value)``, or ``(False, exception)`` when it raised
    an ``Exception`` (or returned an awaitable); ``SystemExit`` and the like propagate."""
    try:
        value = fn.fn(*args)
        if type(value) not in _PLAIN and inspect.isawaitable(value):
            _close_awaitable(value)
            raise TypeError("a sync host function returned an awaitable")
    except Exception as exc:
        return False, exc
    return True, value


def _close_awaitable(value: Any) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        close()
