"""The expected failures of the WPT runs (``expected_failures.json``), and the check against them.

The file maps each run (a test file's path under the WPT root, plus its ``?variant``) that has
failing subtests to the names of the subtests that fail today, or to ``"*"`` when every subtest
of it fails (a file whose API quickjail lacks). ``(harness)`` in a list is the file itself
failing to run to an OK harness status; ``reasons`` says why, for the reader. A run not in the
file must pass every subtest.

The check fails both ways, so the list only shrinks: a subtest that fails and is not listed is a
regression; a listed one that passes (or no longer exists) must be deleted from the list (the
message says which line). Write the file afresh from a run with
``python tests/wpt/wpt_expected.py --write`` (after an improvement, or to review the diff).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repo (release/), tests/ and this folder
    here = Path(__file__).resolve()
    sys.path[:0] = [str(here.parents[2]), str(here.parents[1]), str(here.parent)]

from wpt_harness import CLAIMED, HARNESS, FileResult, discover, run_files
from wpt_source import wpt_root

__all__ = ["ALL", "EXPECTED", "check", "load", "write"]

EXPECTED = Path(__file__).with_name("expected_failures.json")
ALL = "*"


def load(
    path: Path = EXPECTED,
) -> tuple[dict[str, list[str] | str], dict[str, str], dict[str, str]]:
    """The expected failures per run id, the recorded reasons of files failing to run, and the
    files not run with the reason."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return dict(data["failures"]), dict(data["reasons"]), dict(data["not_run"])


def check(results: list[FileResult], expected: dict[str, list[str] | str]) -> list[str]:
    """What differs from ``expected`` for these runs, one line each (empty when none)."""
    problems = []
    for result in results:
        run_id = result.file.id
        failing = result.failing
        listed = expected.get(run_id, [])
        if listed == ALL:
            passing = sorted(n for n in result.subtests if n not in failing)
            if passing:
                problems.append(
                    f"{run_id}: {len(passing)} subtests pass now (e.g. {passing[0]!r}): replace "
                    f'its "*" in {EXPECTED.name} by the names still failing ({len(failing)})'
                )
            continue
        for name in sorted(set(failing) - set(listed)):
            problems.append(f"{run_id}: {name!r} fails, not expected: {failing[name]}")
        for name in sorted(set(listed) - set(failing)):
            state = "passes now" if name in result.subtests else "no longer exists"
            problems.append(f"{run_id}: {name!r} {state}: delete its line in {EXPECTED.name}")
    return problems


def stale(root: Path, expected: dict[str, list[str] | str], directory: str) -> list[str]:
    """Entries of ``expected`` under ``directory`` naming a run that does not exist."""
    runs = {f.id for f in discover(root, directory)[0]}
    return [
        f"{run_id}: no such run any more: delete its entry in {EXPECTED.name}"
        for run_id in sorted(expected)
        if run_id.startswith(directory + "/") and run_id not in runs
    ]


def write(results: list[FileResult], not_run: dict[str, str], path: Path = EXPECTED) -> None:
    """Write the expectations that ``results`` (and the files not run) meet exactly."""
    failures: dict[str, list[str] | str] = {}
    reasons: dict[str, str] = {}
    for result in sorted(results, key=lambda r: r.file.id):
        failing = result.failing
        if not failing:
            continue
        every = len(failing) == len(result.subtests)
        failures[result.file.id] = ALL if every else sorted(failing)
        if HARNESS in failing:
            reasons[result.file.id] = failing[HARNESS]
    data = {"failures": failures, "reasons": reasons, "not_run": not_run}
    text = json.dumps(data, indent=1, sort_keys=True)
    path.write_text(text + "\n", encoding="utf-8")


def _main() -> None:
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/wpt/wpt_expected.py --write")
    root = wpt_root()
    results, not_run = [], {}
    for directory in CLAIMED:
        runs, skipped = discover(root, directory)
        results += run_files(root, runs)
        not_run.update(skipped)
    write(results, not_run)
    print(f"wrote {EXPECTED} ({sum(bool(r.failing) for r in results)} runs with failures)")


if __name__ == "__main__":
    _main()
