"""The README's runnable snippets and the output each promises (``tests/test_readme.py`` and the
installed-wheel checks run the same ones)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

__all__ = ["FRAGMENT", "Block", "blocks", "expected", "python_snippets", "run_snippet"]

FRAGMENT = "<!-- fragment"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<code>.*?)\n```", re.S)
README = Path(__file__).resolve().parent.parent / "README.md"

Block = tuple[int, str, str, bool]
"""(line, language, code, marked as a fragment)."""


def blocks(readme: Path = README) -> list[Block]:
    """Every fenced block of the README."""
    text = readme.read_text(encoding="utf-8")
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("lang")) + 1
        out.append((line, m["lang"], m["code"], m["before"].startswith(FRAGMENT)))
    return out


def python_snippets(readme: Path = README) -> list[tuple[int, str]]:
    """(line, code) of every Python block not marked as a fragment."""
    return [(ln, code) for ln, lang, code, frag in blocks(readme) if lang == "python" and not frag]


def expected(code: str) -> list[str]:
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


def run_snippet(python: str, line: int, code: str, cwd: Path, *, timeout: float) -> None:
    """Run one snippet with ``python`` in ``cwd`` (no ``PYTHONPATH``: it must import what is
    installed) and check it printed every line it promises.

    Raises:
        AssertionError: it failed, or a promised line is missing (the message names the line).
    """
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    proc = subprocess.run(
        [python, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"README.md:{line} ({python})\n{proc.stderr[-3000:]}"
    printed = [ln.strip() for ln in proc.stdout.splitlines()]
    for want in expected(code):
        assert want in printed, f"README.md:{line}: {want!r} not in {printed}"
