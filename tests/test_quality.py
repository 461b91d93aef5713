"""The packages stay ruff-clean and mypy-strict-clean (part of `make test`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = [p for p in ("sandbox", "bridge", "runtime", "quickjail") if (ROOT / p).is_dir()]


@pytest.mark.timeout(300)
def test_packages_pass_ruff() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", *PACKAGES], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.timeout(600)
def test_packages_pass_mypy_strict() -> None:
    if shutil.which("mypy") is None and not (Path(sys.executable).parent / "mypy").exists():
        pytest.fail("mypy is not installed: install the dev extra")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", *PACKAGES], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
