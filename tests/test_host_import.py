"""The ``qj.host`` import is C (sandbox/_host/calls.c): it hands the run a view of the guest's
span, copies a short reply into scratch, and never lets the run's Python escape into the guest
or keep a pointer into a store once its call is over."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

import quickjail
from quickjail.bridge import synchronous
from quickjail.sandbox import _engine
from quickjail.sandbox._abi import OP_CALL, OP_LOG
from quickjail.sandbox._run import Run

PROGRAM = """
console.log("a log", 1);
const s = add(2, 3);
export default [s, add(s, 1)];
"""


def _add(a: int, b: int) -> int:
    return a + b


def _spying(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Run, int, memoryview | None]]:
    """Record every (run, op, view) the import hands a run."""
    seen: list[tuple[Run, int, memoryview | None]] = []
    honest = Run.on_host

    def on_host(
        self: Run, op: int, a: int, b: int, c: int, d: int, view: memoryview | None
    ) -> int | bytes:
        assert view is None or view.readonly
        seen.append((self, op, view))
        return honest(self, op, a, b, c, d, view)

    monkeypatch.setattr(Run, "on_host", on_host)
    return seen


def test_a_span_view_is_released_when_its_call_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spying(monkeypatch)
    r = quickjail.run_code_sync(PROGRAM, globals={"add": synchronous(_add)})
    assert r.status == "success" and r.result == [5, 6], r.error
    assert r.logs[0].args == ["a log", 1]
    ops = {op for _, op, view in seen if view is not None}
    assert {OP_CALL, OP_LOG} <= ops
    for _, _, view in seen:
        if view is not None:
            with pytest.raises(ValueError, match="released"):
                view.tobytes()  # nothing reads guest memory through it any more


def test_a_run_is_no_longer_its_stores_owner_once_released(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker frees the instance after waking the caller, so the test waits for that."""
    seen = _spying(monkeypatch)
    released = threading.Event()
    honest = Run.release

    def release(self: Run) -> None:
        honest(self)
        released.set()

    monkeypatch.setattr(Run, "release", release)
    r = quickjail.run_code_sync(PROGRAM, globals={"add": synchronous(_add)})
    assert r.status == "success", r.error
    runs = {id(run): run for run, _, _ in seen}
    assert len(runs) == 1
    assert released.wait(60)
    for run in runs.values():
        assert run.store_data.owner is None  # the C holds no pointer to a run that may go


def test_a_handler_exception_is_reported_and_answered_as_a_host_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A host bug that escapes ``on_host`` reaches neither the guest nor the caller's stack:
    the import answers E_HOST (the guest's ``console.log`` throws, as for any host failure)
    and the exception goes to ``sys.unraisablehook``."""
    honest = Run.on_host
    caught: list[Any] = []

    def broken(
        self: Run, op: int, a: int, b: int, c: int, d: int, view: memoryview | None
    ) -> int | bytes:
        if op == OP_LOG:
            raise LookupError("a host bug")
        return honest(self, op, a, b, c, d, view)

    monkeypatch.setattr(Run, "on_host", broken)
    monkeypatch.setattr(sys, "unraisablehook", caught.append)
    r = quickjail.run_code_sync(PROGRAM, globals={"add": synchronous(_add)})
    assert r.status == "error" and r.error is not None
    assert r.error.message == "console.log failed: the host could not take it"
    assert [type(u.exc_value) for u in caught] == [LookupError]


def test_a_reply_is_copied_to_scratch_only_when_it_fits() -> None:
    """Short replies come back through scratch, long ones through OP_FETCH: both whole."""
    short = "x" * 100
    long = "y" * (_engine.get_engine().scratch_size + 3 * 2**16)

    def echo(n: int) -> str:
        return short if n == 0 else long

    r = quickjail.run_code_sync(
        "export default [echo(0), echo(1)].map((s) => s.length)",
        globals={"echo": synchronous(echo)},
    )
    assert r.status == "success" and r.result == [len(short), len(long)], r.error
