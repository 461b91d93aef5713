"""The isolation harness: a case is a small hostile program and the outcome class it must get.

Outcome classes (``Case.expect``):

==============  =============================================================================
``completes``   status ``success``; ``result`` is checked (a value, or a predicate on it)
``js_error``    status ``error``: the program failed inside JS (optionally with ``error``'s name)
``link_error``  status ``link_error``: the module graph did not link
``terminated``  status ``terminated`` with ``reason`` (``"timeout"`` unless the case says)
``memory``      status ``memory``: the memory limit stopped the program
``refused``     nothing ran: the API refused the call with ``TypeError``/``ValueError``
                (``error`` names the class, ``message`` a part of its text)
==============  =============================================================================

The compromised-guest category is a table of :class:`Attack` rows instead: each plays the
guest by calling the host-call handler directly, and its outcome class is ``refused``.

Every case runs with a deadline on the run (``timeout``) *and* a watchdog on the host side, so a
library hang fails the case quickly with a clear message instead of hanging the suite. Users run
this suite on loaded CI machines, so a case that must end *by itself* gets ``SLOW_MACHINE``
times its nominal deadline: what it proves is its outcome, not its speed (speed is the
benchmarks' business). A case that must be *stopped* keeps its deadline, since the stop is
what it proves, and stopping is prompt however busy the machine is. Every
case also checks the invariants that hold for any program: host RSS stays bounded, the wall
time stays near the deadline, and no host path appears in the error the guest produced.

A case whose correct expectation the library does not meet yet carries ``bug="BUG: ..."``: it
runs as a strict xfail, so fixing the bug turns it into a failure that asks for the marker to
be removed.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import psutil
import pytest

from quickjail.bridge import run_code, run_code_sync
from quickjail.sandbox import CodeResult

__all__ = [
    "ANY",
    "HOST_PATH_MARKERS",
    "Attack",
    "Case",
    "Ctx",
    "Drive",
    "Expect",
    "MiB",
    "Outcome",
    "assert_no_host_text",
    "case_id",
    "run_any",
    "run_case",
    "run_refused",
    "table",
]

MiB = 2**20
Expect = Literal["completes", "js_error", "link_error", "terminated", "memory", "refused"]
STATUS_OF: dict[str, str] = {
    "completes": "success",
    "js_error": "error",
    "link_error": "link_error",
    "terminated": "terminated",
    "memory": "memory",
}
KINDS = ("completes", "js_error", "link_error", "terminated", "memory", "refused")
# text that would reveal the host to the guest: paths, the interpreter, the source tree
HOST_PATH_MARKERS = ("/work/", "/home", "/root", "/tmp/", "site-packages", ".py", "Traceback")
_HOST_PATH_RE = re.compile("|".join(re.escape(m) for m in HOST_PATH_MARKERS))
RSS_SLACK = 64 * MiB  # host RSS may grow by the guest's cap plus this much during a case
WATCHDOG_GRACE = 10.0  # seconds past the run's deadline before the harness calls it a hang
TERMINATED_WALL = 2.0  # a deadline of a few hundred ms must end the run within this
MAX_STALL = 2.0  # seconds the host's Python threads may be blocked by one step of a run
SLOW_MACHINE = 5.0  # a case that ends by itself may take this many times its nominal deadline


class _AnyValue:
    def __repr__(self) -> str:
        return "ANY"


ANY: Any = _AnyValue()


@dataclass
class Ctx:
    """Per-case host state: a directory for file capabilities and a record of host calls."""

    root: Path
    calls: list[Any] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


Options = Mapping[str, Any] | Callable[[Ctx], Mapping[str, Any]]
Check = Callable[[CodeResult, Ctx], None]


@dataclass(frozen=True)
class Case:
    """One adversarial program and its expected outcome class (see the module docstring)."""

    id: str
    src: str
    expect: Expect
    result: Any = ANY
    error: str | None = None
    message: str | None = None
    reason: str = "timeout"
    timeout: float = 2.0
    memory: int = 32 * MiB
    opts: Options = field(default_factory=dict)
    check: Check | None = None
    prior: str | None = None
    terminate_after: float | None = None
    max_wall: float | None = None
    host_bytes: int = 0
    max_stall: float = MAX_STALL
    bug: str | None = None
    exact_deadline: bool = False  # the case is about reaching its outcome within `timeout`

    @property
    def deadline(self) -> float:
        """The run's deadline: nominal for a case that must be stopped, generous otherwise."""
        if self.expect == "terminated" or self.exact_deadline:
            return self.timeout
        return self.timeout * SLOW_MACHINE

    def options(self, ctx: Ctx) -> dict[str, Any]:
        extra = self.opts(ctx) if callable(self.opts) else self.opts
        return {
            "language": "javascript",
            "timeout": self.deadline,
            "memory_limit_bytes": self.memory,
            **extra,
        }


