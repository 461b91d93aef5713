"""The guest phase: a compromised guest played against the host's handler, in-process.

An attacker who controls the guest's code controls every argument of the ``qj.host`` import. This
phase plays such a guest: each move builds a run with the user's bridge the way ``bridge.run_code``
builds it (a fresh instance, its memory real) and calls ``qj.host(op, a, b, c, d)`` through the
host library's own dispatch (``NativeInstance.play``: the span checks and the handler the guest's
import reaches), with what the attacker would choose: spans no memory holds for every op, replies
fetched twice or with a lying length, outcomes of unknown kind or sent twice, unknown functions and
modules, malformed and over-cap value messages (blob indices out of range, negative or reused,
hash-colliding members, 200,000 levels of nesting), timer waits and timer counts out of range or
sent again, and a compile instance answering for another module or twice. Every hostile call must
be refused (a negative return, or the documented answer: a report refusal's code, a clamped timer
wait or count) and charge nothing: a violation is reported when the handler raises
(``host-exception``), does not return within :data:`MOVE_TIMEOUT` (``hang``), accepts a hostile
call (``outcome``), moves a counter or a quota (``quota``; the decode budget, charged before
parsing, may only grow, a refused result counts its bytes as sent, and no counter ever goes down),
or makes the host grow (``memory``: resident memory over :data:`MOVE_RSS_MARGIN`, or more host
errors or logs kept than the limits allow).

:func:`run_guest` takes ``make_run`` (a factory of the run to attack) so the stress test's
own tests can hand it a deliberately broken handler and see each kind reported.
"""

from __future__ import annotations

import functools
import reprlib
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from quickjail import bridge
from quickjail._stress._report import Progress, TestCaseResult, Violation, ViolationKind
from quickjail._stress._runner import Runner
from quickjail.sandbox import _bytecode, _engine, _values
from quickjail.sandbox._abi import (
    E_HOST,
    E_PENDING,
    E_REFUSED,
    E_UNTRANSFERABLE,
    OP_BYTECODE,
    OP_CALL,
    OP_FETCH,
    OP_LOG,
    OP_MODULE,
    OP_REJECTION,
    OP_REPORT,
    OP_RESULT,
    OP_SLEEP,
    OP_TIMERS,
    OUT_VALUE,
)
from quickjail.sandbox._program import Program
from quickjail.sandbox._run import MAX_HOST_ERRORS, Run

__all__ = ["MOVES", "MOVE_RSS_MARGIN", "MOVE_TIMEOUT", "Move", "make_run", "run_guest"]

MOVE_TIMEOUT: Final = 30.0  # seconds one move may take before it counts as a hang
MOVE_RSS_MARGIN: Final = 64 * 2**20  # host RSS one move may add
_BIG_MODULE: Final = "__qj_stress_big.js"  # larger than scratch: its reply waits for OP_FETCH
_P61: Final = 2**61 - 1  # CPython hashes an int n as n mod P61: its multiples all hash alike
_MiB: Final = 2**20
# charged with a message's estimate before parsing: a malformed message may use it up, but no
# call may give it back
MAY_GROW: Final = frozenset({"decoded"})
# a refused result becomes the run's error, and its bytes count as sent
RESULT_REFUSED: Final = frozenset({"sent", "bytes_out"})
# counters no call may lower, whatever it is allowed to move
NEVER_DOWN: Final = frozenset(
    {
        "log_bytes",
        "report_bytes",
        "bytes_in",
        "bytes_out",
        "decoded",
        "rejections",
        "calls",
        "refusals",
        "virtual_ns",
        "timers_fired",
        "timers_cancelled",
    }
)
_I32_MAX: Final = 2**31 - 1
# hostile (a, b) of OP_SLEEP (ms to the next timer, async calls in flight) and OP_TIMERS
# (timers fired, cancelled)
_I32_PAIRS: Final = ((-1, 0), (-(2**31), -1), (_I32_MAX, 0), (10, _I32_MAX), (0, -(2**31)))

