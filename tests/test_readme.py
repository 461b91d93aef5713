"""The README's snippets run as written, and print what their comments say."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FRAGMENT = "<!-- fragment"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<code>.*?)\n```", re.S)


def _blocks() -> list[tuple[int, str, str, bool]]:
    """Every fenced block: (line, language, code, marked as a fragment)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("lang")) + 1
        out.append((line, m["lang"], m["code"], m["before"].startswith(FRAGMENT)))
    return out


def _expected(code: str) -> list[str]:
    """The output a snippet promises: the comment after a print(...) on its line, or on the
    line after it when the print has none."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("print("):
            continue
        if "#" in line:
            out.append(line.split("#", 1)[1].strip())
        elif i + 1 < len(lines) and lines[i + 1].lstrip().startswith("#"):
            out.append(lines[i + 1].lstrip()[1:].strip())
    return out


PYTHON = [
    (line, code) for line, lang, code, fragment in _blocks() if lang == "python" and not fragment
]


def test_every_block_that_does_not_run_is_marked_a_fragment() -> None:
    for line, lang, code, fragment in _blocks():
        if lang == "bash" and not fragment:
            commands = [c for c in code.splitlines() if c.strip()]
            assert all(c.startswith("make ") for c in commands), f"README.md:{line}"
        assert lang in ("python", "bash", "text"), f"README.md:{line}: {lang!r}"
    assert len(PYTHON) >= 6


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("line", "code"), PYTHON, ids=[f"line-{n}" for n, _ in PYTHON])
def test_readme_snippet_runs_as_written(line: int, code: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert proc.returncode == 0, f"README.md:{line}\n{proc.stderr[-3000:]}"
    printed = [ln.strip() for ln in proc.stdout.splitlines()]
    for expected in _expected(code):
        assert expected in printed, f"README.md:{line}: {expected!r} not in {printed}"
