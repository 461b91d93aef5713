"""test262 ``intl402`` pass rates of quickjail and Node on the same files, per folder and in total.

Usage: ``python tests/intl402/rates.py [--by top|folder|file] [--no-node] [--workers N]
[--fuel N] [--backstop S] [--json OUT] [PATH_PREFIX ...]`` (default: all of ``intl402``;
``$QUICKJAIL_CACHE_DIR`` holds the pinned tarball and its unpacked tree). Run it with the Python
of the quickjail to measure (a worktree's ``.venv/bin/python``): the quickjail imported is the
one measured. ``--fuel`` and ``--backstop`` give each file more than the suite's budget, to tell
a slow file from a wrong one.

Each runtime runs the very same program per file (``t262_harness.program``: the prelude, the
``shell.js`` chain, the file, the finale), each file in a fresh global:
- quickjail: a fresh sandbox per file (``t262_harness.run_file``), on ``--workers`` threads;
- Node (``node`` on PATH, 20 here): a fresh worker thread per file running the program with
  ``vm.runInThisContext`` (``tests/wpt/node_runner.js``, two at once).

Each row gives, per runtime, the files passed over the files run, for all of them and for the
*shipped-only* ones (every locale the file names is one quickjail ships, ``t262_harness.
locale_literals``). The files not run (``SKIPPED_FEATURES``) are counted by reason below the
table; they count in no rate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __name__ == "__main__":  # run as a script: tests/, this folder and the repo (for release/)
    import quickjail  # first: the quickjail measured is the interpreter's, not the repo's folder

    here = Path(__file__).resolve()
    sys.path[:0] = [str(here.parents[1]), str(here.parent)]
    sys.path.append(str(here.parents[2]))

import t262_harness
from node_jobs import run_node_jobs
from t262_harness import FileResult, Test262File, backstop, discover, interpret, program, run_files
from t262_source import GIT_COMMIT, t262_root

import quickjail

__all__ = ["main"]


def _node(root: Path, files: list[Test262File], work: Path) -> list[FileResult]:
    answers = run_node_jobs([(f.path, program(root, f), backstop(f)) for f in files], work)
    out = []
    for file in files:
        answer = answers[file.path]
        seconds = answer.get("ms", 0) / 1000
        if "error" in answer:
            name, lines = str(answer.get("name") or ""), str(answer["error"]).split("\n")
            # a stack's first line may be the file's position (a SyntaxError's is)
            line = next((x for x in lines if name and x.startswith(name)), lines[0])
            out.append(interpret(file, None, (name, line), seconds))
        else:
            out.append(interpret(file, answer.get("value"), None, seconds))
    return out


def _group(file: Test262File, by: str) -> str:
    if by == "top":
        return file.top
    if by == "folder":
        return file.folder
    return file.path


def _table(
    columns: dict[str, list[FileResult]], by: str
) -> dict[str, dict[str, dict[str, list[int]]]]:
    """Per group, runtime and subset (``all``, ``shipped``): [passed, run]."""
    out: dict[str, dict[str, dict[str, list[int]]]] = {}
    for runtime, results in columns.items():
        for r in results:
            row = out.setdefault(_group(r.file, by), {}).setdefault(runtime, {})
            for subset in ("all", "shipped") if r.file.shipped_only else ("all",):
                cell = row.setdefault(subset, [0, 0])
                cell[0] += r.passed
                cell[1] += 1
    return out


def _cell(p: int, t: int) -> str:
    return f"{p:>6}/{t:<5}{100 * p / t:6.1f}%" if t else f"{'-':>6}/{0:<5}{'':>7}"


def main() -> None:
    """Print the table (and write it, with each file's outcome, as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("prefixes", nargs="*", default=["intl402/"])
    parser.add_argument("--by", choices=("top", "folder", "file"), default="top")
    parser.add_argument("--no-node", action="store_true")
    parser.add_argument("--workers", type=int, default=2, help="quickjail's threads")
    parser.add_argument("--json", type=Path, help="write the table and each file's outcome")
    parser.add_argument("--fuel", type=int, default=t262_harness.FUEL, help="per file")
    parser.add_argument(
        "--backstop", type=float, default=t262_harness.BACKSTOP_S, help="seconds per file"
    )
    args = parser.parse_args()
    # a larger budget tells a slow file from a wrong one (the suite keeps the defaults)
    t262_harness.FUEL, t262_harness.BACKSTOP_S = args.fuel, args.backstop
    root = t262_root()
    runs, not_run = discover(root)
    files = [f for f in runs if f.path.startswith(tuple(args.prefixes))]
    skipped = {p: r for p, r in not_run.items() if p.startswith(tuple(args.prefixes))}
    columns: dict[str, list[FileResult]] = {}
    walls: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        columns["quickjail"] = run_files(root, files, workers=args.workers)
        walls["quickjail"] = time.monotonic() - started
        if not args.no_node:
            started = time.monotonic()
            columns["node"] = _node(root, files, Path(tmp))
            walls["node"] = time.monotonic() - started
    for name, wall in walls.items():
        print(f"{name}: {len(files)} files in {wall:.0f} s", file=sys.stderr)
    table = _table(columns, args.by)
    width = max([len(g) for g in table] + [10]) + 2
    head = "".join(f"{f'{n} all':>20}{f'{n} shipped':>20}" for n in columns)
    where = Path(quickjail.__file__).resolve().parents[1]
    print(f"test262 {GIT_COMMIT[:12]} (SpiderMonkey 128.14.0's import); quickjail from {where}")
    print(f"{'folder':<{width}}{head}")
    totals = {n: {"all": [0, 0], "shipped": [0, 0]} for n in columns}
    for group in sorted(table):
        cells = ""
        for name in columns:
            row = table[group].get(name, {})
            for subset in ("all", "shipped"):
                p, t = row.get(subset, [0, 0])
                totals[name][subset][0] += p
                totals[name][subset][1] += t
                cells += _cell(p, t)
        print(f"{group:<{width}}{cells}")
    cells = "".join(_cell(*totals[n][s]) for n in columns for s in ("all", "shipped"))
    print(f"{'total':<{width}}{cells}")
    reasons = Counter(r.split(":")[0] for r in skipped.values())
    counts = ", ".join(f"{k} {v}" for k, v in reasons.items())
    print(f"not run: {len(skipped)} files ({counts})")
    if args.json:
        data = {
            "test262": GIT_COMMIT,
            "quickjail": str(where),
            "walls_s": walls,
            "fuel": args.fuel,
            "backstop_s": args.backstop,
            "table": table,
            "totals": totals,
            "not_run": skipped,
            "files": {
                name: {r.file.path: [r.passed, r.message] for r in results}
                for name, results in columns.items()
            },
            "shipped_only": sorted(f.path for f in files if f.shipped_only),
        }
        args.json.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
