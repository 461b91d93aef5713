"""The musl CPythons that ``make dist-check`` runs the musllinux wheel on come only from the
pinned tarballs, and what cannot be checked is named, never skipped in silence.

Building CPython takes minutes, so these tests stop short of it: the download checks run
against a mirror in a temporary folder (``file://``), the check's bookkeeping against a
toolchain that is absent.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from quickjail.sandbox import _debian_source
from release import _musl_check, _musl_python
from release._musl_python import MuslPythonError, Source


def _mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes) -> Path:
    pool = tmp_path / "mirror" / "pool" / "main" / "z" / "zlib"
    pool.mkdir(parents=True)
    (pool / "zlib_1.0.orig.tar.gz").write_bytes(data)
    monkeypatch.setenv("QUICKJAIL_DEBIAN_MIRROR", (tmp_path / "mirror").as_uri())
    return tmp_path / "cache"


def test_a_tarball_that_is_not_the_pinned_one_is_refused_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = b"the real tarball"
    cache = _mirror(tmp_path, monkeypatch, b"the real tarbal!")  # same size, other bytes
    source = Source("z/zlib/zlib_1.0.orig.tar.gz", len(pinned), hashlib.sha256(pinned).hexdigest())
    with pytest.raises(MuslPythonError, match="not the pinned file"):
        _musl_python.fetch_source(source, cache)
    assert not list(cache.iterdir()), "a refused download stays in the cache"


def test_a_download_past_the_pinned_size_is_cut_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _mirror(tmp_path, monkeypatch, b"x" * (3 << 20))
    source = Source("z/zlib/zlib_1.0.orig.tar.gz", 1 << 20, hashlib.sha256(b"").hexdigest())
    with pytest.raises(MuslPythonError, match="larger than the pinned"):
        _musl_python.fetch_source(source, cache)
    partial = cache / "zlib_1.0.orig.tar.partial"
    assert partial.stat().st_size <= 2 << 20, "read on past the pinned size"


def test_the_pinned_tarball_is_downloaded_once_and_checked_on_every_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"the real tarball"
    cache = _mirror(tmp_path, monkeypatch, data)
    source = Source("z/zlib/zlib_1.0.orig.tar.gz", len(data), hashlib.sha256(data).hexdigest())
    got = _musl_python.fetch_source(source, cache)
    assert got.read_bytes() == data
    got.write_bytes(b"the fake tarball")  # changed in the cache afterwards
    with pytest.raises(MuslPythonError, match="not the pinned file"):
        _musl_python.fetch_source(source, cache)


def test_a_machine_without_a_debian_mirror_in_apt_fetches_from_debians_cdn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QUICKJAIL_DEBIAN_MIRROR", raising=False)
    ubuntu = tmp_path / "sources.list"
    ubuntu.write_text("deb http://archive.ubuntu.com/ubuntu noble main\n")
    monkeypatch.setattr(_debian_source, "_APT_SOURCES", (ubuntu, tmp_path / "absent.d"))
    assert _debian_source.debian_mirror() == "https://deb.debian.org/debian"


def test_every_musl_python_not_run_is_named_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_toolchain(minor: str) -> Path:
        raise MuslPythonError("no musl toolchain: apt-get install musl-tools")

    monkeypatch.setattr(_musl_check, "ensure_python", no_toolchain)
    wheel = tmp_path / "quickjail-0.1.0-cp311-abi3-musllinux_1_2_x86_64.whl"
    runs, unchecked = _musl_check.check_musl_wheel(wheel)
    assert runs == []
    for minor in ("3.11", "3.12", "3.13"):
        [line] = [u for u in unchecked if f"musl Python {minor}:" in u]
        assert wheel.name in line
    assert any("python3.12 source" in u for u in unchecked), unchecked
    assert sum("apt-get install musl-tools" in u for u in unchecked) == 2, unchecked


def test_the_pinned_musl_pythons_cover_every_supported_version() -> None:
    assert sorted([*_musl_python.PYTHONS, *_musl_python.UNAVAILABLE]) == ["3.11", "3.12", "3.13"]
    for source in _musl_python.PYTHONS.values():
        assert len(source.sha256) == 64 and source.size > 0
