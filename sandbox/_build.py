"""Build the guest: QuickJS-ng plus our shim → wasm32-wasi → snapshot baked into the module.

Run as ``python -m quickjail.sandbox._build`` (the build hook calls the same function). The steps:

1. fetch the pinned ``quickjs-ng`` sdist from the package registry and check its sha256;
2. write each ``_guest/<name>.js`` as a C string literal, ``<name>.js.inc`` in the build folder
   (``init.c`` includes ``bootstrap.js.inc``), then compile the ``upstream-quickjs/`` sources
   and every ``_guest/*.c`` with the pinned ``zig cc`` for wasm32-wasi (reactor);
3. instantiate the module once, call ``_initialize`` and ``qj_init`` and rewrite the module so
   its data segments are the initialized memory (see :mod:`sandbox._snapshot`);
4. write ``_guest/quickjail.wasm`` and ``_guest/build.json`` (the build ID is the sha256 of
   the final wasm).

Nothing third-party is committed: the sources live in a build folder outside the package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path

QUICKJS_NG_VERSION = "0.17.0.2"
QUICKJS_NG_SDIST = f"quickjs_ng-{QUICKJS_NG_VERSION}.tar.gz"
QUICKJS_NG_SHA256 = "43d2e48272208721a7aaea8e3f02d4b9318f12ef20cc4f5421b59d9a470706ef"
ZIG_VERSION = "0.17.1"

QUICKJS_SOURCES = ("quickjs.c", "libregexp.c", "libunicode.c", "dtoa.c")
CFLAGS = (
    "-target",
    "wasm32-wasi",
    "-mexec-model=reactor",
    "-O2",
    "-D_GNU_SOURCE",
    "-fno-strict-aliasing",
)
# The shadow stack (linear memory) holds C locals whose address is taken; QuickJS's own
# stack limit is set per run and must stay below this.
STACK_SIZE = 1280 * 1024
LDFLAGS = (
    "-s",
    f"-Wl,-z,stack-size={STACK_SIZE}",
    "-Wl,--export-dynamic",
    "-Wl,--no-entry",
)

PACKAGE_DIR = Path(__file__).resolve().parent
GUEST_DIR = PACKAGE_DIR / "_guest"
WASM_PATH = GUEST_DIR / "quickjail.wasm"
INFO_PATH = GUEST_DIR / "build.json"


class BuildError(RuntimeError):
    """The guest could not be built; the message says which step failed."""


def _log(msg: str) -> None:
    print(f"[quickjail build] {msg}", file=sys.stderr, flush=True)


def _build_root() -> Path:
    env = os.environ.get("QUICKJAIL_BUILD_DIR")
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / "quickjail-build"


def fetch_sources(build_root: Path) -> Path:
    """Download the pinned sdist (or reuse a verified copy) and unpack ``upstream-quickjs``."""
    build_root.mkdir(parents=True, exist_ok=True)
    sdist = build_root / QUICKJS_NG_SDIST
    if not sdist.exists() or _sha256(sdist) != QUICKJS_NG_SHA256:
        _log(f"downloading quickjs-ng=={QUICKJS_NG_VERSION} sdist")
        with tempfile.TemporaryDirectory(dir=build_root) as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                "--dest",
                tmp,
                f"quickjs-ng=={QUICKJS_NG_VERSION}",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            got = Path(tmp) / QUICKJS_NG_SDIST
            if proc.returncode != 0 or not got.exists():
                raise BuildError(f"pip download failed:\n{proc.stdout}\n{proc.stderr}")
            os.replace(got, sdist)
    digest = _sha256(sdist)
    if digest != QUICKJS_NG_SHA256:
        raise BuildError(f"{sdist.name}: sha256 {digest} does not match the pinned hash")
    src_dir = build_root / f"quickjs-ng-{QUICKJS_NG_VERSION}"
    marker = src_dir / ".verified"
    if not marker.exists():
        with tarfile.open(sdist) as tar:
            prefix = f"quickjs_ng-{QUICKJS_NG_VERSION}/upstream-quickjs/"
            members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
            src_dir.mkdir(parents=True, exist_ok=True)
            for m in members:
                name = m.name[len(prefix) :]
                if "/" in name or name.startswith("."):
                    continue
                data = tar.extractfile(m)
                assert data is not None
                (src_dir / name).write_bytes(data.read())
        marker.write_text(QUICKJS_NG_SHA256)
    return src_dir


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _zig(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "ziglang", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"zig failed: {' '.join(args[:3])} …\n{proc.stderr[-4000:]}")


def guest_inputs() -> list[Path]:
    """Our own guest sources: every ``_guest/*.c``, ``*.h`` and ``*.js``, sorted."""
    return sorted(p for pattern in ("*.c", "*.h", "*.js") for p in GUEST_DIR.glob(pattern))


def c_string_literal(data: bytes) -> str:
    """``data`` as the lines of one C string literal, a line of ``data`` per line of C.

    Printable ASCII stays as it is except ``\\``, ``"`` and ``?`` (no trigraphs), which are
    escaped; every other byte is a three-digit octal escape, which cannot run into the next
    character the way a hex escape can.
    """
    if not data:
        return '""\n'
    out = []
    for line in data.splitlines(keepends=True):
        chars = []
        for b in line:
            if b == 0x0A:
                chars.append("\\n")
            elif b in b'\\"?':
                chars.append("\\" + chr(b))
            elif 0x20 <= b < 0x7F:
                chars.append(chr(b))
            else:
                chars.append(f"\\{b:03o}")
        out.append('"' + "".join(chars) + '"\n')
    return "".join(out)


def generate_includes(gen_dir: Path) -> None:
    """Write each ``_guest/<name>.js`` as ``gen_dir/<name>.js.inc``: a C string literal."""
    gen_dir.mkdir(parents=True, exist_ok=True)
    for js in sorted(GUEST_DIR.glob("*.js")):
        text = (
            f"/* generated by sandbox/_build.py from _guest/{js.name}: do not edit */\n"
            + c_string_literal(js.read_bytes())
        )
        target = gen_dir / f"{js.name}.inc"
        if not target.exists() or target.read_text() != text:
            target.write_text(text)


