"""A compromised guest: whatever it passes to ``qj.host``, the host refuses it cleanly and
charges nothing.

These rows play the guest. Each calls ``qj.host(op, a, b, c, d)`` through the host library's own
dispatch (``NativeInstance.play``: the span checks and the handler the guest's import reaches,
a run's or a compile instance's), directly with arguments an attacker controlling the guest's code
would choose: hostile spans for every op, replies fetched twice or with a lying length, blob
indices out of range, negative or reused, over-cap and malformed messages, unknown ops,
functions and outcome kinds, timer waits and timer counts no honest guest would send, and a
compile instance answering for another module or twice.
The run is built the way ``run_code`` builds it (a fresh instance, real memory). After each
hostile call the host must have returned a refusal and every counter, limit and quota it
keeps must be as before: only what an attack declares in ``changes`` may move (as its
``check`` says), and the decode budget, charged before parsing, may only grow (a guest
cannot win back what it spent). The public API cannot send these calls; nothing here patches
the host.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _isolation import Attack, MiB, case_id, table

from quickjail._stress._guest import (
    MAY_GROW,
    NEVER_DOWN,
    RESULT_REFUSED,
    SPAN_OPS,
    Call,
    counters,
    message,
    put,
    with_data,
)
from quickjail.bridge import Quotas, run_code, run_code_sync
from quickjail.sandbox import OutputLimits, _bytecode, _engine, _values
from quickjail.sandbox._abi import (
    E_HOST,
    E_PENDING,
    E_REFUSED,
    E_REPORT_BYTES,
    E_UNTRANSFERABLE,
    LOG_CLOSED,
    OP_BYTECODE,
    OP_CALL,
    OP_FETCH,
    OP_LOG,
    OP_MODULE,
    OP_OOM,
    OP_REJECTION,
    OP_REPORT,
    OP_RESULT,
    OP_SLEEP,
    OP_TIMERS,
    OUT_ERROR,
    OUT_VALUE,
    REFUSAL_TEXT_MAX,
)
from quickjail.sandbox._program import Program
from quickjail.sandbox._run import Run

pytestmark = pytest.mark.timeout(120)

# (ptr, len) pairs no guest memory contains: negative lengths (which would lower a budget
# charged with them), negative pointers, and spans past the end of a 64 MiB memory
HOSTILE_SPANS = {
    "len-minus-1": (0, -1),
    "len-minus-2g": (0, -(2**31)),
    "ptr16-len-minus-16": (16, -16),
    "ptr-minus-1": (-1, 1),
    "ptr-minus-2g": (-(2**31), 2**31 - 1),
    "len-2g": (0, 2**31 - 1),
    "ptr-2g": (2**31 - 1, 1),
    "past-4g": (2**31 - 64, 64),
    "past-memory": (64 * MiB - 8, 16),
}
BIG_MODULE = (
    "big.js"  # (given as ./big.js) its source is larger than scratch: its reply waits for OP_FETCH
)
P61 = 2**61 - 1  # CPython hashes an int n as n mod P61: its multiples all hash alike
LOG_CAP = 1 * MiB
REPORT_CAP = 1 * MiB
RESULT_CAP = 1 * MiB
I32_MAX = 2**31 - 1


def _sync(x: Any = None) -> Any:
    return x


async def _async(x: Any = None) -> Any:
    return x


# ---------------------------------------------------------------- the run and its counters


def _make_run(*, deterministic: bool = False) -> Run:
    """A run with host functions (id 0 sync, id 1 async), quotas, small output caps and a
    module whose source does not fit in scratch, built as ``run_code`` builds it (with
    virtual time when ``deterministic``)."""
    scratch = _engine.get_engine().scratch_size
    execution = run_code(
        "export default 1",
        globals={"f": _sync, "g": _async},
        modules={"./" + BIG_MODULE: "// " + "x" * scratch + "\nexport default 1"},
        quotas=Quotas(max_bytes_out=1 * MiB, max_bytes_in=4 * MiB),
        output_limits=OutputLimits(
            max_log_bytes=LOG_CAP, max_report_bytes=REPORT_CAP, max_result_bytes=RESULT_CAP
        ),
        memory_limit_bytes=64 * MiB,
        deterministic=deterministic,
    )
    program = execution._program
    assert isinstance(program, Program)
    return Run(execution._engine, execution._opts, program)


def _module_name(r: Run, name: str = BIG_MODULE) -> tuple[int, int]:
    return put(r, name.encode())


def _ask_big_module(r: Run) -> None:
    ptr, n = _module_name(r)
    size = r.instance.play(OP_MODULE, 0, ptr, n, 0)
    assert size > r.engine.scratch_size, size  # kept for OP_FETCH


def _fetch_big_module(r: Run) -> None:
    _ask_big_module(r)
    assert r.instance.play(OP_FETCH, 0, r.engine.scratch_addr, len(r._reply), 0) == 0


def _send_result(r: Run) -> None:
    ptr, n = put(r, _values.encode("first"))
    assert r.instance.play(OP_RESULT, OUT_VALUE, ptr, n, 0) == 0


def _result_is_a_type_error(r: Run) -> None:
    assert r._sent is not None and r._sent[0] == OUT_ERROR, r._sent
    assert r._sent[1]["name"] == "TypeError", r._sent


def _result_is_a_range_error_naming_the_cap(r: Run) -> None:
    assert r._sent is not None and r._sent[0] == OUT_ERROR, r._sent
    assert r._sent[1]["name"] == "RangeError" and "max_result_bytes" in r._sent[1]["message"]


def _first_result_kept(r: Run) -> None:
    assert r._sent == (OUT_VALUE, "first"), r._sent


def _log_dropped_with_a_note(r: Run) -> None:
    assert r._logs_dropped and len(r.logs) == 1 and "log limit" in r.logs[0].args[0]


def _refused_with_the_limit(limit: int) -> Callable[[Run], None]:
    """The refusal left the limit it names in scratch (u64 LE) for the guest's RangeError."""

    def check(r: Run) -> None:
        got = int.from_bytes(r.instance.read(r.engine.scratch_addr, 8), "little")
        assert got == limit, (got, limit)

    return check