@dataclass(frozen=True)
class Attack:
    """One move of a compromised guest: host calls made with arguments it chose.

    ``setup`` makes the well-formed calls the attack needs first (they may be charged);
    ``play`` returns the hostile ``(op, a, b, c, d)`` calls, each of which the host must
    refuse (a negative return, or exactly ``rc``) without charging anything; ``check`` looks
    at what the host kept afterwards (e.g. the outcome a refused result left).
    """

    id: str
    play: Callable[[Any], Iterable[tuple[int, int, int, int, int]]]
    setup: Callable[[Any], None] | None = None
    rc: int | None = None
    changes: frozenset[str] = frozenset()  # counters this attack is allowed to move
    check: Callable[[Any], None] | None = None
    target: Literal["run", "deterministic", "compiler"] = "run"  # "deterministic": virtual time
    expect: Expect = "refused"


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except ValueError:  # e.g. an int too long for int->str conversion
        return f"<{type(value).__name__} that repr() refuses>"


def case_id(case: Case | Attack) -> str:
    return case.id


def table(cases: Iterable[Case] | Iterable[Attack]) -> list[Any]:
    """The parametrize table: each case, as a strict xfail when it documents a library bug."""
    out: list[Any] = []
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"duplicate case id {case.id!r}")
        seen.add(case.id)
        if isinstance(case, Case) and case.bug is not None:
            if not case.bug.startswith("BUG: "):
                raise ValueError(f"{case.id}: a bug reason starts with 'BUG: '")
            out.append(pytest.param(case, marks=pytest.mark.xfail(strict=True, reason=case.bug)))
        else:
            out.append(case)
    return out


# ---------------------------------------------------------------- running


class _HostMonitor:
    """Watches the host while a case runs, from a Python thread ticking every few ms.

    ``peak`` is the highest RSS seen; ``stall`` the longest gap between two ticks, i.e. how
    long this process's other Python threads could not run (a host-side step holding the GIL).
    """

    def __init__(self, interval: float = 0.005) -> None:
        self._proc = psutil.Process()
        self._interval = interval
        self._stop = threading.Event()
        self.baseline = self._proc.memory_info().rss
        self.peak = self.baseline
        self.stall = 0.0
        self._thread = threading.Thread(target=self._loop, name="host-monitor", daemon=True)

    def _loop(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(self._interval):
            now = time.perf_counter()
            self.stall = max(self.stall, now - last - self._interval)
            last = now
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __enter__(self) -> _HostMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)

    @property
    def growth(self) -> int:
        return int(self.peak - self.baseline)


@dataclass
class Outcome:
    result: CodeResult | None
    wall: float
    raised: BaseException | None = None
    refused: Exception | None = None


def _drive(case: Case, options: dict[str, Any]) -> Outcome:
    """Run the case once: sync API, or the async handle when the case terminates it itself."""
    t0 = time.perf_counter()
    if case.expect == "refused":
        try:
            run_code_sync(case.src, **options)
        except (TypeError, ValueError) as exc:
            return Outcome(None, time.perf_counter() - t0, refused=exc)
        raise AssertionError("the call was not refused")
    if case.terminate_after is None:
        res = run_code_sync(case.src, **options)
        return Outcome(res, time.perf_counter() - t0)

    delay = case.terminate_after

    async def main() -> CodeResult:
        run = run_code(case.src, **options)
        async with anyio.create_task_group() as tg:

            async def stopper() -> None:
                await anyio.sleep(delay)
                run.terminate(case.reason)

            tg.start_soon(stopper)
            res = await run
            tg.cancel_scope.cancel()
        return res

    res = anyio.run(main)
    return Outcome(res, time.perf_counter() - t0)


Drive = Callable[[Case, dict[str, Any]], Outcome]


def _run_with_watchdog(case: Case, options: dict[str, Any], drive: Drive = _drive) -> Outcome:
    """Run on a helper thread so a hang in the library fails the case instead of the suite."""
    box: list[Outcome] = []

    def work() -> None:
        t0 = time.perf_counter()
        try:
            box.append(drive(case, options))
        except BaseException as exc:  # reported by the caller with the case's context
            box.append(Outcome(None, time.perf_counter() - t0, exc))

    deadline = float(options.get("timeout") or case.timeout) + WATCHDOG_GRACE
    t = threading.Thread(target=work, name=f"case-{case.id}", daemon=True)
    t0 = time.perf_counter()
    t.start()
    t.join(deadline)
    if t.is_alive():
        return Outcome(
            None,
            time.perf_counter() - t0,
            TimeoutError(
                f"HANG: no result {deadline:.1f} s after the start (run deadline "
                f"{options.get('timeout')} s); the run's thread is still blocked"
            ),
        )
    return box[0]


