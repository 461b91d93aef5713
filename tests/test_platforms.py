"""Which platforms get a wheel, and what a build for any other says: one line, at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from quickjail.sandbox import _platforms
from release._build import clean_env, copy_tree

ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = ", ".join(_platforms.PLATFORMS)


def test_this_machine_is_a_supported_platform_and_its_tag_is_cp311_abi3() -> None:
    native = _platforms.native()
    assert native.name in _platforms.PLATFORMS
    assert native.wheel_tag.startswith("cp311-abi3-")


def test_wheels_are_the_six_platforms_of_the_design() -> None:
    tags = {p.tag.split(".")[0] for p in _platforms.PLATFORMS.values()}
    assert tags == {
        "manylinux_2_17_x86_64",
        "manylinux_2_17_aarch64",
        "musllinux_1_2_x86_64",
        "musllinux_1_2_aarch64",
        "macosx_11_0_arm64",
        "macosx_11_0_x86_64",
    }


@pytest.mark.parametrize(
    ("system", "machine"), [("win32", "AMD64"), ("linux", "riscv64"), ("freebsd14", "amd64")]
)
def test_an_unsupported_system_is_refused_with_the_list_of_supported_ones(
    monkeypatch: pytest.MonkeyPatch, system: str, machine: str
) -> None:
    monkeypatch.setattr(_platforms.sys, "platform", system)
    monkeypatch.setattr(_platforms.platform, "machine", lambda: machine)
    with pytest.raises(_platforms.UnsupportedPlatformError) as info:
        _platforms.native()
    assert str(info.value).endswith(f"it builds for: {SUPPORTED}")
    assert "\n" not in str(info.value)


def test_an_unknown_platform_name_is_refused_with_the_list() -> None:
    with pytest.raises(_platforms.UnsupportedPlatformError, match="it builds for: manylinux"):
        _platforms.by_name("win_amd64")


@pytest.mark.timeout(300)
def test_a_wheel_build_for_an_unsupported_platform_fails_at_once_in_one_line(
    tmp_path: Path,
) -> None:
    source = copy_tree(tmp_path / "src")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o", str(tmp_path), "."],
        cwd=source,
        env=clean_env(QUICKJAIL_PLATFORM="win_amd64"),
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode != 0
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "quickjail:" in ln]
    assert lines == [
        f"quickjail: quickjail has no build for 'win_amd64'; it builds for: {SUPPORTED}"
    ], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not (source / "sandbox" / "_guest" / "quickjail.wasm").exists()  # nothing was built
    assert not list(tmp_path.glob("*.whl"))


def test_a_build_without_zig_says_how_to_get_it(tmp_path: Path) -> None:
    code = (
        "import importlib.util, hatch_build\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'ziglang' else real(n, *a)\n"
        "hatch_build.require_zig('0.17.1')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert proc.stderr.strip() == (
        "quickjail: building the guest needs the pinned zig: pip install ziglang==0.17.1"
        " (pip's default isolated build installs it by itself)"
    )


def test_a_wheels_build_json_names_the_guest_it_ships_when_the_host_library_is_reused(
    tmp_path: Path,
) -> None:
    # the host library of a platform is kept while its inputs are unchanged, beside a
    # build.json that also holds the guest's facts of the build that wrote it: a guest rebuilt
    # since (its C changed, the library's did not) used to ship under the old build ID
    from quickjail.sandbox import _build

    name = _platforms.native().name
    first = _build.build_for(name, tmp_path)
    cached = first["_guest/build.json"]
    stale = json.loads(cached.read_text())
    stale["build_id"] = "0" * 64  # as written by a build of another guest
    cached.write_text(json.dumps(stale))
    again = _build.build_for(name, tmp_path)
    shipped = json.loads(again["_guest/build.json"].read_text())
    assert shipped["build_id"] == json.loads(_build.INFO_PATH.read_text())["build_id"]
    assert shipped["host_sha256"] == stale["host_sha256"]  # the library itself was reused