def _refused_with_a_reason(r: Run) -> None:
    """The refusal left a short UTF-8 reason in scratch (u32 LE length, then the text)."""
    n = int.from_bytes(r.instance.read(r.engine.scratch_addr, 4), "little")
    assert 0 < n <= REFUSAL_TEXT_MAX, n
    r.instance.read(r.engine.scratch_addr + 4, n).decode("utf-8")


def _wakes_in(seconds: float | None) -> Callable[[Run], None]:
    def check(r: Run) -> None:
        assert r.wake_in == seconds, r.wake_in

    return check


def _virtual_time_jumped(ms: int) -> Callable[[Run], None]:
    def check(r: Run) -> None:
        # saturating at 2**64 - 1, as the host library's clock that adds it (never wrapping)
        assert r._virtual_ns == min(ms * 1_000_000, 2**64 - 1), r._virtual_ns
        assert r.store_data.virtual_ns == r._virtual_ns, r.store_data.virtual_ns

    return check


def _timer_counts(fired: int, cancelled: int) -> Callable[[Run], None]:
    def check(r: Run) -> None:
        assert (r._timers_fired, r._timers_cancelled) == (fired, cancelled)

    return check


def _timers(fired: int, cancelled: int) -> Callable[[Run], None]:
    def setup(r: Run) -> None:
        assert r.instance.play(OP_TIMERS, fired, cancelled, 0, 0) == 0

    return setup


def _span(op: int, ptr: int, length: int) -> Callable[[Run], list[Call]]:
    """The span ``(ptr, length)`` for ``op``, with each of two plausible first arguments."""
    return lambda r: [(op, a, ptr, length, d) for a, d in ((0, 0), (1, 1))]


def _bare(op: int) -> Callable[[Any], list[Call]]:
    return lambda r: [(op, 0, 0, 8, 0)]


def _fetch_length(delta: int | None) -> Callable[[Run], list[Call]]:
    """Fetch the pending reply with a length off by ``delta`` (None: a length of 0)."""

    def play(r: Run) -> list[Call]:
        n = 0 if delta is None else len(r._reply) + delta
        return [(OP_FETCH, 0, r.engine.scratch_addr, n, 0)]

    return play


# ---------------------------------------------------------------- the table

