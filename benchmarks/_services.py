"""Built-in services per call: the clock, randomness, and the console and report() past their
caps (issue 12: each should cost at most 1 µs, with no host round trip where none is needed).

Per-call time is ``(median run with N calls − median run of the same loop without them) / N``,
as for host calls. The loop keeps a running value so no call is dead code. Native quickjs-ng
runs the same loop where it has the service (``Date.now``, ``Math.random``,
``performance.now``); a refused ``report()`` is compared with a native ``throw`` of a
``RangeError`` caught in the loop, which is what the program sees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks._engines import NG, QUICKJAIL, RS, ng_eval, qj
from benchmarks._harness import Config
from benchmarks._hostcalls import _per_call, _variants
from benchmarks._report import Cell, Row, Target, compare
from quickjail.sandbox import OutputLimits

__all__ = ["rows"]

GOAL = Target("<=", 1e3, "≤ 1 µs")
CAPPED = OutputLimits(max_logs=10, max_reports=10)


@dataclass(frozen=True, slots=True)
class _Service:
    key: str
    measure: str
    step: str  # one call, as an expression statement; `i` is the loop index
    native: str | None  # the same for native quickjs-ng, or None when it has no such service
    prelude: str = ""


SERVICES = [
    _Service("svc_date_now", "`Date.now()`", "s += Date.now() & 1", "s += Date.now() & 1"),
    _Service(
        "svc_performance_now",
        "`performance.now()`",
        "s += performance.now() > 0 ? 1 : 0",
        "s += performance.now() > 0 ? 1 : 0",
    ),
    _Service("svc_math_random", "`Math.random()`", "s += Math.random()", "s += Math.random()"),
    _Service(
        "svc_get_random_values",
        "`crypto.getRandomValues(new Uint8Array(16))`, into one buffer",
        "s += crypto.getRandomValues(buf)[0]",
        None,
        "const buf = new Uint8Array(16);",
    ),
    _Service(
        "svc_console_past_cap",
        "`console.log(i)` past the log cap (`max_logs=10`)",
        "console.log('line', i)",
        None,
    ),
    _Service(
        "svc_report_past_cap",
        "`report(i)` past `max_reports=10`, caught",
        "try { report(i) } catch (e) { s++ }",
        "try { throw new RangeError('refused') } catch (e) { s++ }",
    ),
]


def _loop(svc: _Service, n: int, step: str | None) -> str:
    body = step if step is not None else "s += i & 1"
    return f"{svc.prelude}\nlet s = 0;\nfor (let i = 0; i < {n}; i++) {{ {body} }}\n"


def _row(cfg: Config, failures: list[str], svc: _Service) -> Row:
    n = 10 if cfg.dry else 100_000

    def quickjail(call: bool) -> Callable[[], Any]:
        src = _loop(svc, n, svc.step if call else None) + "export default typeof s;"
        return lambda: qj(src, language="javascript", output_limits=CAPPED)

    def native(call: bool) -> Callable[[], Any]:
        src = (
            f"(function () {{ {_loop(svc, n, svc.native if call else None)} return typeof s; }})()"
        )
        return lambda: ng_eval(src)

    runs = _variants(quickjail, QUICKJAIL)
    if svc.native is not None:
        runs |= _variants(native, NG)

    def check(key: str, value: Any) -> None:
        from benchmarks._engines import BenchFailure

        if value != "number":
            raise BenchFailure(f"{key}: the loop returned {value!r}")

    cells = compare(cfg, failures, svc.key, runs, check)
    none = Cell(error="no such service", display="n/a")
    peers = {
        NG: _per_call(cells, NG, n) if svc.native is not None else none,
        RS: Cell(error="not measured", display="n/a"),
    }
    return Row(
        svc.key,
        f"{svc.measure}, per call",
        "time",
        _per_call(cells, QUICKJAIL, n),
        peers,
        GOAL,
        note=f"(run with {n:,} calls − the same loop without them) / calls; the sync API.",
    )


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    return [_row(cfg, failures, svc) for svc in SERVICES]
