"""web-platform-tests of the directories quickjail claims, against the expected failures.

The tests come from the pinned Debian tarball (``wpt_source``), run with WPT's own harness
(``wpt_harness``), one fresh sandbox per file; each directory's test fails on a subtest that
fails unlisted and on a listed one that passes (``wpt_expected``: the list only shrinks). The
files of a directory that are not run (window-only) are pinned with their reasons, so none is
left out in silence.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from wpt_expected import EXPECTED, check, load, stale
from wpt_harness import CLAIMED, discover, run_files
from wpt_source import wpt_root


@pytest.fixture(scope="module")
def root() -> Path:
    return wpt_root()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("directory", CLAIMED)
def test_wpt_directory_fails_exactly_its_expected_subtests(root: Path, directory: str) -> None:
    runs, _ = discover(root, directory)
    assert runs, f"{directory}: no test files in the pinned tree"
    expected = load()[0]
    results = run_files(root, runs, workers=min(4, os.cpu_count() or 1))
    problems = check(results, expected) + stale(root, expected, directory)
    assert not problems, f"{len(problems)} differences from {EXPECTED.name}:\n" + "\n".join(
        problems[:200]
    )


def test_the_wpt_files_not_run_are_the_listed_window_only_ones(root: Path) -> None:
    not_run: dict[str, str] = {}
    for directory in CLAIMED:
        not_run.update(discover(root, directory)[1])
    assert not_run == load()[2]
