"""Durable runs on an executor: a run that pauses on a worker, and a resumed run sent to one.

The caller's key never leaves the caller. A worker hands a paused run back sealed under
``TRANSIT_KEY``, a key anyone can read (it is here): its MAC proves nothing, it only lets
the caller open the bytes with :func:`~quickjail.sandbox._continuation.load`, exactly as
bytes from a store are opened (the sizes checked against caps from the run's memory limit
before anything is hashed or inflated, a bounded inflate, the state decoded under a
budget). Then the caller keeps only what it cannot know itself: the memory (as hostile as
a compromised guest's, as any resumed memory is) and the worker's counters; the options,
the function table, the quota usage and the paused calls are the caller's own, and a
worker whose paused calls are not the ones the caller paused breaks the protocol.

A resume on an executor goes the other way: the caller opens the sealed bytes with its key,
answers the paused calls through its own ``HostCalls`` (quotas, as in-process), and sends
the worker the continuation sealed under ``TRANSIT_KEY`` with the answers.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from quickjail.executors._wire import ProtocolError
from quickjail.sandbox import _durable, _values
from quickjail.sandbox._continuation import Continuation, load
from quickjail.sandbox._hostcall import Dispatch
from quickjail.sandbox._options import RunOptions
from quickjail.sandbox._program import Program
from quickjail.sandbox._result import PausedCall
from quickjail.sandbox.errors import ContinuationError, TransferError
from quickjail.sandbox.host import Rejection

__all__ = [
    "TRANSIT_CONTEXT",
    "TRANSIT_KEY",
    "accept_paused",
    "answer_in_caller",
    "open_sent",
    "plan_from",
    "reports_before",
    "seal_for_transit",
]

TRANSIT_KEY: Final = hashlib.sha256(b"quickjail executor transit key").digest()
"""The key a continuation crosses between a caller and its worker under: public, so the
bytes are no more trusted than unsigned ones."""
TRANSIT_CONTEXT: Final = b"quickjail executor transit"


def seal_for_transit(cont: Continuation) -> bytes:
    """A continuation as bytes to send across (worker to caller, or caller to worker)."""
    return cont.seal(TRANSIT_KEY, TRANSIT_CONTEXT)


def open_sent(sealed: bytes, *, build_id: str, memory_limit_bytes: int) -> Continuation:
    """Open bytes from :func:`seal_for_transit` as untrusted bytes from a store are opened.

    Raises:
        ContinuationError: the bytes were refused (too large for the memory limit,
            truncated, inconsistent, another guest build).
    """
    return load(
        sealed,
        key=TRANSIT_KEY,
        context=TRANSIT_CONTEXT,
        build_id=build_id,
        memory_limit_bytes=memory_limit_bytes,
        max_age=None,
    )


def accept_paused(
    sealed: bytes,
    *,
    build_id: str,
    opts: RunOptions,
    program: Program,
    dispatch: Dispatch,
    host_calls: int,
    refusals: int,
) -> tuple[Continuation, list[PausedCall]]:
    """The continuation of a run that paused on a worker, checked and made the caller's.

    Args:
        sealed: the worker's bytes (hostile).
        build_id: this process's guest build (the worker's must be the same).
        opts: the run's options (its memory limit caps the bytes).
        program: the run's program (its functions are the table).
        dispatch: the caller's dispatch: the calls it paused, its quota usage.
        host_calls: the run's host calls, every leg (as its metrics say).
        refusals: the run's quota refusals, every leg.

    Returns:
        The continuation with the caller's options, table, quotas and counts, and its
        paused calls (with the guest's call ids, which only the worker knows).

    Raises:
        ProtocolError: the bytes were refused, or their paused calls are not the caller's.
    """
    try:
        cont = open_sent(sealed, build_id=build_id, memory_limit_bytes=opts.memory_limit_bytes)
        names, calls, indices = _durable.saved_paused(cont.state)
    except ContinuationError as exc:
        raise ProtocolError(f"a paused result whose continuation was refused ({exc})") from None
    table = [fn.name for fn in program.functions]
    theirs = sorted(_paused_key(fid, p) for fid, p in zip(indices, calls, strict=True))
    mine = sorted(_paused_key(table.index(p.function), p) for p in list(dispatch.paused))
    if names != table or theirs != mine:
        raise ProtocolError("a paused result whose paused calls are not the ones the caller paused")
    state = dict(cont.state)
    counters = state.get("counters")
    if not isinstance(counters, dict):
        raise ProtocolError("a paused result whose continuation has no counters")
    state["counters"] = {**counters, "host_calls": host_calls, "quota_refusals": refusals}
    state["options"] = _durable.options_record(opts)
    state["functions"] = table
    usage = getattr(dispatch.calls, "usage", None)
    state["quotas"] = usage() if callable(usage) else None
    fuel = state.get("fuel")
    if opts.fuel is None:
        state["fuel"] = None
    elif type(fuel) is not int or not 0 <= fuel <= opts.fuel:
        raise ProtocolError("a paused result with more fuel left than the run had")
    return Continuation(cont.build_id, cont.memory_size, cont.pages, state), calls


def _paused_key(fid: int, p: PausedCall) -> bytes:
    """A paused call as comparable bytes: its function, arguments and info as encoded."""
    try:
        return _values.encode([fid, p.function, p.args, p.info])
    except TransferError as exc:
        raise ProtocolError(f"a paused call that does not encode ({exc})") from None


def answer_in_caller(
    cont: Continuation, plan: list[_durable.Answer], program: Program, dispatch: Dispatch
) -> bytes:
    """Answer the paused calls through the caller's ``HostCalls`` (its quota usage restored
    from the continuation first), as a resumed run's first slice does in-process; the
    answers as the value message the worker's :func:`plan_from` reads.

    Raises:
        ContinuationError: the continuation's quota state does not fit the table's quotas.
    """
    restore = getattr(dispatch.calls, "restore", None)
    quotas = cont.state.get("quotas")
    if quotas is not None and callable(restore):
        try:
            restore(quotas)
        except (TypeError, ValueError) as exc:
            raise ContinuationError(
                f"cannot resume this continuation: its quota state does not fit ({exc})",
                reason="tampered",
            ) from None
    out: list[list[Any]] = []
    for call_id, fid, value in plan:
        ok, data = dispatch.answer(program.functions[fid], value)
        if not ok:  # a rejection's error (the user's, or the quota's): always a bytes message
            value = _values.decode(data) if isinstance(data, bytes) else {"name": "Error"}
        out.append([call_id, fid, ok, value])
    return _values.encode(out, path="answers")


def reports_before(cont: Continuation) -> tuple[int, int]:
    """The reports, and their bytes, of a paused run's legs before the resume (its output
    limits count every leg); 0 for what the counters do not hold as an int."""
    counters = cont.state.get("counters")
    if not isinstance(counters, dict):
        return 0, 0
    got = [counters.get(name) for name in ("reports", "report_bytes")]
    return (got[0] if type(got[0]) is int else 0), (got[1] if type(got[1]) is int else 0)


def plan_from(payload: bytes, memory_limit_bytes: int) -> list[_durable.Answer]:
    """The worker's answers to the paused calls, from :func:`answer_in_caller`'s message: a
    value, or a :class:`Rejection` for a call the caller rejected (or whose quota refused).

    Raises:
        ProtocolError: not such a message.
    """
    try:
        raw = _values.decode(payload, budget=_values.DecodeBudget.for_run(memory_limit_bytes))
    except TransferError as exc:
        raise ProtocolError(f"answers that do not decode ({exc})") from None
    if not isinstance(raw, list):
        raise ProtocolError("answers that are not a list")
    plan: list[_durable.Answer] = []
    for item in raw:
        if not (isinstance(item, list) and len(item) == 4):
            raise ProtocolError("a malformed answer")
        call_id, fid, ok, value = item
        if type(call_id) is not int or type(fid) is not int or type(ok) is not bool:
            raise ProtocolError("a malformed answer")
        if not ok:
            if not isinstance(value, dict):
                raise ProtocolError("a malformed rejection")
            value = Rejection(str(value.get("message", "")), str(value.get("name", "Error")))
        plan.append((call_id, fid, value))
    return plan
