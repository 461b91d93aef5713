"""``python -m benchmarks [--dry-run] [--only AREA ...] [--json PATH] [--budget SECONDS]``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import (
    _compute,
    _connectors,
    _durable,
    _executors,
    _hostcalls,
    _limits,
    _memory,
    _modules,
    _services,
    _startup,
    _throughput,
    _transfer,
)
from benchmarks._harness import Config
from benchmarks._report import Row, environment, render_table, to_json

AREAS: dict[str, Callable[[Config, list[str]], list[Row]]] = {
    "startup": _startup.rows,
    "hostcalls": _hostcalls.rows,
    "services": _services.rows,
    "transfer": _transfer.rows,
    "compute": _compute.rows,
    "memory": _memory.rows,
    "throughput": _throughput.rows,
    "modules": _modules.rows,
    "limits": _limits.rows,
    "executors": _executors.rows,
    "durable": _durable.rows,
    "connectors": _connectors.rows,
}
DEFAULT_JSON = Path(__file__).resolve().parent / "results.json"


def _fatal(failures: list[str]) -> list[str]:
    """Failures that mean quickjail is broken (peers failing only cost their column)."""
    return [f for f in failures if "/quickjail:" in f or "MISMATCH" in f]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="run every measure once with tiny sizes; no timing table",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(AREAS),
        metavar="AREA",
        help=f"run only these areas ({', '.join(AREAS)})",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help=f"where to write the JSON results (default: {DEFAULT_JSON.name}; "
        "a dry run writes none unless given)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=0.6,
        help="target seconds of timed repetitions per measure (default 0.6)",
    )
    args = parser.parse_args(argv)

    cfg = Config(dry=args.dry_run, budget_s=args.budget)
    failures: list[str] = []
    rows: list[Row] = []
    started = time.perf_counter()
    for name in args.only or list(AREAS):
        t0 = time.perf_counter()
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        area_rows = AREAS[name](cfg, failures)
        rows.extend(area_rows)
        print(
            f"[{name}] {len(area_rows)} row(s) in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    elapsed = time.perf_counter() - started

    env = environment()
    env["elapsed_s"] = round(elapsed, 1)
    env["mode"] = "dry-run" if cfg.dry else "full"
    fatal = _fatal(failures)
    out_path = args.json if args.json is not None or cfg.dry else DEFAULT_JSON
    if out_path is not None:
        out_path.write_text(json.dumps(to_json(rows, env, failures), indent=2) + "\n")

    if cfg.dry:
        for row in rows:
            state = "ok" if row.quickjail.ok else "FAILED"
            peers = ", ".join(
                f"{name} {'ok' if cell.ok else cell.error or '—'}"
                for name, cell in row.peers.items()
                if cell.display != "—"
            )
            print(f"{state:6} {row.key}" + (f"  ({peers})" if peers else ""))
        peer_issues = [f for f in failures if f not in fatal]
        print(
            f"dry run: {len(rows)} rows in {elapsed:.1f} s; {len(fatal)} quickjail "
            f"failure(s), {len(peer_issues)} peer failure(s)"
        )
    else:
        print(render_table(rows, env))
        print(f"total {elapsed:.0f} s; JSON written to {out_path}")
    for f in failures:
        print(f"failure: {f}", file=sys.stderr)
    return 1 if fatal else 0


if __name__ == "__main__":
    sys.exit(main())
