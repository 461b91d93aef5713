"""quickjail is one import root: user files named like its floors cannot shadow it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.timeout(120)


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )


def test_user_modules_named_sandbox_runtime_bridge_do_not_shadow_quickjail(
    tmp_path: Path,
) -> None:
    for name in ("sandbox", "runtime", "bridge"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user {name}.py')\n")
    proc = _python(
        """
        import quickjail.integrations, quickjail.runtime, quickjail.bridge
        from quickjail import bridge, sandbox
        print(bridge.run_code_sync("export default 6 * 7").result)
        print(sandbox.run_code_sync("export default 7 * 6").result)
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["42", "42"]


def test_tests_and_benchmarks_are_not_importable_outside_the_checkout(tmp_path: Path) -> None:
    proc = _python(
        """
        import importlib.util, json
        names = ["tests", "benchmarks", "sandbox", "bridge", "runtime", "examples"]
        print(json.dumps({n: importlib.util.find_spec(n) is not None for n in names}))
        """,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == dict.fromkeys(
        ["tests", "benchmarks", "sandbox", "bridge", "runtime", "examples"], False
    )


def test_the_floors_are_reached_through_quickjail_only() -> None:
    import quickjail
    from quickjail import bridge, runtime, sandbox

    for module in (bridge, runtime, sandbox):
        assert module.__name__.startswith("quickjail.")
    assert quickjail.run_code is bridge.run_code
    assert quickjail.run_code_sync is bridge.run_code_sync