ATTACKS: list[Attack] = [
    # every span op, every span no memory holds: refused before any counter is charged
    *(
        Attack(
            f"span-{name}-{span}",
            _span(op, ptr, length),
        )
        for name, op in SPAN_OPS.items()
        for span, (ptr, length) in HOSTILE_SPANS.items()
    ),
    # ops no run knows, or that only a compile instance may send
    *(
        Attack(f"unknown-op-{op}", _bare(op), rc=E_HOST)
        for op in (0, 12, 13, 255, -1, 2**31 - 1, OP_BYTECODE)
    ),
    # replies: fetched with nothing pending, twice, with a lying length
    Attack("fetch-nothing-pending", lambda r: [(OP_FETCH, 0, r.engine.scratch_addr, 16, 0)]),
    Attack(
        "fetch-twice",
        lambda r: [(OP_FETCH, 0, r.engine.scratch_addr, r.engine.scratch_size + 64, 0)],
        setup=_fetch_big_module,
    ),
    *(
        Attack(
            f"fetch-length-{name}",
            _fetch_length(delta),
            setup=_ask_big_module,
        )
        for name, delta in (("short", -1), ("long", 1), ("zero", None))
    ),
    # outcomes: of unknown kind, or a second one
    *(
        Attack(f"result-kind-{kind}", with_data(OP_RESULT, _values.encode("x"), a=kind), rc=E_HOST)
        for kind in (-1, 3, 2**31 - 1)
    ),
    Attack(
        "result-twice",
        with_data(OP_RESULT, _values.encode("second"), a=OUT_VALUE),
        setup=_send_result,
        rc=E_HOST,
        check=_first_result_kept,
    ),
    # modules: a name longer than any the run has, or one it does not have
    Attack("module-name-1mib", lambda r: [(OP_MODULE, 0, 0, 1 * MiB, 0)], rc=E_REFUSED),
    Attack("module-unknown", with_data(OP_MODULE, b"nope.js"), rc=E_REFUSED),
    # calls: unknown function ids, an async call without a call id
    *(
        Attack(f"call-fid-{fid}", with_data(OP_CALL, _values.encode([1]), a=fid, d=1), rc=E_HOST)
        for fid in (-1, 2, 2**31 - 1)
    ),
    *(
        Attack(
            f"call-async-id-{cid}", with_data(OP_CALL, _values.encode([1]), a=1, d=cid), rc=E_HOST
        )
        for cid in (0, -1, -(2**31))
    ),
]

# messages over the run's caps: refused (reports), dropped with one note (logs), or the
# run's outcome becomes a RangeError naming the cap (results); never read, never charged
_OVER = b"\x00" * (max(LOG_CAP, REPORT_CAP, RESULT_CAP) + 1)
ATTACKS += [
    Attack(
        "over-cap-report",
        with_data(OP_REPORT, _OVER),
        rc=E_REPORT_BYTES,
        check=_refused_with_the_limit(REPORT_CAP),
    ),
    Attack(
        "over-cap-log",
        with_data(OP_LOG, _OVER),
        rc=LOG_CLOSED,
        changes=frozenset({"logs", "logs_dropped"}),
        check=_log_dropped_with_a_note,
    ),
    Attack(
        "over-cap-result",
        with_data(OP_RESULT, _OVER, a=OUT_VALUE),
        rc=0,
        changes=frozenset({"sent"}),
        check=_result_is_a_range_error_naming_the_cap,
    ),
    Attack("over-cap-rejection", with_data(OP_REJECTION, _OVER), rc=0),
]

# malformed value messages, and well-formed ones naming blobs they do not hold or reuse
MALFORMED: dict[str, bytes] = {
    "empty": b"",
    "truncated-header": b"\x01\x05\x00",
    "text-length-past-end": struct.pack("<BI", 1, 2**31) + b"[]",
    "blob-count-huge": message("[]")[:-4] + struct.pack("<I", 2**32 - 1),
    "blob-length-past-end": message("[]")[:-4] + struct.pack("<II", 1, 2**31),
    "not-utf8": message("[]").replace(b"[]", b"\xff\xfe"),
    "not-json": message("{[}"),
    "unknown-tag": message('{"\\u0000":["zz",0]}'),
    "blob-index-minus-1": message('{"\\u0000":["b",-1]}', (b"abc",)),
    "blob-index-past-end": message('{"\\u0000":["b",1]}', (b"abc",)),
    "blob-index-string": message('{"\\u0000":["b","0"]}', (b"abc",)),
    "blob-index-float": message('{"\\u0000":["b",0.0]}', (b"abc",)),
    "blob-reused": message("[" + ",".join(['{"\\u0000":["t",0]}'] * 64) + "]", (b"x" * 4096,)),
    "colliding-set": message(
        '{"\\u0000":["s",[' + ",".join(str(i * P61) for i in range(1, 2000)) + "]]}"
    ),
    "nested-200k": message("[" * 200_000 + "]" * 200_000, tagged=False),
}
for _name, _data in MALFORMED.items():
    ATTACKS += [
        Attack(
            f"malformed-report-{_name}",
            with_data(OP_REPORT, _data),
            rc=E_UNTRANSFERABLE,
            check=_refused_with_a_reason,
        ),
        Attack(
            f"malformed-result-{_name}",
            with_data(OP_RESULT, _data, a=OUT_VALUE),
            rc=E_REFUSED,
            changes=RESULT_REFUSED,
            check=_result_is_a_type_error,
        ),
    ]
