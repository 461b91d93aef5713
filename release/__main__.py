"""``python -m release build [--out DIR] [--platform NAME ...]``, ``python -m release check
[--out DIR]`` and ``python -m release musl-pythons``: ``make dist``, ``make dist-check`` (which
builds the musl Pythons when the cache lacks them) and the musl Pythons alone."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from quickjail.sandbox import _platforms
from release._build import ROOT, build_sdist, build_wheel, copy_tree
from release._check import (
    check_install,
    check_wheel,
    floor_files_of_sdist,
    platform_of,
    pythons,
    wasmtime_wheel,
)
from release._musl_check import check_musl_wheel
from release._musl_python import (
    PYTHONS,
    UNAVAILABLE,
    MuslPythonError,
    ensure_python,
    interpreter_of,
    musl_platforms,
)


def _build(out: Path, names: list[str]) -> None:
    for stale in [*out.glob("quickjail-*.whl"), *out.glob("quickjail-*.tar.gz")]:
        stale.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        source = copy_tree(Path(tmp) / "quickjail")
        sdist = build_sdist(source, out, isolated=False)
        print(f"{sdist.name:70} {sdist.stat().st_size:>10,} bytes", flush=True)
        unpacked = Path(tmp) / "unpacked"
        unpacked.mkdir()
        for name in names:
            wheel = build_wheel(sdist, out, _platforms.by_name(name).name, unpacked=unpacked)
            print(f"{wheel.name:70} {wheel.stat().st_size:>10,} bytes", flush=True)
        print(f"built in {time.monotonic() - started:.0f} s into {out}")


def _check(out: Path) -> None:
    [sdist] = out.glob("quickjail-*.tar.gz")
    wheels = sorted(out.glob("quickjail-*.whl"))
    built = {platform_of(w).name for w in wheels}
    missing = sorted(set(_platforms.PLATFORMS) - built)
    if missing:
        raise SystemExit(f"dist/ has no wheel for {missing}: run make dist")
    package_files = floor_files_of_sdist(sdist)
    for wheel in wheels:
        facts = check_wheel(wheel, package_files)
        facts["wasmtime"] = wasmtime_wheel(platform_of(wheel))
        print(json.dumps(facts), flush=True)
    native = _platforms.native()
    found = pythons()
    absent = sorted({"3.11", "3.12", "3.13"} - set(found))
    if absent:
        raise SystemExit(f"no Python {absent} on this machine (pyenv): cannot check the install")
    for wheel in wheels:
        if platform_of(wheel).name != native.name:
            continue
        for _, python in sorted(found.items()):
            facts = check_install(wheel, python)
            print(json.dumps({"wheel": wheel.name, **facts}), flush=True)
    # the musllinux wheel of this machine's architecture, on musl Pythons built here
    unchecked, ran = [], {native.name}
    for wheel in wheels:
        if platform_of(wheel).name != f"musllinux_{native.name.split('_', 1)[1]}":
            continue
        runs, missed = check_musl_wheel(wheel)
        for facts in runs:
            print(json.dumps(facts), flush=True)
            ran.add(platform_of(wheel).name)
        unchecked += missed
    idle = sorted({platform_of(w).name for w in wheels} - ran)
    unchecked += [f"{name}: checked structurally only, not run here" for name in idle]
    for line in unchecked:
        print(f"NOT CHECKED: {line}", file=sys.stderr, flush=True)


def _musl_pythons() -> None:
    for minor in PYTHONS:
        started = time.monotonic()
        try:
            python = ensure_python(minor)
        except MuslPythonError as e:
            print(f"NOT BUILT: musl Python {minor}: {e}", file=sys.stderr, flush=True)
            continue
        facts = {
            "python": str(python),
            "interpreter": interpreter_of(python.resolve()),
            "platforms": musl_platforms(python)[:3],
            "seconds": round(time.monotonic() - started),
        }
        print(json.dumps(facts), flush=True)
    for minor, why in UNAVAILABLE.items():
        print(f"NOT BUILT: musl Python {minor}: {why}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m release")
    parser.add_argument("command", choices=("build", "check", "musl-pythons"))
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--platform", action="append", choices=sorted(_platforms.PLATFORMS))
    args = parser.parse_args()
    if args.command == "build":
        _build(args.out, args.platform or list(_platforms.PLATFORMS))
    elif args.command == "musl-pythons":
        _musl_pythons()
    else:
        _check(args.out)


if __name__ == "__main__":
    main()
