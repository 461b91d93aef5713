"""The expected failures of the ``intl402`` run (``expected_failures.json``), and the check.

The file maps each test file that fails today to why (its first failure message, for the
reader), and each file not run to the reason (``t262_harness.SKIPPED_FEATURES``). A file not
listed must pass. The check fails both ways, so the list only shrinks: a file that fails and is
not listed is a regression; a listed one that passes (or no longer exists) must be deleted from
the list (the message says which). Write the file afresh from a run with
``python tests/intl402/t262_expected.py --write`` (after an improvement, or to review the diff).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: tests/, this folder and the repo (for release/)
    import quickjail  # noqa: F401  (first: the quickjail measured is the interpreter's)

    here = Path(__file__).resolve()
    sys.path[:0] = [str(here.parents[1]), str(here.parent)]
    sys.path.append(str(here.parents[2]))

from t262_harness import FileResult, discover, run_files, top_of
from t262_source import GIT_COMMIT, t262_root

__all__ = ["EXPECTED", "check", "load", "write"]

EXPECTED = Path(__file__).with_name("expected_failures.json")
_WHY = 80  # characters of a failure's message kept in the file, for the reader


def load(path: Path = EXPECTED) -> tuple[dict[str, str], dict[str, str]]:
    """The expected failures (path -> why) and the files not run (path -> reason)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("test262") != GIT_COMMIT:
        raise ValueError(f"{path.name} is for test262 {data.get('test262')}, not {GIT_COMMIT}")
    return dict(data["failures"]), dict(data["not_run"])


def check(results: list[FileResult], expected: dict[str, str]) -> list[str]:
    """What differs from ``expected`` for these runs, one line each (empty when none)."""
    problems = []
    for result in results:
        path = result.file.path
        if not result.passed and path not in expected:
            problems.append(f"{path}: fails, not expected: {result.message}")
        elif result.passed and path in expected:
            problems.append(f"{path}: passes now: delete its line in {EXPECTED.name}")
    return problems


def stale(runs: set[str], expected: dict[str, str], folder: str) -> list[str]:
    """Entries of ``expected`` in ``folder`` (a :func:`top_of`) naming none of the ``runs``."""
    return [
        f"{path}: no such file is run any more: delete its line in {EXPECTED.name}"
        for path in sorted(expected)
        if top_of(path) == folder and path not in runs
    ]


def write(results: list[FileResult], not_run: dict[str, str], path: Path = EXPECTED) -> None:
    """Write the expectations that ``results`` (and the files not run) meet exactly."""
    failures = {r.file.path: r.message[:_WHY] for r in results if not r.passed}
    data = {"test262": GIT_COMMIT, "failures": failures, "not_run": not_run}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _main() -> None:
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/intl402/t262_expected.py --write")
    root = t262_root()
    runs, not_run = discover(root)
    results = run_files(root, runs, workers=min(4, os.cpu_count() or 1))
    write(results, not_run)
    print(f"wrote {EXPECTED} ({sum(not r.passed for r in results)} of {len(results)} failing)")


if __name__ == "__main__":
    _main()