Call = tuple[int, int, int, int, int]  # (op, a, b, c, d) of one qj.host call
# the ops that pass a span (b, c) of guest memory
SPAN_OPS: Final = {
    "log": OP_LOG,
    "report": OP_REPORT,
    "result": OP_RESULT,
    "rejection": OP_REJECTION,
    "module": OP_MODULE,
    "call": OP_CALL,
    "fetch": OP_FETCH,
}
# (ptr, len): negative lengths (which would lower a budget charged with them), negative
# pointers, spans past the end of any 32-bit memory and past the end of this one
_SPANS: Final = ((0, -1), (0, -(2**31)), (-1, 1), (0, 2**31 - 1), (2**31 - 64, 64))


def message(text: str, blobs: Sequence[bytes] = (), *, tagged: bool = True) -> bytes:
    """A value message as a compromised guest writes it: header, JSON text, blobs."""
    data = text.encode("utf-8")
    parts = [struct.pack("<BI", 1 if tagged else 0, len(data)), data]
    parts.append(struct.pack("<I", len(blobs)))
    for blob in blobs:
        parts += [struct.pack("<I", len(blob)), blob]
    return b"".join(parts)


def _malformed() -> dict[str, bytes]:
    tag = '{"\\u0000":'
    collide = ",".join(str(i * _P61) for i in range(1, 2000))
    return {
        "truncated-header": b"\x01\x05\x00",
        "text-length-past-end": struct.pack("<BI", 1, 2**31) + b"[]",
        "blob-count-huge": message("[]")[:-4] + struct.pack("<I", 2**32 - 1),
        "blob-length-past-end": message("[]")[:-4] + struct.pack("<II", 1, 2**31),
        "not-utf8": message("[]").replace(b"[]", b"\xff\xfe"),
        "not-json": message("{[}"),
        "unknown-tag": message(tag + '["zz",0]}'),
        "blob-index-negative": message(tag + '["b",-1]}', (b"abc",)),
        "blob-index-past-end": message(tag + '["b",1]}', (b"abc",)),
        "blob-reused": message("[" + ",".join([tag + '["t",0]}'] * 64) + "]", (b"x" * 4096,)),
        "colliding-set": message(tag + '["s",[' + collide + "]]}"),
        "nested-200k": message("[" * 200_000 + "]" * 200_000, tagged=False),
    }


@dataclass(frozen=True, slots=True)
class Move:
    """One move of the compromised guest: hostile calls, and what each must get.

    ``setup`` makes the well-formed calls the move needs first (they may be charged);
    ``play`` returns the hostile calls; ``rc`` is the exact answer when it matters (else any
    negative one); ``changes`` names the counters the move may move (an over-cap log is
    dropped with one note; a refused result becomes the run's error).
    """

    id: str
    play: Callable[[Run], list[Call]]
    setup: Callable[[Run], None] | None = None
    rc: int | None = None
    changes: frozenset[str] = field(default_factory=frozenset)


def put(r: Run, data: bytes) -> tuple[int, int]:
    """Write ``data`` into the guest's scratch area; its span."""
    addr = r.engine.scratch_addr
    r.instance.write(addr, data)
    return addr, len(data)


def with_data(op: int, data: bytes, a: int = 0, d: int = 0) -> Callable[[Run], list[Call]]:
    """A move making one ``op`` call with ``data`` placed in scratch as its span."""

    def play(r: Run) -> list[Call]:
        return [(op, a, *put(r, data), d)]

    return play


def _ask_big(r: Run) -> None:
    ptr, n = put(r, _BIG_MODULE.encode())
    r.instance.play(OP_MODULE, 0, ptr, n, 0)


def _fetch_big(r: Run) -> None:
    _ask_big(r)
    r.instance.play(OP_FETCH, 0, r.engine.scratch_addr, len(r._reply), 0)


def _send_result(r: Run) -> None:
    r.instance.play(OP_RESULT, OUT_VALUE, *put(r, _values.encode("first")), 0)


def _calls_to_unknown(r: Run) -> list[Call]:
    n = len(r.dispatch.functions)
    ptr, length = put(r, _values.encode([1]))
    return [(OP_CALL, fid, ptr, length, 1) for fid in (-1, n, 2**31 - 1)]


