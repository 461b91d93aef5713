"""test262's ``intl402`` against the expected failures.

The tests come from the pinned Debian tarball (``t262_source``: SpiderMonkey's import), run with
the import's own harness (``t262_harness``), one fresh sandbox per file; each folder's test fails
on a file that fails unlisted and on a listed one that passes (``t262_expected``: the list only
shrinks). The files not run (features quickjail does not ship) are pinned with their reasons, so
none is left out in silence.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from t262_expected import EXPECTED, check, load, stale
from t262_harness import Test262File, discover, run_files
from t262_source import t262_root

# intl402's folders with files to run (DurationFormat and Temporal are not run: not shipped)
FOLDERS = (
    "intl402",  # the files at its top
    *(
        f"intl402/{name}"
        for name in (
            "Array BigInt Collator Date DateTimeFormat DisplayNames Intl ListFormat Locale Number "
            "NumberFormat PluralRules RelativeTimeFormat Segmenter String TypedArray"
        ).split()
    ),
)


@pytest.fixture(scope="module")
def root() -> Path:
    return t262_root()


@pytest.fixture(scope="module")
def discovered(root: Path) -> tuple[list[Test262File], dict[str, str]]:
    return discover(root)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("folder", FOLDERS)
def test_intl402_folder_fails_exactly_its_expected_files(
    root: Path, discovered: tuple[list[Test262File], dict[str, str]], folder: str
) -> None:
    runs = [f for f in discovered[0] if f.top == folder]
    assert runs, f"{folder}: no test files to run in the pinned import"
    expected = load()[0]
    results = run_files(root, runs, workers=min(4, os.cpu_count() or 1))
    problems = check(results, expected) + stale({f.path for f in runs}, expected, folder)
    assert not problems, f"{len(problems)} differences from {EXPECTED.name}:\n" + "\n".join(
        problems[:200]
    )


def test_the_intl402_files_not_run_are_the_listed_ones(
    discovered: tuple[list[Test262File], dict[str, str]],
) -> None:
    runs, not_run = discovered
    assert {f.top for f in runs} == set(FOLDERS)
    assert not_run == load()[1]
