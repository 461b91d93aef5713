"""Durable runs (issue 25): what a paused run weighs, and what pausing and resuming cost.

The program is small: an entry that awaits one host call ``ask(n)`` and returns its answer
plus one. Paused, ``ask`` raises ``bridge.Pause``; answered directly, it returns at once. Both
costs are factors against that direct run, timed round-robin with it in the same process run,
so the machine's load weighs on both sides alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks._engines import NG, RS, BenchFailure, qj
from benchmarks._harness import Config
from benchmarks._report import Cell, Row, Target, compare, record_failure

__all__ = ["rows"]

KEY = b"benchmark key: thirty-two bytes or more"
FRESH, PAUSE, RESUME = "fresh", "pause+seal", "open+resume"
LOOP, LOOP_FRESH = "100 pauses", "100 answers"
SMALL = "export default async function () {\n  return (await ask(41)) + 1;\n}\n"
_NOT_PEERS = Cell(error="no durable runs", display="n/a (no durable runs)")


def _loop_source(n: int) -> str:
    return (
        "export default async function () {\n"
        f"  let s = 0;\n  for (let i = 0; i < {n}; i++) s += await ask(i);\n  return s;\n"
        "}\n"
    )


def _answer(n: int) -> int:
    return n


def _pause(n: int) -> Any:
    from quickjail.bridge import Pause

    raise Pause({"n": n})


def _paused(source: str) -> Any:
    """One run of ``source`` until it pauses; its result, checked."""
    from quickjail import bridge

    result = bridge.run_code_sync(source, globals={"ask": _pause})
    if result.status != "paused" or result.continuation is None or len(result.paused) != 1:
        raise BenchFailure(f"the run did not pause at one call: {result.status!r}")
    return result


def _resume(sealed: bytes, call_id: int, answer: Any) -> Any:
    from quickjail import bridge

    return bridge.resume_sync(sealed, key=KEY, answers={call_id: answer}, globals={"ask": _pause})


def _pause_and_seal() -> bytes:
    sealed: bytes = _paused(SMALL).continuation.seal(KEY)
    return sealed


def _factor(cells: dict[str, Cell], key: str) -> Cell:
    """``cells[key]`` ÷ the fresh run, both timed in the same round-robin."""
    own, fresh = cells[key], cells[FRESH]
    if not (own.ok and fresh.ok) or not own.value or not fresh.value:
        return Cell(error=own.error or fresh.error or "not measured")
    return Cell(
        own.value / fresh.value,
        extra={"median_ns": own.value, "fresh_run_median_ns": fresh.value},
    )


def _small_rows(cfg: Config, failures: list[str]) -> list[Row]:
    try:
        first = _paused(SMALL)
        sealed: bytes = first.continuation.seal(KEY)
        call_id = first.paused[0].call_id
        size = Cell(float(len(sealed)), extra={"bytes": len(sealed)})
    except Exception as exc:
        failed = record_failure(exc, failures, "durable_size/quickjail")
        no_peers = {NG: _NOT_PEERS, RS: _NOT_PEERS}
        return [
            Row("durable_size", "durable: continuation size", "bytes", failed, no_peers),
            Row("durable_pause", "durable: pause-to-bytes", "factor", failed, no_peers),
            Row("durable_resume", "durable: bytes-to-running", "factor", failed, no_peers),
        ]

    def resumed() -> Any:
        result = _resume(sealed, call_id, 41)
        if result.status != "success":
            raise BenchFailure(f"the resumed run ended {result.status!r}: {result.error}")
        return result.result

    def check(key: str, value: Any) -> None:
        if key == PAUSE:
            if not isinstance(value, bytes) or not value:
                raise BenchFailure("seal() gave no bytes")
        elif value != 42:
            raise BenchFailure(f"{key} returned {value!r}, expected 42")

    cells = compare(
        cfg,
        failures,
        "durable",
        {
            FRESH: lambda: qj(SMALL, globals={"ask": _answer}),
            PAUSE: _pause_and_seal,
            RESUME: resumed,
        },
        check,
    )
    peers = {NG: _NOT_PEERS, RS: _NOT_PEERS}
    return [
        Row(
            "durable_size",
            "durable: continuation of a small program paused in a host call, sealed",
            "bytes",
            size,
            peers,
            Target("<=", 32 * 1024, "≤ 32 KiB"),
            note="`len(result.continuation.seal(key))` for an entry that awaits one host call "
            "raising `bridge.Pause`: the changed 4 KiB pages (zlib), the host state, the MAC.",
        ),
        Row(
            "durable_pause",
            "durable: pause-to-bytes (run until paused + seal) ÷ a fresh run answered directly",
            "factor",
            _factor(cells, PAUSE),
            peers,
            None,
            ratios=False,
            note="`run_code_sync` until `paused`, then `continuation.seal(key)`, against the "
            "same program whose `ask` returns at once; both timed round-robin in one run (the "
            "JSON keeps both medians).",
        ),
        Row(
            "durable_resume",
            "durable: bytes-to-running (open + resume to the result) ÷ a fresh run",
            "factor",
            _factor(cells, RESUME),
            peers,
            Target("<=", 2.0, "≤ 2×"),
            ratios=False,
            note="`resume_sync(sealed, key=…, answers={id: 41}, globals=…)` to `success` "
            "(MAC, inflate, fresh instance, pages written, the answer delivered, the rest "
            "of the program), against the fresh run answered directly, round-robin.",
        ),
    ]


def _loop_row(cfg: Config, failures: list[str]) -> Row:
    n = 3 if cfg.dry else 100
    source = _loop_source(n)
    total = n * (n - 1) // 2

    def legs() -> Any:
        result = _paused(source)
        for i in range(n):
            sealed = result.continuation.seal(KEY)
            result = _resume(sealed, result.paused[0].call_id, i)
            if i < n - 1 and (result.status != "paused" or len(result.paused) != 1):
                raise BenchFailure(f"leg {i} ended {result.status!r}, not paused")
        if result.status != "success":
            raise BenchFailure(f"the last leg ended {result.status!r}: {result.error}")
        return result.result

    def check(key: str, value: Any) -> None:
        if value != total:
            raise BenchFailure(f"{key} returned {value!r}, expected {total}")

    runs: dict[str, Callable[[], Any]] = {
        LOOP: legs,
        LOOP_FRESH: lambda: qj(source, globals={"ask": _answer}),
    }
    cells = compare(cfg, failures, "durable_loop", runs, check)
    own, fresh = cells[LOOP], cells[LOOP_FRESH]
    if own.ok and own.stats is not None:
        per_leg = own.stats.per_item(0.0, n)
        cell = Cell(
            per_leg.median_ns,
            per_leg,
            extra={
                "legs": n,
                "total_median_ns": own.stats.median_ns,
                "answered_directly_median_ns": fresh.value,
            },
        )
    else:
        cell = Cell(error=own.error or "not measured")
    return Row(
        "durable_loop",
        f"durable: a loop that pauses {n}× — run + {n} × (seal + resume), per leg",
        "time",
        cell,
        {NG: _NOT_PEERS, RS: _NOT_PEERS},
        None,
        ratios=False,
        note=f"`s += await ask(i)` × {n}, every call paused: the first run until paused, then "
        f"{n} legs of `seal` + `resume_sync` (each resumed run pauses again, the last "
        "returns); total ÷ legs. The JSON keeps the total and the same loop answered "
        "directly, timed round-robin with it.",
    )


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    return [*_small_rows(cfg, failures), _loop_row(cfg, failures)]