def _async_calls_without_id(r: Run) -> list[Call]:
    ptr, length = put(r, _values.encode([1]))
    fids = [i for i, fn in enumerate(r.dispatch.functions) if fn.is_async]
    return [(OP_CALL, fid, ptr, length, cid) for fid in fids[:1] for cid in (0, -1)]


def _timers_sent(r: Run) -> None:
    r.instance.play(OP_TIMERS, 100, 50, 0, 0)


def _spans(op: int) -> Callable[[Run], list[Call]]:
    return lambda r: [(op, a, p, n, a) for p, n in _SPANS for a in (0, 1)]


def _moves() -> tuple[Move, ...]:
    moves = [Move(f"span-{name}", _spans(op)) for name, op in SPAN_OPS.items()]
    moves += [
        Move(
            "unknown-ops",
            lambda r: [(op, 0, 0, 8, 0) for op in (0, 12, 255, -1, _I32_MAX, OP_BYTECODE)],
            rc=E_HOST,
        ),
        # a timer wait: the guest waits for the driver (clamped to 0..2^31-1 ms), nothing else
        Move(
            "sleep-out-of-range",
            lambda r: [(OP_SLEEP, a, b, 0, 0) for a, b in _I32_PAIRS],
            rc=E_PENDING,
            changes=frozenset({"wake_in"}),
        ),
        # end-of-run timer counts: clamped, and never lowered by a second message
        Move(
            "timers-out-of-range",
            lambda r: [(OP_TIMERS, a, b, 0, 0) for a, b in _I32_PAIRS],
            rc=0,
            changes=frozenset({"timers_fired", "timers_cancelled"}),
        ),
        Move(
            "timers-lowered",
            lambda r: [(OP_TIMERS, a, b, 0, 0) for a, b in ((1, 0), (-1, -1), (100, 50))],
            setup=_timers_sent,
            rc=0,
        ),
        Move("fetch-nothing-pending", lambda r: [(OP_FETCH, 0, r.engine.scratch_addr, 16, 0)]),
        Move(
            "fetch-twice",
            lambda r: [(OP_FETCH, 0, r.engine.scratch_addr, r.engine.scratch_size + 64, 0)],
            setup=_fetch_big,
        ),
        Move(
            "fetch-lying-length",
            lambda r: [
                (OP_FETCH, 0, r.engine.scratch_addr, len(r._reply) + delta, 0) for delta in (-1, 1)
            ],
            setup=_ask_big,
        ),
        Move("result-unknown-kind", with_data(OP_RESULT, _values.encode(1), a=-1), rc=E_HOST),
        Move(
            "result-twice",
            with_data(OP_RESULT, _values.encode("second"), a=OUT_VALUE),
            setup=_send_result,
            rc=E_HOST,
        ),
        Move("module-name-1mib", lambda r: [(OP_MODULE, 0, 0, _MiB, 0)], rc=E_REFUSED),
        Move("module-unknown", with_data(OP_MODULE, b"__qj_nope.js"), rc=E_REFUSED),
        Move("call-unknown-function", _calls_to_unknown, rc=E_HOST),
        Move("call-async-without-id", _async_calls_without_id, rc=E_HOST),
        Move(
            "over-cap-report",
            # refused unread: E_REPORT_BYTES, or E_HOST when the span lies past the memory
            # the guest has so far (the isolation suite pins E_REPORT_BYTES)
            lambda r: [(OP_REPORT, 0, 0, r.opts.output_limits.max_report_bytes + 1, 0)],
        ),
    ]
    for name, data in _malformed().items():
        moves += [
            Move(f"malformed-report-{name}", with_data(OP_REPORT, data), rc=E_UNTRANSFERABLE),
            Move(
                f"malformed-result-{name}",
                with_data(OP_RESULT, data, a=OUT_VALUE),
                rc=E_REFUSED,
                changes=RESULT_REFUSED,
            ),
        ]
    return tuple(moves)


MOVES: Final[tuple[Move, ...]] = _moves()


def make_run(runner: Runner) -> Run:
    """A run with the user's bridge (and one module too large for scratch), as run_code
    builds it; nothing of it runs."""
    b = runner.bridge
    execution = bridge.run_code(
        "export default 1",
        imports=b.imports,
        globals=b.globals,
        output_limits=b.output_limits,
        quotas=b.quotas,
        modules={"./" + _BIG_MODULE: "// " + "x" * _engine.get_engine().scratch_size},
        timeout=runner.timeout,
        memory_limit_bytes=runner.memory,
        language="javascript",
    )
    program = execution._program
    assert isinstance(program, Program)
    return Run(execution._engine, execution._opts, program)


