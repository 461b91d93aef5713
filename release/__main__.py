"""``python -m release build [--out DIR] [--platform NAME ...]`` and ``python -m release check
[--out DIR]``: ``make dist`` and ``make dist-check``."""

from __future__ import annotations

import argparse
import json
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


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m release")
    parser.add_argument("command", choices=("build", "check"))
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--platform", action="append", choices=sorted(_platforms.PLATFORMS))
    args = parser.parse_args()
    if args.command == "build":
        _build(args.out, args.platform or list(_platforms.PLATFORMS))
    else:
        _check(args.out)


if __name__ == "__main__":
    main()
