"""A compromised guest: host-side controls hold whatever bytes the guest sends.

These tests play the guest. Some call the host-call handler, ``Run.on_host(op, a, b, c, d)``,
directly with hostile arguments on a run built the way ``run_code`` builds it (its instance is
fresh and its memory real); others wrap a compile instance's handler so it answers as a
subverted instance would. Each checks host facts: counters, quotas, what the cache holds, what
a later run computes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from quickjail.bridge import Quotas, run_code, run_code_sync
from quickjail.sandbox import _bytecode, _engine, _values
from quickjail.sandbox._abi import (
    E_HOST,
    OP_BYTECODE,
    OP_CALL,
    OP_FETCH,
    OP_LOG,
    OP_MODULE,
    OP_REJECTION,
    OP_REPORT,
    OP_RESULT,
    OUT_VALUE,
)
from quickjail.sandbox._program import Program
from quickjail.sandbox._run import Run

pytestmark = pytest.mark.timeout(120)

MiB = 2**20
SPAN_OPS = (OP_LOG, OP_REPORT, OP_RESULT, OP_REJECTION, OP_MODULE, OP_CALL, OP_FETCH)
# (ptr, len) pairs no guest memory contains: negative lengths (which would lower a budget
# charged with them), negative pointers, and spans past the end of a 64 MiB memory
HOSTILE_SPANS = (
    (0, -1),
    (0, -(2**31)),
    (16, -16),
    (-1, 1),
    (-(2**31), 2**31 - 1),
    (0, 2**31 - 1),
    (2**31 - 1, 1),
    (2**31 - 64, 64),
    (64 * MiB - 8, 16),
)


def _sync(x: Any = None) -> Any:
    return x


async def _async(x: Any = None) -> Any:
    return x


@pytest.fixture
def run() -> Iterator[Run]:
    """A run with host functions (ids 0 sync, 1 async) and quotas, built as run_code builds it."""
    execution = run_code(
        "export default 1",
        globals={"f": _sync, "g": _async},
        quotas=Quotas(max_bytes_out=1 * MiB, max_bytes_in=1 * MiB),
        memory_limit_bytes=64 * MiB,
    )
    program = execution._program
    assert isinstance(program, Program)
    r = Run(execution._engine, execution._opts, program)
    try:
        yield r
    finally:
        r.release()


def _counters(r: Run) -> dict[str, Any]:
    """Everything a host call can charge: the run's counters and limits, and the quotas."""
    calls = r.dispatch.calls
    quota = {k: getattr(calls, k) for k in getattr(calls, "__slots__", ())}
    return {
        "log_bytes": r._log_bytes,
        "report_bytes": r._report_bytes,
        "bytes_in": r._bytes_in,
        "bytes_out": r._bytes_out,
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
    }


@pytest.mark.parametrize("op", SPAN_OPS)
def test_a_hostile_span_is_refused_before_any_counter_or_quota_is_charged(
    run: Run, op: int
) -> None:
    before = _counters(run)
    for ptr, length in HOSTILE_SPANS:
        # a: a valid level / outcome / function id; d: a valid call id
        for a, d in ((0, 0), (1, 1)):
            assert run.on_host(op, a, ptr, length, d) < 0, (op, ptr, length)
            assert _counters(run) == before, (op, a, ptr, length)
    assert run.fatal is None


def test_the_counters_compared_do_move_for_a_valid_span(run: Run) -> None:
    """The control for the test above: a well-formed log is charged."""
    engine = run.engine
    message = _values.encode(["hello"])
    run.instance.write(engine.scratch_addr, message)
    before = _counters(run)
    assert run.on_host(OP_LOG, 0, engine.scratch_addr, len(message), 0) == 0
    after = _counters(run)
    assert after["log_bytes"] == before["log_bytes"] + len(message)
    assert len(after["logs"]) == len(before["logs"]) + 1