def counters(r: Run) -> dict[str, Any]:
    """Everything a host call can charge: the run's counters, what it kept, and the quotas
    (the lists are copies of the references, so a snapshot costs no guest data)."""
    calls = r.dispatch.calls
    quota = {k: getattr(calls, k) for k in getattr(calls, "__slots__", ())}
    return {
        "log_bytes": r._log_bytes,
        "report_bytes": r._report_bytes,
        "bytes_in": r._bytes_in,
        "bytes_out": r._bytes_out,
        "decoded": r._decoded.used,
        "rejections": r._rejections,
        "logs": list(r.logs),
        "reports": list(r.reports),
        "logs_dropped": r._logs_dropped,
        "sent": r._sent,
        "reply": r._reply,
        "calls": r.dispatch.count,
        "refusals": r.dispatch.refusals,
        "pending": list(r.dispatch.pending),
        "quota": quota,
        "fatal": r.fatal,
        "wake_in": r.wake_in,
        "virtual_ns": r._virtual_ns,
        "timers_fired": r._timers_fired,
        "timers_cancelled": r._timers_cancelled,
    }


def _play_run(runner: Runner, move: Move, new_run: Callable[[Runner], Run]) -> list[Violation]:
    """Play one move against a fresh run; the violations it found."""
    out: list[Violation] = []

    def add(kind: ViolationKind, message: str, call: Call | None = None) -> None:
        out.append(Violation("guest", move.id, kind, message, repr(call) if call else None))

    r = new_run(runner)
    try:
        if move.setup is not None:
            move.setup(r)
        for call in move.play(r):
            before = counters(r)
            try:
                rc = r.instance.play(*call)
            except BaseException as exc:  # the handler must answer every call itself
                add("host-exception", f"on_host raised {type(exc).__name__}: {exc}", call)
                continue
            after = counters(r)
            if (rc != move.rc) if move.rc is not None else rc >= 0:
                want = move.rc if move.rc is not None else "a refusal (< 0)"
                add("outcome", f"the host answered {rc} to a hostile call, not {want}", call)
            moved = sorted(
                k
                for k in before
                if before[k] != after[k]
                and k not in move.changes
                and not (k in MAY_GROW and after[k] > before[k])
            )
            moved += sorted(k for k in NEVER_DOWN if after[k] < before[k] and k not in moved)
            if moved:
                shown = ", ".join(
                    f"{k}: {reprlib.repr(before[k])} -> {reprlib.repr(after[k])}" for k in moved
                )
                add("quota", f"a refused call charged the host's counters ({shown})", call)
            wake = r.wake_in
            if wake is not None and not 0 <= wake <= _I32_MAX / 1000:
                add("outcome", f"the guest would be woken in {wake!r} s", call)
            if not (0 <= r._timers_fired <= _I32_MAX and 0 <= r._timers_cancelled <= _I32_MAX):
                shown = f"{r._timers_fired}, {r._timers_cancelled}"
                add("outcome", f"the timer counts left the guest's range ({shown})", call)
        if r.fatal is not None:
            add("host-exception", f"the run was stopped by {type(r.fatal).__name__}")
        limits = runner.bridge.output_limits
        if len(r.host_errors) > MAX_HOST_ERRORS or len(r.logs) > limits.max_logs + 1:
            add("memory", f"the host kept {len(r.host_errors)} errors and {len(r.logs)} logs")
    finally:
        r.release()
    return out


