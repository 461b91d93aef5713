"""Check built wheels: structurally for every platform, by installing and running for the ones
this machine can run."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from quickjail.sandbox import _platforms
from release._binary import ALLOWED_IMPORTS, inspect
from release._build import ROOT, clean_env
from release._readme import python_snippets, run_snippet

__all__ = [
    "check_install",
    "check_wheel",
    "floor_files_of_sdist",
    "platform_of",
    "pythons",
    "wasmtime_wheel",
]


_NEEDED = {
    "manylinux": {"libc.so.6"},
    "musllinux": {"libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"},
    "macos": {"/usr/lib/libSystem.B.dylib"},
}
_GLIBC_FLOOR = (2, 17)
SNIPPET_EXTRAS = ("mcp", "connectors", "fetch", "stress", "pydantic-ai", "langchain", "ray")
_SNIPPET_NEEDS = {
    "mcp": re.compile(r"^\s*(from|import) mcp\b", re.M),
    "connectors": re.compile(r"\bconnectors\.(mcp|openapi)\("),
    "fetch": re.compile(r"\bbridge\.Fetch\("),
    "stress": re.compile(r"^\s*(from|import) hypothesis\b", re.M),
    "pydantic-ai": re.compile(r"^\s*(from|import) pydantic_ai\b", re.M),
    "langchain": re.compile(r"^\s*(from|import) langchain", re.M),
    "ray": re.compile(r"\bRayExecutor\b|^\s*(from|import) ray\b", re.M),
}
"""What marks a README snippet as needing an extra (run only where the extra installs)."""
_REQUIRED = (
    "quickjail/__init__.py",
    "quickjail/_version.py",
    "quickjail/py.typed",
    "quickjail/sandbox/__init__.py",
    "quickjail/bridge/__init__.py",
    "quickjail/runtime/__init__.py",
    "quickjail/sandbox/_guest/quickjail.wasm",
    "quickjail/sandbox/_guest/build.json",
    "quickjail/sandbox/_guest/libquickjail_host.so",
)


def platform_of(wheel: Path) -> _platforms.Platform:
    """The platform whose tag the wheel's file name carries."""
    for platform in _platforms.PLATFORMS.values():
        if wheel.name.endswith(f"-{platform.wheel_tag}.whl"):
            return platform
    raise AssertionError(f"{wheel.name}: no platform of ours has its tag")


def floor_files_of_sdist(sdist: Path) -> set[str]:
    """The package files the sdist holds, as paths in a wheel (``quickjail/...``)."""
    out = set()
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            inside = member.name.split("/", 1)[1] if "/" in member.name else ""
            top = inside.split("/", 1)[0]
            if not member.isfile() or top not in ("sandbox", "bridge", "runtime", "quickjail"):
                continue
            out.add(inside if top == "quickjail" else f"quickjail/{inside}")
    return out


def check_wheel(wheel: Path, package_files: set[str] | None = None) -> dict[str, Any]:
    """Inspect one wheel; its facts. ``package_files``: what the sdist holds, all of which the
    wheel must hold too.

    Raises:
        AssertionError: a fact is not what the platform's tag promises.
    """
    platform = platform_of(wheel)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        missing = [n for n in _REQUIRED if n not in names]
        assert not missing, f"{wheel.name} lacks {missing}"
        wasm = zf.read("quickjail/sandbox/_guest/quickjail.wasm")
        info = json.loads(zf.read("quickjail/sandbox/_guest/build.json"))
        host = zf.read("quickjail/sandbox/_guest/libquickjail_host.so")
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL"))
        wheel_meta = zf.read(f"{dist_info}/WHEEL").decode()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"quickjail", dist_info}, f"{wheel.name}: top-level entries {sorted(tops)}"
    if package_files is not None:
        lacking = sorted(package_files - names)
        assert not lacking, f"{wheel.name} lacks files the sdist has: {lacking[:10]}"
    assert "Root-Is-Purelib: false" in wheel_meta
    tags = sorted(re.findall(r"^Tag: (.+)$", wheel_meta, re.M))
    assert tags == sorted(f"{_platforms.ABI_TAG}-{t}" for t in platform.tag.split(".")), (
        f"{wheel.name}: WHEEL says {tags}"
    )
    assert wasm[:4] == b"\0asm"
    assert info["build_id"] == hashlib.sha256(wasm).hexdigest(), "build.json's build ID"
    assert info["host_sha256"] == hashlib.sha256(host).hexdigest(), "build.json's host hash"
    assert info["host_target"] == platform.zig_target, info["host_target"]
    facts = inspect(host)
    assert facts.format == platform.binary, (wheel.name, facts.format)
    assert facts.machine == platform.machine, (wheel.name, facts.machine)
    extra = sorted(facts.imports - ALLOWED_IMPORTS)
    assert not extra, f"{wheel.name}: the host library imports {extra}"
    family = platform.name.split("_")[0]
    assert len(facts.needed) == 1 and set(facts.needed) <= _NEEDED[family], facts.needed
    if family == "manylinux":
        assert facts.glibc is not None and facts.glibc <= _GLIBC_FLOOR, facts.glibc
    if family == "macos":
        floor = tuple(int(x) for x in platform.tag.split("_")[1:3])
        assert facts.macos_min is not None and facts.macos_min <= floor, facts.macos_min
    out: dict[str, Any] = {
        "wheel": wheel.name,
        "bytes": wheel.stat().st_size,
        "tag": platform.wheel_tag,
        "build_id": info["build_id"][:16],
        "host": f"{facts.format} machine={facts.machine:#x} needs {list(facts.needed)}",
        "imports": sorted(facts.imports),
        "glibc": ".".join(map(str, facts.glibc)) if facts.glibc else None,
        "macos_min": ".".join(map(str, facts.macos_min)) if facts.macos_min else None,
    }
    if family in ("manylinux", "musllinux"):
        out["auditwheel"] = _auditwheel(wheel, platform)
    return out


