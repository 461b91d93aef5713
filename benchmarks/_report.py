"""Rows of results, the markdown table, the JSON file and the environment header."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import tomllib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from benchmarks._engines import PEERS, versions
from benchmarks._harness import REPO_ROOT, Config, Stats, measure, measure_async

__all__ = [
    "Cell",
    "Row",
    "Target",
    "attempt",
    "attempt_async",
    "compare",
    "compare_async",
    "environment",
    "geomean",
    "record_failure",
    "render_table",
    "to_json",
]

Kind = Literal["time", "bytes", "factor"]


@dataclass(slots=True)
class Cell:
    """One engine's number for a row: a median in the row's unit, or why there is none."""

    value: float | None = None
    stats: Stats | None = None
    error: str | None = None
    display: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None and self.error is None


@dataclass(frozen=True, slots=True)
class Target:
    """A target for quickjail's number: ``value <= limit`` or ``value >= limit``.

    With ``peer``, the number is quickjail's ratio to that peer in the same run (issue 12's
    goals are ratios to native quickjs-ng); without, quickjail's own value (DESIGN §4).
    """

    op: Literal["<=", ">="]
    limit: float
    text: str
    peer: str | None = None

    def met(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit


@dataclass(slots=True)
class Row:
    """One line of the table: quickjail and the peers on the same measure, in one run."""

    key: str
    measure: str
    kind: Kind
    quickjail: Cell
    peers: dict[str, Cell]
    target: Target | None = None
    ratios: bool = True
    note: str = ""

    @property
    def passed(self) -> bool | None:
        if self.target is None or not self.quickjail.ok:
            return None
        assert self.quickjail.value is not None
        if self.target.peer is not None:
            ratio = self.ratio(self.target.peer)
            return None if ratio is None else self.target.met(ratio)
        return self.target.met(self.quickjail.value)

    def ratio(self, peer: str) -> float | None:
        cell = self.peers.get(peer)
        if not self.ratios or cell is None or not cell.ok or not self.quickjail.ok:
            return None
        assert cell.value is not None and self.quickjail.value is not None
        return self.quickjail.value / cell.value if cell.value > 0 else None


def attempt(fn: Callable[[], Cell], failures: list[str], label: str) -> Cell:
    """Run one engine's measure; a failure becomes an ``n/a`` cell and is recorded."""
    try:
        return fn()
    except ModuleNotFoundError as exc:
        return Cell(error=f"not installed ({exc.name})")
    except Exception as exc:
        return record_failure(exc, failures, label)


async def attempt_async(fn: Callable[[], Awaitable[Cell]], failures: list[str], label: str) -> Cell:
    """:func:`attempt` for a measure that runs on the current event loop."""
    try:
        return await fn()
    except ModuleNotFoundError as exc:
        return Cell(error=f"not installed ({exc.name})")
    except Exception as exc:
        return record_failure(exc, failures, label)


def compare(
    cfg: Config,
    failures: list[str],
    label: str,
    runs: Mapping[str, Callable[[], Any]],
    check: Callable[[str, Any], Any] | None = None,
) -> dict[str, Cell]:
    """Check each engine's run once, then time the good ones together (round-robin).

    ``check(key, value)`` raises :class:`BenchFailure` on a wrong value and may return a
    summary to keep (a checksum) in ``cell.extra["checked"]``.
    """
    cells = {
        key: attempt(partial(_validate, key, run, check), failures, f"{label}/{key}")
        for key, run in runs.items()
    }
    ready = {key: run for key, run in runs.items() if cells[key].error is None}
    for key, res in measure(cfg, ready).items():
        _record(cells[key], res, failures, f"{label}/{key}")
    return cells


async def compare_async(
    cfg: Config,
    failures: list[str],
    label: str,
    runs: Mapping[str, Callable[[], Awaitable[Any]]],
    check: Callable[[str, Any], Any] | None = None,
) -> dict[str, Cell]:
    """:func:`compare` for coroutine functions, on the current event loop."""
    cells: dict[str, Cell] = {}
    for key, run in runs.items():
        cells[key] = await attempt_async(
            partial(_validate_async, key, run, check), failures, f"{label}/{key}"
        )
    ready = {key: run for key, run in runs.items() if cells[key].error is None}
    for key, res in (await measure_async(cfg, ready)).items():
        _record(cells[key], res, failures, f"{label}/{key}")
    return cells


def _validate(key: str, run: Callable[[], Any], check: Callable[[str, Any], Any] | None) -> Cell:
    value = run()
    summary = check(key, value) if check is not None else None
    return Cell(extra={} if summary is None else {"checked": summary})


async def _validate_async(
    key: str, run: Callable[[], Awaitable[Any]], check: Callable[[str, Any], Any] | None
) -> Cell:
    value = await run()
    summary = check(key, value) if check is not None else None
    return Cell(extra={} if summary is None else {"checked": summary})


