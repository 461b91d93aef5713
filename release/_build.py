"""Build the sdist from the tree, then every platform's wheel from that sdist."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

__all__ = ["ROOT", "build_sdist", "build_wheel", "clean_env", "copy_tree"]

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without what could import the source tree instead of an install."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "QUICKJAIL_PLATFORM")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def build_sdist(source: Path, out: Path, *, isolated: bool = True) -> Path:
    """``python -m build --sdist`` of ``source`` into ``out``; the sdist's path."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(source)]
    if not isolated:
        cmd.insert(4, "--no-isolation")
    before = set(out.glob("quickjail-*.tar.gz"))
    _run(cmd, cwd=out, env=clean_env(), timeout=900)
    [made] = set(out.glob("quickjail-*.tar.gz")) - before or set(out.glob("quickjail-*.tar.gz"))
    return made


def build_wheel(sdist: Path, out: Path, platform: str, *, unpacked: Path | None = None) -> Path:
    """The wheel for ``platform`` built from ``sdist`` with this interpreter's ``build``
    (no isolation: the guest of an ``unpacked`` folder shared between calls is built once)."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        where = unpacked or Path(tmp)
        tree = where / sdist.name.removesuffix(".tar.gz")
        if not tree.exists():
            with tarfile.open(sdist) as tar:
                tar.extractall(where, filter="data")
        before = set(out.glob("*.whl"))
        _run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(out), str(tree)],
            cwd=where,
            env=clean_env(QUICKJAIL_PLATFORM=platform),
            timeout=900,
        )
    made = set(out.glob("*.whl")) - before
    if len(made) != 1:
        raise RuntimeError(f"building for {platform} made {sorted(made)}")
    return made.pop()


def copy_tree(dest: Path) -> Path:
    """A copy of the tree's tracked sources at ``dest`` (what a clean clone holds)."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if not src.is_file():
            continue  # deleted in the working tree
        target = dest / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return dest