def _auditwheel(wheel: Path, platform: _platforms.Platform) -> str:
    """``auditwheel show``'s verdict: the wheel must be consistent with the tag it carries."""
    with tempfile.TemporaryDirectory() as nowhere:  # judge the wheel, not this machine's libs
        proc = subprocess.run(
            [sys.executable, "-m", "auditwheel", "show", "--ldpaths", nowhere, str(wheel)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0, f"auditwheel show {wheel.name}: {proc.stderr[-2000:]}"
    wanted = platform.tag.split(".")[0]
    assert f'consistent with the following platform tag: "{wanted}"' in text, text
    return f"consistent with {wanted}"


def wasmtime_wheel(platform: _platforms.Platform) -> str:
    """The file name of the pinned wasmtime's wheel for ``platform`` on the package index (a
    platform whose dependency has no wheel cannot be installed, whatever our wheel holds).

    Raises:
        AssertionError: the index has no wheel of the pinned wasmtime for the platform.
    """
    pinned = next(d for d in _dependencies() if d.startswith("wasmtime=="))
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
            + ["--python-version", "3.11", "-d", tmp, pinned]
            + [arg for tag in platform.tag.split(".") for arg in ("--platform", tag)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        got = sorted(p.name for p in Path(tmp).glob("*.whl"))
    assert proc.returncode == 0 and got, f"{pinned} for {platform.name}: {proc.stderr[-1500:]}"
    return got[0]


def _dependencies() -> list[str]:
    """The project's runtime dependencies, as pyproject.toml pins them."""
    import tomllib

    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(data["project"]["dependencies"])


def pythons() -> dict[str, Path]:
    """The supported Pythons this machine has (pyenv's versions), by ``major.minor``."""
    found: dict[str, Path] = {}
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
    for minor in ("3.11", "3.12", "3.13"):
        candidates = sorted(Path(root, "versions").glob(f"{minor}.*")) if root else []
        for candidate in candidates:
            if (candidate / "bin" / "python3").exists():
                found[minor] = candidate / "bin" / "python3"
    return found


_USER_FILE = """\
import quickjail
from quickjail import CodeResult

def double(n: int) -> int:
    result = quickjail.run_code_sync(f"export default {n} * 2")
    reveal_type(result)
    checked: CodeResult = result
    return int(checked.result)

reveal_type(quickjail.__version__)
"""


def check_install(
    wheel: Path,
    python: Path,
    work: Path | None = None,
    *,
    find_links: Path | None = None,
    extras: Sequence[str] = SNIPPET_EXTRAS,
) -> dict[str, Any]:
    """Install ``wheel`` with ``python`` into a fresh virtual environment (its dependencies
    from the package index, or only from the wheels in ``find_links``; nothing built) and run
    every README snippet there, then ``mypy --strict`` on a user's file; the facts. A snippet
    that needs an extra not in ``extras`` is left out, and the facts say so (``left_out``).

    Raises:
        AssertionError: the install, a snippet or the type check failed.
    """
    wheel = wheel.resolve()  # pip runs in the temporary folder
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        home = Path(tmp)
        venv = home / "venv"
        _ok([str(python), "-m", "venv", str(venv)], home)
        vpy = str(venv / "bin" / "python")
        # the extras the README's snippets use; every package a wheel (nothing is compiled)
        spec = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
        # offline: no index, and none of pip's configuration (its find-links among them)
        where = ["--isolated", "--no-index", "--find-links", str(find_links)] if find_links else []
        pip = [vpy, "-m", "pip", "install", "--quiet", *where]
        _ok([*pip, "--only-binary=:all:", spec], home)
        _ok([*pip, "mypy"], home)
        probe = _ok(
            [
                vpy,
                "-c",
                "import importlib.util as u, quickjail, json; print(json.dumps([quickjail"
                ".__version__, quickjail.sandbox.__file__, u.find_spec('ziglang') is None]))",
            ],
            home,
        )
        version, where, no_zig = json.loads(probe.stdout)
        assert Path(where).is_relative_to(venv) and no_zig, (where, no_zig)
        passed, left_out = 0, {}
        for line, code in python_snippets():
            needs = [e for e, uses in _SNIPPET_NEEDS.items() if uses.search(code)]
            if any(e not in extras for e in needs):
                left_out[line] = f"needs the {needs} extra, not installed"
                continue
            run = home / f"snippet-{line}"
            run.mkdir()
            run_snippet(vpy, line, code, run, timeout=300)
            passed += 1
        (home / "user.py").write_text(_USER_FILE, encoding="utf-8")
        typed = subprocess.run(
            [vpy, "-m", "mypy", "--strict", "user.py"],
            cwd=home,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert "import-untyped" not in typed.stdout, typed.stdout
        revealed = re.findall(r'Revealed type is "([^"]+)"', typed.stdout)
        assert typed.returncode == 0 and len(revealed) == 2, typed.stdout
        assert revealed[0].endswith(".CodeResult"), revealed
        assert revealed[1] in ("str", "builtins.str"), revealed
        minor = subprocess.run(
            [vpy, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return {
            "python": minor,
            "version": version,
            "readme_snippets": passed,
            "left_out": left_out,
            "mypy": "clean",
        }


def _ok(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"{cmd[:4]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc
