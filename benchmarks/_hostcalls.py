"""Rows 4–5: host functions called from JS, per call: a sync function answering at once
(``bridge.synchronous``), the same through the default Promise path, and async functions.

Per-call time is ``(median run with the calls − median run of the same loop without them) /
calls``: both runs pay the same fresh sandbox, the same globals and the same loop, so what is
left is the crossing. quickjs-rs is given fewer calls per run (it takes ~0.5 ms a call) so a
measure stays within its time budget; per call, the count does not matter.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from benchmarks._engines import (
    NG,
    QUICKJAIL,
    RS,
    BenchFailure,
    ng_eval,
    qj,
    qj_async,
    rs_eval,
    rs_eval_async,
)
from benchmarks._harness import Config
from benchmarks._report import Cell, Row, Target, compare, compare_async

__all__ = ["rows"]

FULL, EMPTY = "calls", "empty"
LOGGING_ON = "logging on"
_NO_LOGGING = Cell(error="no logging to compare", display="n/a")


def add(a: int, b: int) -> int:
    return a + b


async def add_async(a: int, b: int) -> int:
    return a + b


def _sequential(calls: int, *, call: bool, awaited: bool) -> str:
    step = "add(s, 1)" if call else "(s + 1)"
    if awaited:
        step = f"await {step}"
    return f"let s = 0;\nfor (let i = 0; i < {calls}; i++) s = {step};\n"


def _fan_out(calls: int, *, call: bool) -> str:
    make = "add(i, 1)" if call else "Promise.resolve(i + 1)"
    return (
        f"const r = await Promise.all(Array.from({{length: {calls}}}, (_, i) => {make}));\n"
        "const s = r.reduce((a, b) => a + b, 0);\n"
    )


def _checker(wanted: dict[str, int]) -> Callable[[str, Any], None]:
    def check(key: str, value: Any) -> None:
        want = wanted[key.split(":")[0]]
        if value != want:
            raise BenchFailure(f"the loop returned {value!r}, expected {want}")

    return check


def _per_call(cells: dict[str, Cell], engine: str, calls: int) -> Cell:
    """Per-call cell of ``engine`` from its ``engine:calls`` and ``engine:empty`` cells."""
    full, empty = cells[f"{engine}:{FULL}"], cells[f"{engine}:{EMPTY}"]
    if full.stats is None or empty.stats is None or not (full.ok and empty.ok):
        return Cell(error=full.error or empty.error or "not measured")
    stats = full.stats.per_item(empty.stats.median_ns, calls)
    return Cell(
        stats.median_ns,
        stats,
        extra={
            "calls_per_run": calls,
            "run_median_ns": full.stats.median_ns,
            "empty_run_median_ns": empty.stats.median_ns,
        },
    )


def _variants(
    make: Callable[[bool], Callable[[], Any]], engine: str
) -> dict[str, Callable[[], Any]]:
    return {f"{engine}:{FULL}": make(True), f"{engine}:{EMPTY}": make(False)}


def _sync_row(cfg: Config, failures: list[str]) -> Row:
    n = 10 if cfg.dry else 10_000
    n_rs = 10 if cfg.dry else 1000

    def quickjail(call: bool) -> Callable[[], Any]:
        from quickjail.bridge import synchronous  # imported late: the startup row times it

        src = _sequential(n, call=call, awaited=False) + "export default s;"
        return lambda: qj(src, globals={"add": synchronous(add)})

    def native(call: bool) -> Callable[[], Any]:
        src = f"(function () {{ {_sequential(n, call=call, awaited=False)} return s; }})()"
        return lambda: ng_eval(src, callables={"add": add})

    def rs(call: bool) -> Callable[[], Any]:
        src = f"(function () {{ {_sequential(n_rs, call=call, awaited=False)} return s; }})()"
        return lambda: rs_eval(src, callables={"add": add})

    cells = compare(
        cfg,
        failures,
        "host_call_sync",
        {
            **_variants(quickjail, QUICKJAIL),
            **_variants(native, NG),
            **_variants(rs, RS),
        },
        _checker({QUICKJAIL: n, NG: n, RS: n_rs}),
    )
    return Row(
        "host_call_sync",
        "sync host call `add(a, b)` from JS, per call",
        "time",
        _per_call(cells, QUICKJAIL, n),
        {NG: _per_call(cells, NG, n), RS: _per_call(cells, RS, n_rs)},
        Target("<=", 10.0, "≤ 10× native", NG),
        note=f"(run with {n:,} calls − same loop with `s + 1`) / calls; quickjail: "
        "`globals={'add': bridge.synchronous(add)}`, quickjs-ng: `ctx.add_callable`, "
        f"quickjs-rs: `ctx.register` ({n_rs:,} calls per run).",
    )


_SAME_AS_SYNC = Cell(error="peers have no Promise path", display="n/a (see the row above)")


def _promise_row(cfg: Config, failures: list[str]) -> Row:
    """The default: a sync Python function whose JS call returns a settled Promise."""
    n = 10 if cfg.dry else 10_000

    def quickjail(call: bool) -> Callable[[], Any]:
        src = _sequential(n, call=call, awaited=True) + "export default s;"
        return lambda: qj(src, globals={"add": add})

    cells = compare(
        cfg,
        failures,
        "host_call_promise",
        _variants(quickjail, QUICKJAIL),
        _checker({QUICKJAIL: n}),
    )
    return Row(
        "host_call_promise",
        "sync host call through the Promise path, `await add(a, b)`, per call",
        "time",
        _per_call(cells, QUICKJAIL, n),
        {NG: _SAME_AS_SYNC, RS: _SAME_AS_SYNC},
        Target("<=", 15e3, "≤ 15 µs"),
        note=f"sync `def add` (the default: its promise is settled before the call returns); "
        f"`s = await add(s, 1)` × {n:,} − the same loop with `await (s + 1)`, per call; the "
        "sync API.",
    )


def _async_rows(cfg: Config, failures: list[str]) -> list[Row]:
    n = 10 if cfg.dry else 1000
    n_rs = 10 if cfg.dry else 200
    fan = 10 if cfg.dry else 100
    fan_total = fan * (fan + 1) // 2

    def qj_seq(call: bool) -> Callable[[], Awaitable[Any]]:
        src = _sequential(n, call=call, awaited=True) + "export default s;"
        return lambda: qj_async(src, globals={"add": add_async})

    def rs_seq(call: bool) -> Callable[[], Awaitable[Any]]:
        src = _sequential(n_rs, call=call, awaited=True) + "s"
        return lambda: rs_eval_async(src, callables={"add": add_async})

    def qj_fan(call: bool) -> Callable[[], Awaitable[Any]]:
        src = _fan_out(fan, call=call) + "export default s;"
        return lambda: qj_async(src, globals={"add": add_async})

    def rs_fan(call: bool) -> Callable[[], Awaitable[Any]]:
        src = _fan_out(fan, call=call) + "s"
        return lambda: rs_eval_async(src, callables={"add": add_async})

    async def main() -> tuple[dict[str, Cell], dict[str, Cell]]:
        seq = await compare_async(
            cfg,
            failures,
            "host_call_async",
            {
                **_variants(qj_seq, QUICKJAIL),
                **_variants(rs_seq, RS),
            },
            _checker({QUICKJAIL: n, RS: n_rs}),
        )
        fanned = await compare_async(
            cfg,
            failures,
            "host_call_all",
            {
                **_variants(qj_fan, QUICKJAIL),
                **_variants(rs_fan, RS),
            },
            _checker({QUICKJAIL: fan_total, RS: fan_total}),
        )
        return seq, fanned

    seq, fanned = anyio.run(main)
    no_async = Cell(error="no async host functions", display="n/a (no async host fns)")
    return [
        Row(
            "host_call_async",
            "async host call, sequential awaits, per call",
            "time",
            _per_call(seq, QUICKJAIL, n),
            {NG: no_async, RS: _per_call(seq, RS, n_rs)},
            Target("<=", 60e3, "≤ 60 µs"),
            note=f"`async def add`; `s = await add(s, 1)` × {n:,} (quickjs-rs: {n_rs:,}) − the "
            "same loop with `await (s + 1)`, per call; one `anyio.run` (asyncio).",
        ),
        Row(
            "host_call_all",
            f"async host call, `Promise.all` of {fan}, per call",
            "time",
            _per_call(fanned, QUICKJAIL, fan),
            {NG: no_async, RS: _per_call(fanned, RS, fan)},
            None,
            note=f"{fan} concurrent `add(i, 1)` − the same with `Promise.resolve(i + 1)`, "
            "per call.",
        ),
    ]


@contextmanager
def _debug_handler() -> Iterator[None]:
    """The ``quickjail`` logger at DEBUG with a handler that takes every record."""
    logger = logging.getLogger("quickjail")
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: None  # type: ignore[method-assign]
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.setLevel(level)
        logger.removeHandler(handler)


def _logging_row(cfg: Config, failures: list[str]) -> Row:
    """A host call with quickjail's logging silent (the default) against the same call with a
    DEBUG handler on the ``quickjail`` logger: the call's path logs nothing, so the two match."""
    n = 10 if cfg.dry else 10_000

    def silent(call: bool) -> Callable[[], Any]:
        src = _sequential(n, call=call, awaited=True) + "export default s;"
        return lambda: qj(src, globals={"add": add})

    def logged(call: bool) -> Callable[[], Any]:
        run = silent(call)

        def go() -> Any:
            with _debug_handler():
                return run()

        return go

    cells = compare(
        cfg,
        failures,
        "host_call_logging",
        {**_variants(silent, QUICKJAIL), **_variants(logged, LOGGING_ON)},
        _checker({QUICKJAIL: n, LOGGING_ON: n}),
    )
    quiet, loud = _per_call(cells, QUICKJAIL, n), _per_call(cells, LOGGING_ON, n)
    if quiet.ok and loud.ok and quiet.value and loud.value:
        factor = Cell(
            quiet.value / loud.value,
            extra={"silent_ns_per_call": quiet.value, "debug_handler_ns_per_call": loud.value},
        )
    else:
        factor = Cell(error=quiet.error or loud.error or "not measured")
    return Row(
        "host_call_logging",
        "host calls: logging — `await add(a, b)` per call, logging silent ÷ a DEBUG handler on",
        "factor",
        factor,
        {NG: _NO_LOGGING, RS: _NO_LOGGING},
        Target("<=", 1.1, "≤ 1.1× (no cost)"),
        ratios=False,
        note=f"the Promise-path row's loop ({n:,} calls) with the `quickjail` logger as shipped "
        "(a NullHandler) and with a DEBUG handler taking every record, timed round-robin in "
        "one run; a successful call logs nothing, so the factor is noise around 1 (the JSON "
        "keeps both per-call times).",
    )


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    return [
        _sync_row(cfg, failures),
        _promise_row(cfg, failures),
        _logging_row(cfg, failures),
        *_async_rows(cfg, failures),
    ]
