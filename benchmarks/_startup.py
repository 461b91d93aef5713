"""Rows 1–3: a fresh sandbox for ``1+1`` (sync, async) and the first run in a new process; and
a fresh sandbox's first use of ``Intl`` (which loads the polyfills and their data then)."""

from __future__ import annotations

import importlib.util
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
from benchmarks._harness import Config, measure_spawn
from benchmarks._report import Cell, Row, Target, compare, compare_async, record_failure

__all__ = ["rows"]

ONE_PLUS_ONE = "export default 1+1"


def _expect_two(_key: str, value: Any) -> None:
    if value != 2:
        raise BenchFailure(f"1+1 returned {value!r}")


def _fresh_sync(cfg: Config, failures: list[str]) -> Row:
    cells = compare(
        cfg,
        failures,
        "fresh_sync",
        {
            QUICKJAIL: lambda: qj(ONE_PLUS_ONE),
            NG: lambda: ng_eval("1+1"),
            RS: lambda: rs_eval("1+1"),
        },
        _expect_two,
    )
    return Row(
        "fresh_sync",
        "fresh sandbox, `export default 1+1`, sync API",
        "time",
        cells[QUICKJAIL],
        {NG: cells[NG], RS: cells[RS]},
        Target("<=", 1.0, "≤ 1.0× native", NG),
        note="peers: a fresh native `quickjs.Context()` + `eval('1+1')`; a fresh quickjs-rs "
        "Runtime + Context + `eval('1+1')` + close.",
    )


def _fresh_async(cfg: Config, failures: list[str]) -> Row:
    async def main() -> dict[str, Cell]:
        return await compare_async(
            cfg,
            failures,
            "fresh_async",
            {
                QUICKJAIL: lambda: qj_async(ONE_PLUS_ONE),
                RS: lambda: rs_eval_async("1+1"),
            },
            _expect_two,
        )

    cells = anyio.run(main)
    return Row(
        "fresh_async",
        "same through the async API",
        "time",
        cells[QUICKJAIL],
        {NG: Cell(error="no async API", display="n/a (no async API)"), RS: cells[RS]},
        Target("<=", 250e3, "≤ 250 µs"),
        note="`await bridge.run_code(...)` per run inside one `anyio.run` (asyncio); "
        "quickjs-rs: fresh Runtime + Context + `await eval_async('1+1')`.",
    )


def _first_run(cfg: Config, failures: list[str]) -> list[Row]:
    codes = {
        QUICKJAIL: "import quickjail; quickjail.run_code_sync('export default 1+1')",
        NG: "import quickjs; quickjs.Context().eval('1+1')",
        RS: "import quickjs_rs\n"
        "with quickjs_rs.Runtime() as rt, rt.new_context() as ctx: ctx.eval('1+1')",
        "python": "pass",
    }
    modules = {QUICKJAIL: "quickjail.sandbox", NG: "quickjs", RS: "quickjs_rs"}
    cells: dict[str, Cell] = {}
    for key, module in modules.items():
        if importlib.util.find_spec(module) is None:
            cells[key] = Cell(error=f"not installed ({module})")
    for key, res in measure_spawn(cfg, {k: c for k, c in codes.items() if k not in cells}).items():
        if isinstance(res, Exception):
            cells[key] = record_failure(res, failures, f"first_run/{key}")
        else:
            cells[key] = Cell(res.median_ns, res)
    first = Row(
        "first_run",
        "first run in a new process (import + first run)",
        "time",
        cells[QUICKJAIL],
        {NG: cells[NG], RS: cells[RS]},
        Target("<=", 1.0, "≤ 1.0× native", NG),
        note=f"`python -c` wall time, median of {cfg.spawn_reps} spawns (engines taking turns) "
        "after one untimed round, so quickjail's compiled module is in its disk cache; "
        "nothing subtracted.",
    )
    bare = Row(
        "python_startup",
        "baseline: bare `python -c pass`",
        "time",
        cells["python"],
        {NG: Cell(display="—"), RS: Cell(display="—")},
        None,
        ratios=False,
    )
    return [first, bare]


# (key, program, expected value): a fresh run's first use of Intl; Node 20 gives the values
FIRST_INTL = [
    ("first_intl_number", "export default (48213).toLocaleString('en-US')", "48,213"),
    (
        "first_intl_date",
        "export default new Intl.DateTimeFormat('de', {timeZone: 'Asia/Tokyo'}).format(0)",
        "1.1.1970",
    ),
]


def _first_intl(cfg: Config, failures: list[str]) -> list[Row]:
    out = []
    for key, source, want in FIRST_INTL:

        def check(_key: str, value: Any, want: str = want, source: str = source) -> None:
            if value != want:
                raise BenchFailure(f"{source} returned {value!r}")

        cells = compare(cfg, failures, key, {QUICKJAIL: lambda s=source: qj(s)}, check)
        na = Cell(display="n/a (no Intl)")
        out.append(
            Row(
                key,
                f"first Intl use in a fresh sandbox: `{source.removeprefix('export default ')}`",
                "time",
                cells[QUICKJAIL],
                {NG: na, RS: na},
                None,
                ratios=False,
                note="each sample a fresh run that loads the formatjs modules and the locale "
                'data it needs (README "Intl"); the fresh `1+1` row above pays none of it.',
            )
        )
    return out


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    return [
        _fresh_sync(cfg, failures),
        _fresh_async(cfg, failures),
        *_first_run(cfg, failures),
        *_first_intl(cfg, failures),
    ]
