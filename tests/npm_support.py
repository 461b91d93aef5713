"""Pinned npm packages for tests: ``npm ci`` of a lockfile (integrity hashes) into a cache.

``tests/`` is on ``sys.path`` because its ``conftest.py`` is. Each project directory holds a
``package.json`` and a ``package-lock.json``; the install goes to a directory keyed by their
hash under ``$QUICKJAIL_CACHE_DIR`` (else pytest's cache, else a temporary directory), made in
a staging directory and moved in whole, so a cut-short install is never taken for a done one.
Without Node or npm the test fails, saying what to install: these tests are not optional.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["npm_install", "require_node"]


def require_node(what: str) -> tuple[str, str]:
    """The ``node`` and ``npm`` executables, or fail the test naming ``what`` needs them."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(
            f"these tests need Node.js (20 or later) and npm on PATH, {what}; install them "
            "(they are not optional)"
        )
    return node, npm


def npm_install(
    project: Path,
    name: str,
    config: pytest.Config,
    factory: pytest.TempPathFactory,
    what: str,
) -> Path:
    """The directory where ``npm ci`` installed ``project``'s pinned packages (cached)."""
    _, npm = require_node(what)
    manifest = (project / "package.json").read_bytes()
    lock = (project / "package-lock.json").read_bytes()
    key = hashlib.sha256(manifest + b"\0" + lock).hexdigest()[:16]
    cache = os.environ.get("QUICKJAIL_CACHE_DIR")
    store = getattr(config, "cache", None)  # None under -p no:cacheprovider
    if cache:
        base = Path(cache)
    elif store is not None:
        base = store.mkdir(name)
    else:
        base = factory.mktemp(name)
    target = base / f"{name}-{key}"
    if not (target / "node_modules" / ".quickjail-installed").exists():
        staging = base / f"{name}-{key}.tmp{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        (staging / "package.json").write_bytes(manifest)
        (staging / "package-lock.json").write_bytes(lock)
        done = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        (staging / "node_modules" / ".quickjail-installed").write_text(key)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    return target
