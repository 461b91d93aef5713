"""Rows 6–7: values crossing the boundary — 10k records out, a 1 MB string each way.

quickjail returns structured values natively. The peers are measured the way one would move
such data with them: native quickjs-ng returns objects as opaque handles, so the script
returns ``JSON.stringify(...)`` and Python calls ``json.loads``; quickjs-rs converts values
itself but takes seconds per thousand records that way (about 45 s for 10k), so it gets the
same JSON route.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from benchmarks._engines import NG, QUICKJAIL, RS, BenchFailure, ng_eval, qj, rs_eval
from benchmarks._harness import Config
from benchmarks._report import Row, Target, compare

__all__ = ["rows"]


def _records_js(n: int) -> str:
    return (
        f'Array.from({{length: {n}}}, (_, i) => ({{id: i, name: "user" + i, '
        'score: i * 1.5, tags: ["a", "b"], active: i % 2 === 0}))'
    )


def _records_check(n: int) -> Callable[[str, Any], None]:
    want = {
        "id": n - 1,
        "name": f"user{n - 1}",
        "score": (n - 1) * 1.5,
        "tags": ["a", "b"],
        "active": (n - 1) % 2 == 0,
    }

    def check(_key: str, value: Any) -> None:
        if not isinstance(value, list) or len(value) != n or value[-1] != want:
            raise BenchFailure(f"records came back wrong: {str(value)[:120]}")

    return check


def _length_check(n: int) -> Callable[[str, Any], None]:
    def check(_key: str, value: Any) -> None:
        got = len(value) if isinstance(value, str) else value
        if got != n:
            raise BenchFailure(f"got {str(got)[:80]}, expected {n}")

    return check


def _records_row(cfg: Config, failures: list[str]) -> Row:
    n = 10 if cfg.dry else 10_000
    js = _records_js(n)
    module, script = f"export default {js}", f"JSON.stringify({js})"
    cells = compare(
        cfg,
        failures,
        "records_out",
        {
            QUICKJAIL: lambda: qj(module),
            NG: lambda: json.loads(ng_eval(script)),
            RS: lambda: json.loads(rs_eval(script)),
        },
        _records_check(n),
    )
    return Row(
        "records_out",
        f"{n:,} records sandbox → Python",
        "time",
        cells[QUICKJAIL],
        {NG: cells[NG], RS: cells[RS]},
        Target("<=", 15e6, "≤ 15 ms"),
        note="full run, fresh sandbox/context included; peers go through `JSON.stringify` + "
        "`json.loads` (quickjs-rs's own conversion is far slower at this size).",
    )


def _string_rows(cfg: Config, failures: list[str]) -> list[Row]:
    size = 1024 if cfg.dry else 1 << 20
    big = "x" * size
    out_js = f'"x".repeat({size})'
    out_module = f"export default {out_js}"
    in_module = "export function main(s) { return s.length; }"
    out = compare(
        cfg,
        failures,
        "string_out",
        {
            QUICKJAIL: lambda: qj(out_module),
            NG: lambda: ng_eval(out_js),
            RS: lambda: rs_eval(out_js),
        },
        _length_check(size),
    )
    into = compare(
        cfg,
        failures,
        "string_in",
        {
            QUICKJAIL: lambda: qj(in_module, execute={"fn": "main", "args": [big]}),
            NG: lambda: ng_eval("s.length", values={"s": big}),
            RS: lambda: rs_eval("s.length", values={"s": big}),
        },
        _length_check(size),
    )
    target = Target("<=", 1.2, "≤ 1.2× native", NG)
    return [
        Row(
            "string_out",
            f"{size // 1024:,} KiB string out (sandbox → Python)",
            "time",
            out[QUICKJAIL],
            {NG: out[NG], RS: out[RS]},
            target,
            note='full run of `export default "x".repeat(1 << 20)`; peers: fresh context + `eval`.',
        ),
        Row(
            "string_in",
            f"{size // 1024:,} KiB string in (Python → sandbox)",
            "time",
            into[QUICKJAIL],
            {NG: into[NG], RS: into[RS]},
            target,
            note="`execute={'fn': 'main', 'args': [s]}` returning `s.length`; peers: fresh "
            "context, set a global, `eval('s.length')`.",
        ),
    ]


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    return [_records_row(cfg, failures), *_string_rows(cfg, failures)]