def _record(cell: Cell, res: Stats | Exception, failures: list[str], label: str) -> None:
    if isinstance(res, Exception):
        cell.error = record_failure(res, failures, label).error
    else:
        cell.value, cell.stats = res.median_ns, res


def record_failure(exc: Exception, failures: list[str], label: str) -> Cell:
    """Record a failed measure (printed now, listed at the end) and return its n/a cell."""
    message = (f"{type(exc).__name__}: {exc}".splitlines() or ["?"])[0][:300]
    failures.append(f"{label}: {message}")
    print(f"  ! {label}: {message}", file=sys.stderr, flush=True)
    return Cell(error=message)


# ------------------------------------------------------------------ formatting


def fmt_time(ns: float) -> str:
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:,.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:,.2f} ms"
    return f"{ns / 1e9:,.2f} s"


def fmt_value(kind: Kind, value: float) -> str:
    if kind == "time":
        return fmt_time(value)
    if kind == "bytes":
        return f"{value / 1024:,.1f} KiB"
    return f"{value:.2f}×"


def _cell(row: Row, cell: Cell | None) -> str:
    if cell is None:
        return "n/a"
    if cell.display is not None:
        return cell.display
    if not cell.ok:
        return "n/a"
    assert cell.value is not None
    return fmt_value(row.kind, cell.value)


def _spread(row: Row) -> str:
    stats = row.quickjail.stats
    if stats is None or stats.n < 2 or not row.quickjail.ok or row.kind != "time":
        return "—"
    return f"{fmt_time(stats.p90_ns)} / {fmt_time(stats.max_ns)}"


def render_table(rows: list[Row], env: dict[str, Any]) -> str:
    """The markdown report: a header with the environment, then one line per row."""
    v, q = env["versions"], env["quickjail"]
    lines = [
        f"# quickjail benchmarks — {env['date']}",
        "",
        f"- Python {env['python']} ({env['implementation']}), wasmtime-py {v.get('wasmtime')}, "
        f"quickjail {v.get('quickjail') or q.get('version', '?')} "
        f"(commit {q.get('commit', '?')}, guest build {q.get('guest_build', '?')})",
        "- peers: " + ", ".join(f"{p} {v.get(p) or 'not installed'}" for p in PEERS),
        f"- CPU: {env['cpu']} — {env['cpus_usable']} usable of {env['cpus']} logical; "
        f"{env['platform']}",
        "- values are medians over the same process run; ratio = quickjail / peer "
        "(below 1 is quickjail faster or smaller)",
        "",
    ]
    head = ["measure", "quickjail (median)", "quickjail p90 / max"]
    head += [f"{p}" for p in PEERS]
    head += [f"ratio vs {p}" for p in PEERS]
    head += ["target", "pass"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for row in rows:
        cells = [row.measure, _cell(row, row.quickjail), _spread(row)]
        cells += [_cell(row, row.peers.get(p)) for p in PEERS]
        for p in PEERS:
            r = row.ratio(p)
            cells.append(f"{r:.2f}×" if r is not None else "—")
        cells.append(row.target.text if row.target else "—")
        passed = row.passed
        cells.append("—" if passed is None else ("pass" if passed else "FAIL"))
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"- **{row.measure}**: {row.note}" for row in rows if row.note]
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ JSON and environment


def _cell_json(cell: Cell) -> dict[str, Any]:
    out: dict[str, Any] = {"value": cell.value, "error": cell.error}
    if cell.stats is not None:
        out["stats"] = cell.stats.to_json()
    if cell.extra:
        out["extra"] = cell.extra
    return out


def to_json(rows: list[Row], env: dict[str, Any], failures: list[str]) -> dict[str, Any]:
    return {
        "environment": env,
        "failures": failures,
        "rows": [
            {
                "key": row.key,
                "measure": row.measure,
                "unit": {"time": "ns", "bytes": "bytes", "factor": "x"}[row.kind],
                "quickjail": _cell_json(row.quickjail),
                "peers": {p: _cell_json(c) for p, c in row.peers.items()},
                "ratios": {p: row.ratio(p) for p in PEERS},
                "target": None
                if row.target is None
                else {
                    "op": row.target.op,
                    "limit": row.target.limit,
                    "text": row.target.text,
                    "peer": row.target.peer,
                },
                "passed": row.passed,
                "note": row.note,
            }
            for row in rows
        ],
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _source_tree() -> dict[str, Any]:
    """Version, commit and guest build of the quickjail tree being measured (best effort)."""
    out: dict[str, Any] = {}
    try:
        with open(REPO_ROOT / "pyproject.toml", "rb") as f:
            out["version"] = tomllib.load(f)["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        pass
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        out["commit"] = head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        build = json.loads((REPO_ROOT / "sandbox" / "_guest" / "build.json").read_text())
        out["guest_build"] = str(build["build_id"])[:12]
    except (OSError, KeyError, ValueError):
        pass
    return out


def environment() -> dict[str, Any]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "quickjail": _source_tree(),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "versions": versions(),
    }


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))
