"""Run a musllinux wheel on the musl CPythons of ``release._musl_python``: its dependencies and
the README snippets' extras are downloaded as musllinux wheels by a glibc Python of the same
version (the musl ones are built without ``ssl``), then installed offline into a fresh virtual
environment of the musl Python, where ``check_install`` runs the README's snippets."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from release._build import clean_env
from release._check import SNIPPET_EXTRAS, check_install, pythons
from release._musl_python import (
    PYTHONS,
    UNAVAILABLE,
    MuslPythonError,
    ensure_python,
    musl_platforms,
)

__all__ = ["check_musl_wheel", "download_offline"]

_CHECKER = ("mypy",)
"""What ``check_install`` installs besides the wheel and its extras."""


def download_offline(
    wheel: Path, minor: str, platforms: list[str], dest: Path
) -> tuple[list[str], dict[str, str]]:
    """Download ``wheel``'s dependencies, each snippet extra and the type checker, as wheels
    for ``platforms`` and Python ``minor``, into ``dest``; the extras downloaded, and why each
    other one was not.

    Raises:
        AssertionError: the wheel's own dependencies or the type checker have no such wheels.
    """
    helper = pythons().get(minor)
    python = [str(helper)] if helper else [sys.executable]
    target = ["--only-binary=:all:", "--python-version", minor, "-d", str(dest)]
    target += [arg for platform in platforms for arg in ("--platform", platform)]

    def download(*specs: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*python, "-m", "pip", "download", "--quiet", *target, *specs],
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )

    for spec in (str(wheel), *_CHECKER):
        proc = download(spec)
        assert proc.returncode == 0, f"{spec} for {platforms[0]}: {proc.stderr[-2000:]}"
    got, missing = [], {}
    for extra in SNIPPET_EXTRAS:
        proc = download(f"{wheel}[{extra}]")
        if proc.returncode == 0:
            got.append(extra)
        else:
            lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("ERROR")]
            missing[extra] = f"no {platforms[0]} wheels: {' '.join(lines)[-300:]}"
    return got, missing


def check_musl_wheel(wheel: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Install and run the musllinux ``wheel`` on every supported musl Python this machine has
    or can build; the facts of each run, and one line for each thing not checked."""
    runs: list[dict[str, Any]] = []
    unchecked = [f"{wheel.name} on musl Python {m}: {why}" for m, why in UNAVAILABLE.items()]
    for minor in PYTHONS:
        started = time.monotonic()
        try:
            python = ensure_python(minor)
        except MuslPythonError as e:
            unchecked.append(f"{wheel.name} on musl Python {minor}: {str(e)[:2000]}")
            continue
        ready = time.monotonic() - started
        platforms = musl_platforms(python)
        assert platforms and platforms[0].startswith("musllinux_"), platforms
        with tempfile.TemporaryDirectory() as tmp:
            found = Path(tmp)
            extras, missing = download_offline(wheel, minor, platforms, found)
            facts = check_install(wheel, python, find_links=found, extras=extras)
        unchecked += [
            f"{wheel.name} on musl Python {minor}: README.md:{line} {why}"
            for line, why in facts["left_out"].items()
        ]
        unchecked += [
            f"{wheel.name} on musl Python {minor}: extra [{e}]: {why}" for e, why in missing.items()
        ]
        facts = {"wheel": wheel.name, "musl": platforms[0], **facts}
        facts["python_ready_s"] = round(ready)
        runs.append(facts)
    return runs, unchecked