def _play_compiler(runner: Runner) -> list[Violation]:
    """A compile instance answering for another module, and twice: the cache keeps nothing."""
    out: list[Violation] = []
    engine = _engine.get_engine()
    src = f"export default {time.time_ns()}"
    key = _bytecode.module_key(engine.guest.build_id, "stress.js", src)
    compiler = _bytecode._Compiler(
        engine, key, "stress.js", src, runner.memory, runner.memory // 2, lambda: False
    )
    compiler.instance, store = engine.new_instance(runner.memory, compiler)
    try:
        addr = engine.scratch_addr
        compiler.instance.write(addr, b"\x00" * 64)
        for index in (1, -1, 2**31 - 1):
            if compiler.instance.play(OP_BYTECODE, index, addr, 64, 0) >= 0:
                out.append(
                    Violation(
                        "guest",
                        "compile-other-module",
                        "outcome",
                        f"a compile instance's bytecode for module {index} was accepted",
                    )
                )
        for op in (OP_SLEEP, OP_TIMERS):  # a compile batch has no timers
            for a, b in _I32_PAIRS:
                if compiler.instance.play(op, a, b, 0, 0) >= 0:
                    out.append(
                        Violation(
                            "guest",
                            "compile-timer-op",
                            "outcome",
                            f"a compile instance's op {op} ({a}, {b}) was accepted",
                        )
                    )
        compiler.instance.play(OP_BYTECODE, 0, addr, -1, 0)  # its one answer, spent on a bad span
        if compiler.instance.play(OP_BYTECODE, 0, addr, 64, 0) >= 0 or engine.bytecode.get(key):
            out.append(
                Violation(
                    "guest",
                    "compile-second-answer",
                    "outcome",
                    "a compile instance answered twice and the cache kept its bytes",
                )
            )
    finally:
        _engine.release_store(store)
        compiler.instance.close()
    return out


def _bounded(fn: Callable[[], list[Violation]], case: str) -> tuple[list[Violation], bool]:
    """Call ``fn`` on a thread of its own; a hang is reported instead of waited for."""
    box: list[list[Violation] | BaseException] = []

    def work() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # reported below with the move's name
            box.append(exc)

    t = threading.Thread(target=work, name="quickjail-stress-guest", daemon=True)
    t.start()
    t.join(MOVE_TIMEOUT)
    if t.is_alive():
        message = f"the host did not answer within {MOVE_TIMEOUT:g} s"
        return [Violation("guest", case, "hang", message)], True
    got = box[0]
    if isinstance(got, BaseException):
        message = f"playing the move raised {type(got).__name__}: {got}"
        return [Violation("guest", case, "host-exception", message)], False
    return got, False


def run_guest(
    runner: Runner,
    notify: Callable[[Progress], None],
    count: Callable[[], int],
    *,
    new_run: Callable[[Runner], Run] = make_run,
    moves: Sequence[Move] = MOVES,
) -> list[TestCaseResult]:
    """Play every move of the compromised guest; one result per move.

    Args:
        runner: The stress run's runner (the bridge, limits, RSS bookkeeping).
        notify: Receives the phase's progress events.
        count: Violations found so far in the whole stress run (for the events).
        new_run: Builds the run a move attacks (the seam the stress test's tests use).
        moves: The moves to play.
    """
    total = len(moves) + 1
    notify(Progress("guest", "start", 0, total, violations=count()))
    results: list[TestCaseResult] = []
    hung = runner.hung
    plays: list[tuple[str, Callable[[], list[Violation]]]] = [
        (m.id, functools.partial(_play_run, runner, m, new_run)) for m in moves
    ]
    plays.append(("compile-instance", lambda: _play_compiler(runner)))
    group = "quickjail.stress.guest"
    for i, (name, play) in enumerate(plays):
        if hung:
            results.append(TestCaseResult("guest", name, group, 0, 0.0, skipped="a move hung"))
            continue
        start = time.perf_counter()
        rss = runner._rss()
        found, hung = _bounded(play, name)
        grew = runner._rss() - rss
        if grew > MOVE_RSS_MARGIN:
            found.append(
                Violation(
                    "guest",
                    name,
                    "memory",
                    f"the host grew by {grew >> 20} MiB playing the move "
                    f"(the bound is {MOVE_RSS_MARGIN >> 20} MiB)",
                )
            )
        runner.sample_rss(f"guest {name}")
        results.append(
            TestCaseResult("guest", name, group, 1, time.perf_counter() - start, tuple(found))
        )
        notify(Progress("guest", "step", i + 1, total, name, count()))
    notify(Progress("guest", "end", total, total, violations=count()))
    return results