def describe(case: Case, out: Outcome, host: _HostMonitor | None = None) -> str:
    r = out.result
    parts = [f"case {case.id!r}: expected {case.expect}"]
    if case.expect == "completes" and case.result is not ANY:
        parts.append(f" with result {case.result!r}"[:300])
    if case.error:
        parts.append(f" ({case.error})")
    parts.append(f"\n  wall: {out.wall:.3f} s (run timeout {case.timeout} s)")
    if out.raised is not None:
        parts.append(f"\n  raised on the host: {type(out.raised).__name__}: {out.raised}")
    if r is not None:
        parts.append(f"\n  status: {r.status}  reason: {r.reason}")
        if r.error is not None:
            parts.append(f"\n  error: {r.error.name}: {r.error.message[:300]}")
            if r.error.stack:
                parts.append(f"\n  stack: {r.error.stack[:300]!r}")
        if r.status == "success":
            parts.append(f"\n  result: {_safe_repr(r.result)}"[:400])
        if r.host_errors:
            parts.append(f"\n  host_errors: {[repr(e)[:150] for e in r.host_errors[:3]]}")
        parts.append(
            f"\n  reports: {len(r.reports)}  logs: {len(r.logs)}  "
            f"peak guest memory: {r.metrics.peak_memory_bytes / MiB:.1f} MiB"
        )
    if host is not None:
        parts.append(
            f"\n  host RSS growth: {host.growth / MiB:.1f} MiB, longest stall of "
            f"the host's Python threads: {host.stall:.3f} s"
        )
    return "".join(parts)


def assert_no_host_text(text: str, what: str) -> None:
    m = _HOST_PATH_RE.search(text)
    assert m is None, f"{what} reveals host text {m.group(0)!r}: {text[:300]!r}"


def _result_matches(expected: Any, got: Any) -> bool:
    if expected is ANY:
        return True
    if callable(expected):
        return bool(expected(got))
    return bool(got == expected) and type(got) is type(expected)


def run_case(case: Case, ctx: Ctx, drive: Drive | None = None) -> CodeResult:
    """Run ``case`` and assert its outcome class and the invariants every case shares.

    ``drive`` runs it another way (by default: ``run_code_sync``, or the async handle when
    the case terminates it itself), e.g. after a pause and a resume."""
    options = case.options(ctx)
    if case.prior is not None:
        prior = run_code_sync(case.prior, **{**options, "timeout": 2.0 * SLOW_MACHINE})
        assert prior.status == "success", f"case {case.id!r}: the prior run failed: {prior.error}"
    with _HostMonitor() as host:
        out = _run_with_watchdog(case, options, drive or _drive)
    info = describe(case, out, host)
    assert out.raised is None, info
    assert case.expect != "refused", f"{info}: use run_any for a case that must be refused"
    r = out.result
    assert r is not None, info

    # the outcome class
    assert r.status == STATUS_OF[case.expect], info
    if case.expect == "completes":
        assert _result_matches(case.result, r.result), info
    elif case.expect == "js_error":
        assert r.error is not None, info
        if case.error is not None:
            assert r.error.name == case.error, info
        if case.message is not None:
            assert case.message in r.error.message, info
    elif case.expect == "terminated":
        assert r.reason == case.reason, info
    # time: a terminated run stops promptly; no run outlives its deadline by much
    if case.expect == "terminated":
        assert out.wall < (case.max_wall or max(TERMINATED_WALL, case.timeout + 1.0)), info
    else:
        limit = case.max_wall * SLOW_MACHINE if case.max_wall else case.deadline
        assert out.wall < limit + 1.5, info
    # memory: the host pays at most the guest's cap plus slack (and what the case hands it)
    cap = int(options["memory_limit_bytes"])
    assert host.growth < cap + RSS_SLACK + case.host_bytes, info
    # the guest cannot freeze the host's other Python threads (a long step holding the GIL)
    assert host.stall < case.max_stall, info
    # no host path in what the guest produced as its error
    if r.error is not None:
        assert_no_host_text(r.error.message, f"case {case.id!r}: the error message")
        assert_no_host_text(r.error.stack, f"case {case.id!r}: the error stack")
    if case.check is not None:
        case.check(r, ctx)
    return r


def run_refused(case: Case, ctx: Ctx) -> Exception:
    """Run a ``refused`` case: the API must refuse it (nothing runs) and the host stay small."""
    options = case.options(ctx)
    with _HostMonitor() as host:
        out = _run_with_watchdog(case, options)
    info = describe(case, out, host)
    assert out.raised is None, info
    exc = out.refused
    assert exc is not None, info
    assert case.error is None or type(exc).__name__ == case.error, f"{info}\n  {exc!r}"
    assert case.message is None or case.message in str(exc), f"{info}\n  {exc}"
    assert host.growth < case.memory + RSS_SLACK + case.host_bytes, info
    assert host.stall < case.max_stall, info
    return exc


def run_any(case: Case, ctx: Ctx) -> None:
    """Run a case of any outcome class, ``refused`` included."""
    if case.expect == "refused":
        run_refused(case, ctx)
    else:
        run_case(case, ctx)
