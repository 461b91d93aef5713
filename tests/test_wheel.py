"""The wheel carries the built guest and the CLI, and works where no compiler is installed.

One wheel build (the build hook compiles the guest when it is stale) and one fresh venv for
the whole module; both take a minute or two, most of it pip fetching build and runtime
dependencies.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.timeout(900)

_NOT_SOURCE = (
    ".git",
    ".venv",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "dist",
    "build",
    "*.egg-info",
    "results*.json",
    "quickjail.wasm",
    "build.json",
    "libquickjail_host.so",
)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without anything that could import the source tree instead."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    env.update(extra)
    return env


def _run(
    cmd: list[str], *, cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else _clean_env(),
    )
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # build from a copy without the built guest: the hook must compile it (and pip builds
    # in-tree, which must not rewrite the working tree under a developer's feet)
    source = tmp_path_factory.mktemp("source") / "quickjail"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    out = tmp_path_factory.mktemp("wheelhouse")
    _run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-w", str(out)],
        cwd=out,
        timeout=840,
    )
    [built] = out.glob("quickjail-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    env_dir = home / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], cwd=home, timeout=120)
    _run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
        cwd=home,
        timeout=840,
    )
    return env_dir


def test_wheel_has_one_top_level_package_with_the_built_guest_and_the_cli(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for path in (
            "quickjail/sandbox/_guest/quickjail.wasm",
            "quickjail/sandbox/_guest/build.json",
            "quickjail/sandbox/_guest/libquickjail_host.so",
            "quickjail/sandbox/__init__.py",
            "quickjail/bridge/__init__.py",
            "quickjail/runtime/__init__.py",
            "quickjail/__init__.py",
            "quickjail/__main__.py",
            "quickjail/_mcp.py",
        ):
            assert path in names, f"{path} missing from {wheel.name}"
        info = json.loads(zf.read("quickjail/sandbox/_guest/build.json"))
        wasm = zf.read("quickjail/sandbox/_guest/quickjail.wasm")
        host = zf.read("quickjail/sandbox/_guest/libquickjail_host.so")
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = zf.read(f"{dist_info}/entry_points.txt").decode()
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    assert {n.split("/")[0] for n in names} == {"quickjail", dist_info}
    assert wasm[:4] == b"\0asm"
    assert info["build_id"] == hashlib.sha256(wasm).hexdigest()
    assert info["host_sha256"] == hashlib.sha256(host).hexdigest()
    assert not wheel.name.endswith("-any.whl")  # the host library is native code
    assert "quickjail = quickjail._cli:main" in entry_points
    assert "quickjail = quickjail.pytest_plugin" in entry_points
    assert "Provides-Extra: mcp" in metadata


def test_installed_wheel_runs_typescript_without_a_compiler(venv: Path, tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    probe = _run(
        [
            str(python),
            "-c",
            "import importlib.util, json; from quickjail import sandbox; print(json.dumps(["
            "sandbox.__file__, importlib.util.find_spec('ziglang') is not None]))",
        ],
        cwd=tmp_path,
        timeout=60,
    )
    sandbox_file, has_zig = json.loads(probe.stdout)
    assert Path(sandbox_file).is_relative_to(venv), "imported from the source tree"
    assert has_zig is False

    data = tmp_path / "data"
    data.mkdir()
    (data / "n.txt").write_text("20", encoding="utf-8")
    (tmp_path / "main.ts").write_text(
        'import { readFile } from "fs";\n'
        'const n: number = Number(await readFile("n.txt", "utf8"));\n'
        "report(n);\n"
        "export default (k: number): number => n * k + 2;\n",
        encoding="utf-8",
    )
    # a fresh cache dir: the installed guest is compiled by wasmtime here, not reused
    env = _clean_env(QUICKJAIL_CACHE_DIR=str(tmp_path / "cache"))
    proc = _run(
        [
            str(venv / "bin" / "quickjail"),
            "run",
            "main.ts",
            "--json",
            "--allow-read",
            "data",
            "--arg",
            "2",
        ],
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    out = json.loads(proc.stdout)
    assert (out["status"], out["result"], out["reports"]) == ("success", 42, [20])
