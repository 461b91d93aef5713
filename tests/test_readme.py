"""The README's snippets run as written, and print what their comments say."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from release._readme import blocks, python_snippets, run_snippet

ROOT = Path(__file__).resolve().parent.parent
PYTHON = python_snippets()


def test_every_block_that_does_not_run_is_marked_a_fragment() -> None:
    for line, lang, code, fragment in blocks():
        if lang == "bash" and not fragment:
            commands = [c for c in code.splitlines() if c.strip()]
            assert all(c.startswith("make ") for c in commands), f"README.md:{line}"
        assert lang in ("python", "bash", "text"), f"README.md:{line}: {lang!r}"
    assert len(PYTHON) >= 6


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("line", "code"), PYTHON, ids=[f"line-{n}" for n, _ in PYTHON])
def test_readme_snippet_runs_as_written(line: int, code: str, tmp_path: Path) -> None:
    run_snippet(sys.executable, line, code, tmp_path, timeout=170)
