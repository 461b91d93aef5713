"""Build the fuzzing targets (see :mod:`fuzz`) into ``.build/fuzz``.

Reuses the guest build's own steps (:mod:`quickjail.sandbox._build`): the pinned QuickJS-ng
sdist, our patches and the generated includes, so the fuzzed C is the C the wheel ships.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from quickjail.sandbox import _build

__all__ = ["BUILD_DIR", "FuzzBuildError", "build_all", "build_harness", "build_heap"]

ROOT = Path(__file__).resolve().parent.parent
NATIVE = Path(__file__).resolve().parent / "native"
BUILD_DIR = ROOT / ".build" / "fuzz"
GUEST = _build.GUEST_DIR

SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all")
CFLAGS = (
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-D_GNU_SOURCE",
    "-fno-strict-aliasing",
    "-Wno-attributes",
    *SANITIZE,
)
# the guest files read the monotonic clock through the harness's virtual one
GUEST_DEFINES = ("-Dclock_gettime=qjf_clock_gettime",)


class FuzzBuildError(RuntimeError):
    """A fuzzing target could not be built; the message holds the compiler's output."""


def _run(cmd: Sequence[str]) -> None:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if proc.returncode != 0:
        raise FuzzBuildError(f"{' '.join(cmd)}\n{proc.stdout}{proc.stderr[-6000:]}")


def _compiler() -> str:
    cc = shutil.which("gcc")
    if cc is None:
        raise FuzzBuildError("gcc is needed for the ASan build (zig ships no ASan runtime)")
    return cc


def _digest(paths: Sequence[Path], *extra: str) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    for e in extra:
        h.update(e.encode())
    return h.hexdigest()


def _sources(out: Path) -> tuple[Path, Path, list[Path]]:
    """The patched QuickJS sources and the generated includes, in ``out``; the third-party
    units (QuickJS's, and zlib's for web_compress.c) are listed together."""
    src = _build.fetch_sources(_build._build_root())
    patched = _build.patch_sources(src, out / "patched")
    gen = out / "gen"
    _build.generate_includes(gen)
    zlib = _build.fetch_zlib(_build._build_root())
    quickjs = [patched / name for name in _build.QUICKJS_SOURCES]
    quickjs += [zlib / name for name in _build.ZLIB_UNITS]
    return patched, gen, quickjs


def build_harness(out: Path = BUILD_DIR) -> Path:
    """Build ``qjfuzz`` (gcc, ASan + UBSan) unless its inputs are unchanged; return its path."""
    cc = _compiler()
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "qjfuzz"
    patched, gen, quickjs = _sources(out)
    guest = [c for c in sorted(GUEST.glob("*.c")) if c.name != "heap.c"]
    ours = [NATIVE / "harness.c", NATIVE / "heap_system.c"]
    zlib = quickjs[-1].parent
    qjs_headers = sorted([*patched.glob("*.h"), *zlib.glob("*.h")])
    headers = [*GUEST.glob("*.h"), *gen.iterdir(), *qjs_headers, *NATIVE.rglob("*.h")]
    obj = out / "obj"
    obj.mkdir(exist_ok=True)
    include = [f"-I{patched}", f"-I{GUEST}", f"-I{gen}", f"-I{NATIVE}", f"-I{zlib}", "-DZ_SOLO"]
    units = [(c, ()) for c in quickjs] + [(c, GUEST_DEFINES) for c in guest + ours]
    procs: list[tuple[list[str], subprocess.Popen[str], Path, str]] = []
    objs = []
    for unit, defines in units:
        o = obj / f"{unit.parent.name}-{unit.stem}.o"
        objs.append(str(o))
        # each object is rebuilt only when its source, a header or the flags changed
        seen = qjs_headers if unit in quickjs else headers
        digest = unit_digest(unit, seen, (*CFLAGS, *defines))
        if o.exists() and _stamp(o).exists() and _stamp(o).read_text() == digest:
            continue
        cmd = [cc, *CFLAGS, *defines, *include, "-c", str(unit), "-o", str(o)]
        procs.append((cmd, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True), o, digest))
        if len(procs) >= (os.cpu_count() or 2):
            _wait(procs.pop(0))
    for p in procs:
        _wait(p)
    if procs or not exe.exists():
        _run([cc, *SANITIZE, *objs, "-lm", "-o", str(exe)])
    return exe


def unit_digest(unit: Path, headers: Sequence[Path], flags: Sequence[str]) -> str:
    """What an object of ``unit`` depends on: its source, every header it may see, the flags."""
    return _digest([unit, *headers], *flags)


def _stamp(obj: Path) -> Path:
    return obj.with_suffix(".inputs")


def _wait(item: tuple[list[str], subprocess.Popen[str], Path, str]) -> None:
    cmd, proc, obj, digest = item
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise FuzzBuildError(f"{' '.join(cmd)}\n{err[-6000:]}")
    _stamp(obj).write_text(digest)


def build_heap(out: Path = BUILD_DIR) -> Path:
    """Build ``heapfuzz`` (pinned zig, x86-linux-musl, UBSan) unless unchanged; return it."""
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "heapfuzz"
    patched, _, _ = _sources(out)
    src = NATIVE / "heap_fuzz.c"
    flags = (
        "-target",
        "x86-linux-musl",
        "-O1",
        "-g",
        "-fsanitize=undefined",
        "-fno-sanitize-recover=all",
        "-static",
        "-Wno-comment",
        "-Wno-unknown-attributes",
    )
    inputs = [src, GUEST / "heap.c", GUEST / "guest.h", GUEST / "quickjail.h"]
    stamp = out / "heapfuzz.inputs"
    digest = _digest(inputs, *flags)
    if exe.exists() and stamp.exists() and stamp.read_text() == digest:
        return exe
    cmd = [sys.executable, "-m", "ziglang", "cc", *flags, f"-I{patched}", f"-I{GUEST}"]
    _run([*cmd, str(src), "-o", str(exe)])
    stamp.write_text(digest)
    return exe


def build_all(out: Path = BUILD_DIR) -> tuple[Path, Path]:
    """Both targets: (qjfuzz, heapfuzz)."""
    return build_harness(out), build_heap(out)


if __name__ == "__main__":
    for path in build_all():
        print(path)