ATTACKS += [
    Attack(
        f"malformed-log-{name}",
        with_data(OP_LOG, MALFORMED[name]),
        rc=E_UNTRANSFERABLE,
        check=_refused_with_a_reason,
    )
    for name in ("truncated-header", "text-length-past-end", "blob-reused", "nested-200k")
]


# timer waits (OP_SLEEP: a = ms to the next timer, b = async calls in flight) and end-of-run
# timer counts (OP_TIMERS) no honest guest sends. With real time a wait is clamped to 0..2^31-1
# ms and only sets when the driver wakes the guest (the run's timeout still stops it); with
# virtual time it jumps the run's own clock forward, never back; the counts only grow
_WAIT = frozenset({"wake_in"})
ATTACKS += [
    *(
        Attack(
            f"sleep-{name}",
            lambda r, a=a, b=b: [(OP_SLEEP, a, b, 0, 0)],
            rc=E_PENDING,
            changes=_WAIT,
            check=_wakes_in(max(a, 0) / 1000),
        )
        for name, a, b in (
            ("nothing-pending", 10, 0),
            ("ms-minus-1", -1, 0),
            ("ms-minus-2g", -(2**31), 0),
            ("ms-2g", I32_MAX, 0),
            ("in-flight-minus-1", 10, -1),
            ("in-flight-2g", 10, I32_MAX),
            ("in-flight-minus-2g", 0, -(2**31)),
        )
    ),
    Attack(
        "sleep-after-the-result",
        lambda r: [(OP_SLEEP, I32_MAX, 0, 0, 0)],
        setup=_send_result,
        rc=E_PENDING,
        changes=_WAIT,
        check=lambda r: (_wakes_in(I32_MAX / 1000)(r), _first_result_kept(r)),
    ),
    *(
        Attack(
            f"virtual-sleep-{name}",
            lambda r, a=a, b=b: [(OP_SLEEP, a, b, 0, 0)],
            target="deterministic",
            rc=0,
            changes=frozenset({"virtual_ns"}),
            check=_virtual_time_jumped(max(a, 0)),
        )
        for name, a, b in (
            ("ms-minus-1", -1, 0),
            ("ms-minus-2g", -(2**31), -1),
            ("ms-2g", I32_MAX, 0),
            ("in-flight-minus-2g", I32_MAX, -(2**31)),
        )
    ),
    Attack(
        "virtual-sleep-in-flight-2g",
        lambda r: [(OP_SLEEP, I32_MAX, I32_MAX, 0, 0)],
        target="deterministic",
        rc=E_PENDING,
        check=lambda r: (_wakes_in(None)(r), _virtual_time_jumped(0)(r)),
    ),
    Attack(
        "virtual-sleep-ten-thousand-times",
        lambda r: [(OP_SLEEP, I32_MAX, 0, 0, 0)] * 10_000,
        target="deterministic",
        rc=0,
        changes=frozenset({"virtual_ns"}),
        check=_virtual_time_jumped(10_000 * I32_MAX),
    ),
    Attack(
        "timers-negative",
        lambda r: [(OP_TIMERS, -1, -(2**31), 0, 0)],
        rc=0,
        check=_timer_counts(0, 0),
    ),
    Attack(
        "timers-2g",
        lambda r: [(OP_TIMERS, I32_MAX, I32_MAX, 0, 0)],
        rc=0,
        changes=frozenset({"timers_fired", "timers_cancelled"}),
        check=_timer_counts(I32_MAX, I32_MAX),
    ),
    *(
        Attack(
            f"timers-twice-{name}",
            lambda r, a=a, b=b: [(OP_TIMERS, a, b, 0, 0)],
            setup=_timers(100, 50),
            rc=0,
            check=_timer_counts(100, 50),
        )
        for name, a, b in (("lower", 1, 0), ("negative", -1, -(2**31)), ("same", 100, 50))
    ),
    Attack(
        "timers-twice-higher",
        lambda r: [(OP_TIMERS, 101, 51, 0, 0)],
        setup=_timers(100, 50),
        rc=0,
        changes=frozenset({"timers_fired", "timers_cancelled"}),
        check=_timer_counts(101, 51),
    ),
]


