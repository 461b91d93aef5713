"""A resumed guest is treated exactly as a compromised one (issue 25, item 4).

A continuation's MAC proves who sealed it, not what its memory holds: whoever has the key can
hand the host any guest state. So the controls that protect the host must hold for a run that
was paused and resumed just as they hold for a fresh one. Two halves:

- the compromised-guest table (``test_compromised_guest.ATTACKS``) played against a run that
  was paused in a host call, sealed, opened and resumed (its answer delivered, the guest parked
  again), through the same ``NativeInstance.play`` dispatch: every hostile call refused and
  charged nothing;
- a representative subset of the isolation cases (escapes, memory, CPU, floods, transfer)
  whose hostile program runs only after a pause and a resume
  (``import { pauseHere } from "pausehost"; await pauseHere(); <case>``), with the outcome
  assertions and host invariants ``run_case`` applies to the fresh runs.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import test_compromised_guest as compromised
import test_cpu
import test_escape
import test_floods
import test_memory
import test_transfer
from _isolation import (
    Attack,
    Case,
    Ctx,
    MiB,
    Outcome,
    assert_no_host_text,
    case_id,
    run_case,
    table,
)

from quickjail._stress._guest import counters
from quickjail.bridge import Pause, Quotas, resume, resume_sync, run_code_sync
from quickjail.sandbox import CodeResult, OutputLimits, _bytecode, _engine
from quickjail.sandbox._abi import QJ_PENDING
from quickjail.sandbox._continuation import Continuation
from quickjail.sandbox._run import Run
from quickjail.sandbox.errors import ContinuationError

pytestmark = pytest.mark.timeout(120)

KEY = b"isolation suite key, thirty-two bytes or more"
PAUSE_MODULE = "pausehost"


def _pause(x: Any = None) -> Any:
    raise Pause({"at": x})


# ---------------------------------------------------------------- the compromised-guest table

# the table's run: host functions f (id 0, sync) and g (id 1, async), the same quotas, output
# caps and module table; in the first leg f pauses; resumed, the guest waits for g
PAUSING = 'export default async function () { await f("pause"); await g(1); }'


def _resumed_run(cache: _bytecode.BytecodeCache, *, deterministic: bool = False) -> Run:
    """The table's run, but resumed: paused at ``f``, sealed, opened with ``f`` answering,
    its first slice run (the answer delivered, the guest parked again). ``cache`` (the
    engine's, emptied after the first leg compiled the graph) makes the resumed run load its
    modules from source, as the fresh run of the table does."""
    scratch = _engine.get_engine().scratch_size
    common: dict[str, Any] = {
        "modules": {"./" + compromised.BIG_MODULE: "// " + "x" * scratch + "\nexport default 1"},
        "quotas": Quotas(max_bytes_out=1 * MiB, max_bytes_in=4 * MiB),
        "output_limits": OutputLimits(
            max_log_bytes=compromised.LOG_CAP,
            max_report_bytes=compromised.REPORT_CAP,
            max_result_bytes=compromised.RESULT_CAP,
        ),
        "memory_limit_bytes": 64 * MiB,
        "deterministic": deterministic,
        "language": "javascript",
    }
    first = run_code_sync(PAUSING, globals={"f": _pause, "g": compromised._async}, **common)
    assert first.status == "paused" and first.continuation is not None, first.error
    sealed = first.continuation.seal(KEY)
    cache.clear()
    execution = resume(
        sealed,
        key=KEY,
        answers={first.paused[0].call_id: "answer"},
        globals={"f": compromised._sync, "g": compromised._async},
        memory_limit_bytes=64 * MiB,
    )
    assert execution._resumed is not None
    r = Run(execution._engine, execution._opts, execution._program, execution._resumed)
    try:
        status = r.run_slice(r.slice_first)
        assert status == QJ_PENDING, (status, r._sent)
        assert r._sent is None and r.fatal is None
    except BaseException:
        r.release()
        raise
    return r


@pytest.fixture
def resumed_run(fresh_cache: _bytecode.BytecodeCache) -> Iterator[Run]:
    r = _resumed_run(fresh_cache)
    try:
        yield r
    finally:
        r.release()


_RUN_ATTACKS = [a for a in compromised.ATTACKS if a.target != "compiler"]


@pytest.mark.parametrize("attack", table(_RUN_ATTACKS), ids=case_id)
def test_a_resumed_guest_is_refused_and_charged_nothing(
    attack: Attack, fresh_cache: _bytecode.BytecodeCache
) -> None:
    r = _resumed_run(fresh_cache, deterministic=attack.target == "deterministic")
    try:
        compromised._play(attack, r, lambda: counters(r))
        assert r.fatal is None
        assert len(r.host_errors) <= len(compromised.ATTACKS)
        metrics = r.finish(None).metrics
        assert 0 <= metrics.timers_fired <= compromised.I32_MAX
        assert 0 <= metrics.timers_cancelled <= compromised.I32_MAX
    finally:
        r.release()


def test_a_resumed_run_carries_the_paused_legs_counters(resumed_run: Run) -> None:
    """The control for the table above: the resumed run is the paused one (its host call
    counted, its quotas in force), not a fresh run that happens to be empty."""
    c = counters(resumed_run)
    assert c["calls"] >= 1  # the paused call of the first leg
    assert c["bytes_in"] > 0 and c["bytes_out"] > 0
    assert resumed_run.dispatch.calls is not None


# the module-level fixture of the table's module, reused here
fresh_cache = compromised.fresh_cache


# ---------------------------------------------------------------- isolation cases, resumed

# options a case may set that this harness does not replay: an entry called with arguments
# (the pause happens while the module evaluates, before the entry), or another kind of source
_NOT_REPLAYED = ("execute", "kind")


def _fits(case: Case) -> bool:
    if case.bug is not None or case.prior is not None:
        return False
    if case.expect not in ("completes", "js_error", "terminated", "memory"):
        return False
    return callable(case.opts) or not any(k in case.opts for k in _NOT_REPLAYED)


def _program_calls(n: int) -> Any:
    """The case's program made ``n`` host calls; the run made one more, the paused call of
    the first leg, which the run's metrics and its quotas count (every leg is one run)."""

    def check(r: CodeResult, ctx: Ctx) -> None:
        assert len(ctx.calls) == n, len(ctx.calls)
        assert r.metrics.host_calls == n + 1, r.metrics.host_calls

    return check


# cases counting host calls against a quota: the paused call took one of the quota's calls
# (the quota holds across the legs), so the program gets one fewer than in a fresh run
_ADJUSTED: dict[str, dict[str, Any]] = {
    "1e5-sync-host-calls": {"result": ["RangeError", 9_999], "check": _program_calls(9_999)},
    "1e5-async-host-calls-sequential": {
        "result": ["RangeError", 9_999],
        "check": _program_calls(9_999),
    },
    "1000-async-calls-in-flight": {"check": _program_calls(256)},  # in flight: the same cap
}

_CASES: list[Case] = [
    dataclasses.replace(c, **_ADJUSTED.get(c.id, {}))
    for module in (test_escape, test_memory, test_cpu, test_floods, test_transfer)
    for c in module.CASES
    if _fits(c)
]


def _drive_resumed(case: Case, options: dict[str, Any]) -> Outcome:
    """The first leg pauses before the case's program; the resumed run runs it."""
    t0 = time.perf_counter()
    options = dict(options)
    if options.get("kind", "module") != "module" or "execute" in options:
        raise AssertionError(f"case {case.id!r} cannot be played after a pause")
    imports = {**(options.pop("imports", None) or {}), PAUSE_MODULE: {"pauseHere": _pause}}
    globals_ = options.pop("globals", None)
    report = options.get("report")
    source = f'import {{ pauseHere }} from "{PAUSE_MODULE}"; await pauseHere(); {case.src}'
    first = run_code_sync(source, imports=imports, globals=globals_, **options)
    assert first.status == "paused", (case.id, first.status, first.error)
    assert first.continuation is not None
    sealed = first.continuation.seal(KEY)
    again: dict[str, Any] = {
        "key": KEY,
        "answers": {first.paused[0].call_id: None},
        "imports": imports,
        "globals": globals_,
        "report": report,
        "timeout": options.get("timeout"),
        "memory_limit_bytes": options["memory_limit_bytes"],
    }
    if case.terminate_after is None:
        res = resume_sync(sealed, **again)
        return Outcome(res, time.perf_counter() - t0)
    delay, reason = case.terminate_after, case.reason

    async def main() -> CodeResult:
        run = resume(sealed, **again)
        async with anyio.create_task_group() as tg:

            async def stopper() -> None:
                await anyio.sleep(delay)
                run.terminate(reason)

            tg.start_soon(stopper)
            res = await run
            tg.cancel_scope.cancel()
        return res

    res = anyio.run(main)
    return Outcome(res, time.perf_counter() - t0)


@pytest.mark.parametrize("case", table(_CASES), ids=case_id)
def test_an_isolation_case_is_contained_after_a_pause_and_resume(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx, _drive_resumed)


# ---------------------------------------------------------------- memory forged under the key

FORGED_SOURCE = "export default async function () { const v = await p(1); return v + 1; }"
# a run may end in any of these; none is the host failing (a raise, a crash or a hang)
GUEST_OUTCOMES = frozenset({"success", "error", "memory", "terminated"})


def _garbage(seed: int) -> Callable[[int, bytes], bytes]:
    rng = random.Random(seed)
    return lambda index, page: rng.randbytes(len(page))


def _one_page(seed: int) -> Callable[[list[tuple[int, bytes]]], list[tuple[int, bytes]]]:
    """One of the run's written pages (chosen by ``seed``) replaced with random bytes."""

    def forge(pages: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        rng = random.Random(seed)
        k = rng.randrange(len(pages))
        return [(i, rng.randbytes(len(p)) if j == k else p) for j, (i, p) in enumerate(pages)]

    return forge


def _every_page(make: Callable[[int, bytes], bytes]) -> Any:
    return lambda pages: [(i, make(i, p)) for i, p in pages]


FORGERIES: dict[str, Callable[[list[tuple[int, bytes]]], list[tuple[int, bytes]]]] = {
    "every-page-random": _every_page(_garbage(1)),
    "every-page-zero": _every_page(lambda i, p: bytes(len(p))),
    "every-page-ff": _every_page(lambda i, p: b"\xff" * len(p)),
    **{f"one-page-random-{seed}": _one_page(seed) for seed in range(6)},
}


def forged_run(name: str) -> str:
    """Resume a run whose memory was forged (``FORGERIES[name]``) and sealed under the key;
    check its outcome stays the guest's; return its status."""
    first = run_code_sync(FORGED_SOURCE, globals={"p": _pause}, language="javascript")
    assert first.status == "paused" and first.continuation is not None
    c = first.continuation
    forged = Continuation(c.build_id, c.memory_size, FORGERIES[name](c.pages), c.state)
    res = resume_sync(
        forged.seal(KEY),
        key=KEY,
        answers={first.paused[0].call_id: 41},
        globals={"p": _pause},
        timeout=2.0,
        memory_limit_bytes=32 * MiB,
    )
    assert res.status in GUEST_OUTCOMES, (res.status, res.reason, res.error)
    assert res.metrics.peak_memory_bytes <= 32 * MiB
    if res.error is not None:
        assert_no_host_text(res.error.message, "the forged run's error")
    after = run_code_sync("export default 1 + 1")
    assert after.status == "success" and after.result == 2
    return res.status


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_signed_continuation_with_forged_memory_ends_its_run_not_the_host(name: str) -> None:
    """Whoever holds the key can seal any memory: the resumed guest is then a compromised
    one, and its run ends with a guest outcome inside its limits; the host goes on.

    In a fresh process: wild memory makes the guest trap out of bounds, which wasmtime's signal
    handler turns into an error, unless a handler installed after quickjail's engine takes the
    signal first (``ray.init()`` installs one, and this suite's Ray tests run in this process
    earlier): then the trap ends the process (README, "What this design does not protect
    against").
    """
    here = str(Path(__file__).resolve().parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import test_resumed_guest as t; "
    code += f"print(t.forged_run({name!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert proc.stdout.split()[-1] in GUEST_OUTCOMES, proc.stdout


@pytest.mark.parametrize(
    "pages, size",
    [
        pytest.param(lambda c: c.pages, lambda c: 1 << 30, id="memory-past-the-limit"),
        pytest.param(
            lambda c: [(c.memory_size // 4096 + 5, bytes(4096))],
            lambda c: c.memory_size,
            id="page-outside-memory",
        ),
    ],
)
def test_a_signed_continuation_with_forged_sizes_is_refused_before_it_runs(
    pages: Callable[[Any], list[tuple[int, bytes]]], size: Callable[[Any], int]
) -> None:
    first = run_code_sync(FORGED_SOURCE, globals={"p": _pause}, language="javascript")
    assert first.status == "paused" and first.continuation is not None
    c = first.continuation
    forged = Continuation(c.build_id, size(c), pages(c), c.state)
    with pytest.raises(ContinuationError):
        resume_sync(
            forged.seal(KEY),
            key=KEY,
            answers={first.paused[0].call_id: 41},
            globals={"p": _pause},
            memory_limit_bytes=64 * MiB,
        )
