"""The README's programs run as written."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["demo.py", "tools.py", "worker_code.py"])
def test_example_program_runs_and_prints_its_results(name: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=110,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    if name == "demo.py":
        assert "report  -> {'step': 1, 'total': 1}" in proc.stdout
        assert "status  -> success" in proc.stdout
        assert "-> terminated (timeout)" in proc.stdout
        assert "32 MiB cap -> memory" in proc.stdout
    elif name == "worker_code.py":
        href = "https://api.example.com/v1/search?q=weather+in+Paris"
        sha = hashlib.sha256(href.encode()).hexdigest()[:12]
        assert "log    -> retrying after: attempt 2 failed" in proc.stdout
        assert (
            f"result -> {{'href': '{href}', 'outcome': 'ok on attempt 3', "
            f"'aborted': 'TimeoutError', 'sha256': '{sha}', 'uuid': 36}}"
        ) in proc.stdout
    elif name == "tools.py":
        assert "success {'status': 'success', 'result': ['sunny', 'snow'], " in proc.stdout
