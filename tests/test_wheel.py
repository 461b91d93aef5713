"""The sdist of a clean clone builds, installs and runs; the wheel built from it carries the
guest and the host library, is tagged for its platform, type-checks in a user's code, and works
where no compiler is installed.

As a user's ``pip install quickjail-<v>.tar.gz`` does: the sdist is built from a copy of the
tracked sources, then ``pip wheel`` builds the wheel from it in an isolated environment (pip
fetches hatchling, zig and wasmtime), and a fresh virtual environment installs that wheel. The
other platforms' wheels are built and checked by ``make dist`` / ``make dist-check``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from quickjail.sandbox import _platforms
from release._build import build_sdist, clean_env, copy_tree
from release._check import check_install, check_wheel, floor_files_of_sdist, pythons

pytestmark = pytest.mark.timeout(900)


def _run(
    cmd: list[str], *, cwd: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else clean_env(),
    )
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = copy_tree(tmp_path_factory.mktemp("clone") / "quickjail")
    return build_sdist(source, tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def wheel(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    _run(
        [sys.executable, "-m", "pip", "wheel", str(sdist), "--no-deps", "-w", str(out)],
        cwd=out,
        timeout=840,
    )
    [built] = out.glob("quickjail-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    env_dir = home / "venv"
    _run([sys.executable, "-m", "venv", str(env_dir)], cwd=home, timeout=120)
    python = str(env_dir / "bin" / "python")
    _run([python, "-m", "pip", "install", "--quiet", str(wheel), "mypy"], cwd=home, timeout=840)
    return env_dir


def test_the_sdist_holds_the_floors_as_folders_and_no_build_output(sdist: Path) -> None:
    with tarfile.open(sdist) as tar:
        members = tar.getmembers()
    names = {m.name.split("/", 1)[1] for m in members if "/" in m.name}
    for floor in ("sandbox", "bridge", "runtime"):
        assert f"{floor}/__init__.py" in names
    for needed in ("quickjail/__init__.py", "quickjail/py.typed", "hatch_build.py", "Makefile"):
        assert needed in names
    assert not [m.name for m in members if m.issym() or m.islnk()]
    built = [n for n in names if n.startswith("sandbox/_guest/") and n.endswith((".wasm", ".so"))]
    assert not built


def test_the_wheel_from_the_sdist_is_tagged_for_this_platform_and_holds_every_package_file(
    sdist: Path, wheel: Path
) -> None:
    assert wheel.name.endswith(f"-{_platforms.native().wheel_tag}.whl")
    facts = check_wheel(wheel, floor_files_of_sdist(sdist))
    assert facts["tag"] == _platforms.native().wheel_tag


def test_the_installed_wheel_runs_typescript_without_a_compiler(venv: Path, tmp_path: Path) -> None:
    python = venv / "bin" / "python"
    probe = _run(
        [
            str(python),
            "-c",
            "import importlib.util, json, quickjail; from quickjail import sandbox;"
            " print(json.dumps([sandbox.__file__, importlib.util.find_spec('ziglang') is not None,"
            " quickjail.__version__]))",
        ],
        cwd=tmp_path,
        timeout=60,
    )
    sandbox_file, has_zig, version = json.loads(probe.stdout)
    assert Path(sandbox_file).is_relative_to(venv), "imported from the source tree"
    assert has_zig is False
    assert wheel_version(venv) == version

    data = tmp_path / "data"
    data.mkdir()
    (data / "n.txt").write_text("20", encoding="utf-8")
    (tmp_path / "main.ts").write_text(
        'import { readFile } from "fs";\n'
        'const n: number = Number(await readFile("n.txt", "utf8"));\n'
        "report(n);\n"
        "export default (k: number): number => n * k + 2;\n",
        encoding="utf-8",
    )
    # a fresh cache dir: the installed guest is compiled by wasmtime here, not reused
    env = clean_env(QUICKJAIL_CACHE_DIR=str(tmp_path / "cache"))
    proc = _run(
        [
            str(venv / "bin" / "quickjail"),
            "run",
            "main.ts",
            "--json",
            "--allow-read",
            "data",
            "--arg",
            "2",
        ],
        cwd=tmp_path,
        timeout=120,
        env=env,
    )
    out = json.loads(proc.stdout)
    assert (out["status"], out["result"], out["reports"]) == ("success", 42, [20])


def wheel_version(venv: Path) -> str:
    """The version the installed distribution's metadata gives."""
    return _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('quickjail'))",
        ],
        cwd=venv,
        timeout=60,
    ).stdout.strip()


def test_a_users_code_type_checks_strictly_against_the_installed_wheel(
    venv: Path, tmp_path: Path
) -> None:
    (tmp_path / "user.py").write_text(
        "import quickjail\n"
        "from quickjail import bridge\n\n"
        "def double(n: int) -> int:\n"
        '    result = bridge.run_code_sync("export default 2 * n", globals={"n": n})\n'
        "    reveal_type(result)\n"
        "    return int(result.result)\n\n"
        "reveal_type(quickjail.__version__)\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "mypy", "--strict", "user.py"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout
    assert "import-untyped" not in proc.stdout
    assert 'Revealed type is "quickjail.sandbox._result.CodeResult"' in proc.stdout
    assert (
        'Revealed type is "str"' in proc.stdout or 'Revealed type is "builtins.str"' in proc.stdout
    )


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("minor", ["3.11", "3.12", "3.13"])
def test_the_wheel_passes_the_readme_snippets_in_a_fresh_venv_of_each_supported_python(
    wheel: Path, minor: str, tmp_path: Path
) -> None:
    found = pythons()
    assert minor in found, f"no Python {minor} on this machine (pyenv versions: {found})"
    facts = check_install(wheel, found[minor], tmp_path)
    assert facts["python"].startswith(f"{minor}.")
    assert facts["readme_snippets"] >= 6 and facts["mypy"] == "clean"
