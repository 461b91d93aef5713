"""Once a run's log is full, or its report count is reached, the guest stops asking the host:
console calls return at once and report() is refused in the guest, with the same outcome as
when the host refused each call (issue 12: a program logging in a loop past the cap must not
pay a host crossing per call). The host keeps its caps whatever the guest does (the
compromised-guest table in tests/isolation plays a guest that goes on sending)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from quickjail import run_code_sync
from quickjail.sandbox import OutputLimits
from quickjail.sandbox._abi import OP_LOG, OP_REPORT
from quickjail.sandbox._run import Run

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def crossings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[int]]:
    """How many times the guest crossed into the host, per op."""
    seen: Counter[int] = Counter()
    on_host = Run.on_host

    def counting(self: Run, op: int, *args: Any) -> int:
        seen[op] += 1
        return on_host(self, op, *args)

    monkeypatch.setattr(Run, "on_host", counting)
    yield seen


def test_console_calls_past_the_log_cap_do_not_cross_into_the_host(
    crossings: Counter[int],
) -> None:
    src = "for (let i = 0; i < 5000; i++) console.log('line', i); export default 1"
    r = run_code_sync(src, output_limits=OutputLimits(max_logs=10))
    assert r.status == "success", r
    assert [e.args for e in r.logs[:10]] == [["line", i] for i in range(10)]
    assert r.logs[10].args == ["[quickjail] log limit reached; later logs were dropped"]
    assert len(r.logs) == 11
    assert crossings[OP_LOG] == 11  # ten taken, the one that closed the log


def test_every_console_method_is_dropped_once_the_log_is_closed(
    crossings: Counter[int],
) -> None:
    src = """
    console.log('x'.repeat(200));
    console.log('fits');  // small enough, but the log closed at the first drop
    console.warn('w'); console.error('e'); console.info('i'); console.debug('d');
    console.count('c'); console.count('c'); console.assert(false, 'a'); console.table([1]);
    console.group('g'); console.groupEnd(); console.dir({}); console.trace('t');
    export default 1
    """
    r = run_code_sync(src, output_limits=OutputLimits(max_log_bytes=100))
    assert r.status == "success", r
    assert [e.args for e in r.logs] == [["[quickjail] log limit reached; later logs were dropped"]]
    assert crossings[OP_LOG] == 1


def test_console_state_goes_on_after_the_log_closed() -> None:
    """Dropping output does not stop console.count counting (only the lines are lost)."""
    src = """
    for (let i = 0; i < 3; i++) console.count('n');
    console.countReset('missing');
    export default 1
    """
    r = run_code_sync(src, output_limits=OutputLimits(max_logs=1))
    assert [e.args for e in r.logs] == [
        ["n: 1"],
        ["[quickjail] log limit reached; later logs were dropped"],
    ]
    src = "for (let i = 0; i < 3; i++) console.count('n'); export default 1"
    assert [e.args for e in run_code_sync(src, output_limits=OutputLimits(max_logs=3)).logs][
        -1
    ] == ["n: 3"]


def test_reports_past_the_count_cap_are_refused_in_the_guest_with_the_same_error(
    crossings: Counter[int],
) -> None:
    src = """
    const seen = new Set();
    for (let i = 0; i < 2000; i++)
      try { report(i) } catch (e) { seen.add(`${e.name}: ${e.message}`) }
    export default [...seen]
    """
    r = run_code_sync(src, output_limits=OutputLimits(max_reports=5))
    assert r.status == "success", r
    assert r.reports == [0, 1, 2, 3, 4]
    assert r.result == [
        "RangeError: report refused: more than 5 reports (output_limits.max_reports)"
    ]
    assert crossings[OP_REPORT] == 6  # five taken, the one refused by the host


def test_a_report_past_the_cap_still_fails_first_for_what_it_holds() -> None:
    """The value is read before the cap is checked, as it was when the host refused it."""
    src = """
    try { report(0) } catch {}
    const out = [];
    for (const v of [1, { get x() { throw new Error('getter') } }]) {
      try { report(v) } catch (e) { out.push(e.message) }
    }
    export default out
    """
    r = run_code_sync(src, output_limits=OutputLimits(max_reports=1))
    assert r.status == "success", r
    assert r.result[0] == "report refused: more than 1 reports (output_limits.max_reports)"
    assert r.result[1] == "getter"
