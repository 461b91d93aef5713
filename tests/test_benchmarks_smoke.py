"""`python -m benchmarks --dry-run` runs every measure once (no timing): a smoke test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(300)
def test_every_benchmark_runs_once_in_a_dry_run() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--dry-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "0 quickjail failure(s)" in proc.stdout + proc.stderr