def compile_guest(src_dir: Path, out: Path) -> None:
    """Compile and link the raw (not yet snapshotted) guest module."""
    obj_dir = out.parent / "obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    gen_dir = out.parent / "gen"
    generate_includes(gen_dir)
    # a guest file's object cannot overwrite a QuickJS one, whatever its name
    units = [(src_dir / s, obj_dir / f"{Path(s).stem}.o") for s in QUICKJS_SOURCES]
    units += [(c, obj_dir / f"guest-{c.stem}.o") for c in sorted(GUEST_DIR.glob("*.c"))]
    _log(f"compiling {len(units)} C files with zig cc for wasm32-wasi (about 15 s of CPU)")
    procs = []
    for unit, obj in units:
        cmd = [
            sys.executable,
            "-m",
            "ziglang",
            "cc",
            *CFLAGS,
            f"-I{src_dir}",
            f"-I{GUEST_DIR}",
            f"-I{gen_dir}",
            "-c",
            str(unit),
            "-o",
            str(obj),
        ]
        procs.append((unit, subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)))
    for unit, proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise BuildError(f"compiling {unit.name} failed:\n{err[-4000:]}")
    objs = [str(obj) for _, obj in units]
    _log("linking (the first link in a fresh zig cache also builds wasi-libc: up to a minute)")
    _zig("cc", *CFLAGS, *LDFLAGS, *objs, "-o", str(out), cwd=out.parent)


def build(force: bool = False) -> Path:
    """Build the guest into the package if it is missing or stale; return the wasm path."""
    _snapshot = _load_sibling("_snapshot")

    shim_hash = inputs_hash()
    if not force and WASM_PATH.exists() and INFO_PATH.exists():
        info = json.loads(INFO_PATH.read_text())
        if info.get("inputs") == shim_hash and _sha256(WASM_PATH) == info.get("build_id"):
            return WASM_PATH
    root = _build_root()
    _log(f"building the guest in {root}")
    src_dir = fetch_sources(root)
    raw = root / "quickjail.raw.wasm"
    compile_guest(src_dir, raw)
    _log("baking the initialized runtime into the module")
    final = _snapshot.snapshot(raw.read_bytes())
    tmp = WASM_PATH.with_suffix(".tmp")
    tmp.write_bytes(final)
    os.replace(tmp, WASM_PATH)
    build_id = hashlib.sha256(final).hexdigest()
    INFO_PATH.write_text(
        json.dumps(
            {
                "build_id": build_id,
                "inputs": shim_hash,
                "quickjs_ng": QUICKJS_NG_VERSION,
                "zig": ZIG_VERSION,
                "stack_size": STACK_SIZE,
                "size": len(final),
            },
            indent=2,
        )
        + "\n"
    )
    _log(f"guest ready: {len(final)} bytes, build id {build_id[:16]}")
    return WASM_PATH


def build_inputs() -> list[Path]:
    """What the guest is built from besides the pinned sdist and zig (which this file pins):
    our guest sources, this file and the snapshot code."""
    return [*guest_inputs(), Path(__file__).resolve(), PACKAGE_DIR / "_snapshot.py"]


def inputs_hash() -> str:
    """The hash of :func:`build_inputs`; each file counts with its name, so a rename counts."""
    h = hashlib.sha256()
    for path in build_inputs():
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _load_sibling(name: str) -> types.ModuleType:
    """Import a module next to this file without importing the package (build envs lack deps)."""
    path = PACKAGE_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_quickjail_build_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Command line entry: ``python -m quickjail.sandbox._build [--force]``."""
    build(force="--force" in sys.argv[1:])


if __name__ == "__main__":
    main()