# a compile instance: one answer, for its own module only
def _compiler_calls(index: int, length: int = 64) -> Callable[[Any], list[Call]]:
    def play(c: Any) -> list[Call]:
        c.instance.write(c.engine.scratch_addr, b"\x00" * 64)
        return [(OP_BYTECODE, index, c.engine.scratch_addr, length, 0)]

    return play


def _compiler_answered(c: Any) -> None:
    c.instance.write(c.engine.scratch_addr, b"\x00" * 64)
    assert c.instance.play(OP_BYTECODE, 0, c.engine.scratch_addr, -1, 0) == E_HOST  # spent


ATTACKS += [
    *(
        Attack(f"compile-index-{i}", _compiler_calls(i), target="compiler", rc=E_HOST)
        for i in (1, -1, 2**31 - 1)
    ),
    *(
        Attack(f"compile-op-{op}", _bare(op), target="compiler")
        for op in (OP_LOG, OP_CALL, OP_MODULE, OP_RESULT, OP_OOM, OP_SLEEP, OP_TIMERS)
    ),
    Attack("compile-empty-blob", _compiler_calls(0, 0), target="compiler", rc=E_HOST),
    Attack("compile-negative-length", _compiler_calls(0, -1), target="compiler", rc=E_HOST),
    Attack(
        "compile-second-answer", _compiler_calls(0), target="compiler", setup=_compiler_answered
    ),
]


# ---------------------------------------------------------------- playing a row


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> _bytecode.BytecodeCache:
    """The process's engine with an empty bytecode cache of its own (nothing leaks out)."""
    engine = _engine.get_engine()
    cache = _bytecode.BytecodeCache()
    monkeypatch.setattr(engine, "bytecode", cache)
    return cache


def _play(attack: Attack, target: Any, snapshot: Callable[[], Any]) -> None:
    if attack.setup is not None:
        attack.setup(target)
    for call in attack.play(target):
        before = snapshot()
        rc = target.instance.play(*call)
        after = snapshot()
        if attack.rc is not None:
            assert rc == attack.rc, (attack.id, call, rc)
        else:
            assert rc < 0, (attack.id, call, rc)
        if isinstance(before, dict):
            moved = {k for k in before if before[k] != after[k]}
            allowed = attack.changes | MAY_GROW
            assert moved <= allowed, (attack.id, call, {k: after[k] for k in moved - allowed})
            for k in moved & MAY_GROW:
                assert after[k] > before[k], (attack.id, call, k, before[k], after[k])
            for k in moved & NEVER_DOWN:
                assert after[k] >= before[k], (attack.id, call, k, before[k], after[k])
        else:
            assert before == after, (attack.id, call)
    if attack.check is not None:
        attack.check(target)


def _compiler_snapshot(cache: _bytecode.BytecodeCache, key: bytes) -> Callable[[], Any]:
    return lambda: cache.get(key)


@pytest.fixture
def guest_run() -> Iterator[Run]:
    r = _make_run()
    try:
        yield r
    finally:
        r.release()


@pytest.mark.parametrize("attack", table(ATTACKS), ids=case_id)
def test_a_compromised_guest_is_refused_and_charged_nothing(
    attack: Attack, fresh_cache: _bytecode.BytecodeCache
) -> None:
    if attack.target == "compiler":
        engine = _engine.get_engine()
        key = _bytecode.module_key(engine.guest.build_id, "x.js", "export default 1")
        compiler = _bytecode._Compiler(
            engine, key, "x.js", "export default 1", 16 * MiB, 8 * MiB, lambda: False
        )
        compiler.instance, store = engine.new_instance(16 * MiB, compiler)
        try:
            _play(attack, compiler, _compiler_snapshot(fresh_cache, key))
            assert fresh_cache.get(key) is None  # nothing a hostile answer sent was kept
        finally:
            _engine.release_store(store)
            compiler.instance.close()
        return
    r = _make_run(deterministic=attack.target == "deterministic")
    try:
        _play(attack, r, lambda: counters(r))
        assert r.fatal is None
        assert len(r.host_errors) <= len(ATTACKS)  # what the host kept stays bounded
        metrics = r.finish(None).metrics  # the counts a result carries stay sane
        assert 0 <= metrics.timers_fired <= I32_MAX and 0 <= metrics.timers_cancelled <= I32_MAX
    finally:
        r.release()