def test_an_outcome_of_unknown_kind_or_a_second_outcome_is_refused(run: Run) -> None:
    engine = run.engine
    message = _values.encode("first")
    run.instance.write(engine.scratch_addr, message)
    for kind in (-1, 3, 2**31 - 1):
        assert run.on_host(OP_RESULT, kind, engine.scratch_addr, len(message), 0) < 0
    assert run._sent is None
    assert run.on_host(OP_RESULT, OUT_VALUE, engine.scratch_addr, len(message), 0) == 0
    assert run._sent == (OUT_VALUE, "first")
    run.instance.write(engine.scratch_addr, _values.encode("second"))
    assert run.on_host(OP_RESULT, OUT_VALUE, engine.scratch_addr, len(message), 0) < 0
    assert run._sent == (OUT_VALUE, "first")


def test_a_module_name_longer_than_any_module_is_refused_unread(run: Run) -> None:
    before = _counters(run)
    # a span inside memory, far longer than any name this run has (it has none)
    assert run.on_host(OP_MODULE, 0, 0, 1 * MiB, 0) < 0
    assert _counters(run) == before


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> _bytecode.BytecodeCache:
    """The process's engine with an empty bytecode cache of its own (nothing leaks out)."""
    engine = _engine.get_engine()
    cache = _bytecode.BytecodeCache()
    monkeypatch.setattr(engine, "bytecode", cache)
    return cache


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

    def subverted(self: Any, op: int, a: int, b: int, c: int, d: int) -> int:
        rc = honest(self, op, a, b, c, d)
        if op == OP_BYTECODE:
            for other in (-1, 0, 1, 2, 3, a):
                honest(self, op, other, b, c, d)  # the same bytes, offered as other modules
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


def test_a_compile_instance_is_given_one_source_and_one_answer(
    fresh_cache: _bytecode.BytecodeCache,
) -> None:
    engine = _engine.get_engine()
    key = _bytecode.module_key(engine.guest.build_id, "x.js", "export default 1")
    compiler = _bytecode._Compiler(
        engine, key, "x.js", "export default 1", 16 * MiB, 8 * MiB, lambda: False
    )
    compiler.instance, store = engine.new_instance(16 * MiB, compiler)
    try:
        blob = b"\x00" * 64
        compiler.instance.write(engine.scratch_addr, blob)
        addr = engine.scratch_addr
        assert compiler.on_host(OP_BYTECODE, 1, addr, len(blob), 0) == E_HOST
        assert compiler.on_host(OP_BYTECODE, -1, addr, len(blob), 0) == E_HOST
        assert compiler.on_host(OP_LOG, 0, addr, len(blob), 0) == E_HOST
        assert fresh_cache.get(key) is None
        assert compiler.on_host(OP_BYTECODE, 0, addr, -1, 0) == E_HOST
        # the one answer was spent on a bad span: nothing more is accepted
        assert compiler.on_host(OP_BYTECODE, 0, addr, len(blob), 0) == E_HOST
        assert fresh_cache.get(key) is None
    finally:
        _engine.release_store(store)
        compiler.instance.close()


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


def test_a_polluted_object_prototype_cannot_mint_host_functions() -> None:
    """Only an own property of an object the host sent marks a host function."""
    called: list[Any] = []

    def secret(x: Any = None) -> str:
        called.append(x)
        return "secret"

    src = (
        "Object.prototype['\\x02fn'] = [0, 0, 'forged'];\n"
        "const m = await import('cfg');\n"
        "delete Object.prototype['\\x02fn'];\n"
        "const forged = typeof m.opts === 'function' ? m.opts('stolen') : null;\n"
        "export default [typeof m.opts, typeof m.default, m.opts.a, forged]"
    )
    r = run_code_sync(src, imports={"cfg": {"opts": {"a": 1}, "fn": secret}}, language="javascript")
    assert r.status == "success", r.error
    assert r.result == ["object", "object", 1, None]
    assert called == []