def test_the_counters_compared_do_move_for_well_formed_calls(guest_run: Run) -> None:
    """The control for the table: a well-formed log, report and fetch are charged."""
    r = guest_run
    before = counters(r)
    ptr, n = put(r, _values.encode(["hello"]))
    assert r.instance.play(OP_LOG, 0, ptr, n, 0) == 0
    ptr, n = put(r, _values.encode({"a": 1}))
    assert r.instance.play(OP_REPORT, 0, ptr, n, 0) == 0
    _fetch_big_module(r)
    after = counters(r)
    assert after["log_bytes"] > before["log_bytes"] and len(after["logs"]) == 1
    assert after["report_bytes"] > before["report_bytes"] and after["reports"] == [{"a": 1}]
    assert after["bytes_in"] > before["bytes_in"] + r.engine.scratch_size
    assert after["bytes_out"] > before["bytes_out"] and after["decoded"] > before["decoded"]


def test_a_malformed_call_message_costs_its_call_and_lowers_no_quota(guest_run: Run) -> None:
    """The quota admits a call by its size before its arguments are read, so a call whose
    arguments are malformed is charged (never refunded) and answered with an error."""
    r = guest_run
    for data in MALFORMED.values():
        before = counters(r)
        ptr, n = put(r, data)
        rc = r.instance.play(OP_CALL, 0, ptr, n, 0)
        after = counters(r)
        assert rc > 0, rc  # a sync reply: the error the JS call throws
        assert after["calls"] == before["calls"] + 1
        assert after["bytes_out"] >= before["bytes_out"]
        assert after["bytes_in"] >= before["bytes_in"]
        for k, v in before["quota"].items():
            if isinstance(v, int):
                assert after["quota"][k] >= v, (k, v, after["quota"][k])
    assert r.fatal is None


def _graph() -> tuple[str, dict[str, str], list[str]]:
    tag = uuid.uuid4().hex
    modules = {
        "./m.js": f"export const m = 'm-{tag}'",
        "./n.js": f"export const n = 'n-{tag}'",
    }
    src = "import { m } from './m.js'; import { n } from './n.js'; export default [m, n]"
    return src, modules, [f"m-{tag}", f"n-{tag}"]


def test_a_compile_instance_cannot_write_the_cache_entry_of_another_source(
    fresh_cache: _bytecode.BytecodeCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subverted compile instance answers for every module it can name, not just its own;
    later runs of the graph (any caller's) must still compute what the sources say."""
    honest = _bytecode._Compiler.on_host

    def subverted(
        self: Any, op: int, a: int, b: int, c: int, d: int, view: memoryview | None
    ) -> int:
        rc = honest(self, op, a, b, c, d, view)
        if op == OP_BYTECODE:
            for other in (-1, 0, 1, 2, 3, a):
                honest(self, op, other, b, c, d, view)  # the same bytes, as other modules
        return rc

    monkeypatch.setattr(_bytecode._Compiler, "on_host", subverted)
    src, modules, expected = _graph()
    first = run_code_sync(src, modules=modules, language="javascript")
    assert first.status == "success" and first.result == expected, first.error
    monkeypatch.setattr(_bytecode._Compiler, "on_host", honest)
    second = run_code_sync(src, modules=modules, language="javascript")
    assert second.metrics.bytecode_hits == 3  # the entry and both modules, from the cache
    assert second.status == "success" and second.result == expected, second.error
    # another caller's graph that shares a module
    other = run_code_sync(
        "import { n } from './n.js'; export default n", modules=modules, language="javascript"
    )
    assert other.status == "success" and other.result == expected[1], other.error


def test_module_compilation_respects_the_runs_memory_limit(
    fresh_cache: _bytecode.BytecodeCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine.get_engine()
    asked: list[int] = []
    new_instance = engine.new_instance

    def spy(memory_limit: int, router: Any, fuel: int | None = None) -> Any:
        asked.append(memory_limit)
        return new_instance(memory_limit, router, fuel=fuel)

    monkeypatch.setattr(engine, "new_instance", spy)
    src, modules, expected = _graph()
    r = run_code_sync(src, modules=modules, language="javascript", memory_limit_bytes=16 * MiB)
    assert r.status == "success" and r.result == expected, r.error
    assert len(asked) == 4  # three compiles (one per module) and the run
    assert max(asked) <= 16 * MiB, asked
