"""The shared unpacking of pinned test trees (``tarball_support``): only the wanted members, and
nothing left behind by a refused tarball. (Links and escaping names: tests/wpt/
test_wpt_harness.py, through the WPT tree's use of it.)"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from tarball_support import UnpackError, unpack


def _tarball(tmp_path: Path, members: dict[str, bytes | None]) -> Path:
    path = tmp_path / "t.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        for name, data in members.items():
            m = tarfile.TarInfo(name)
            if data is None:
                m.type, m.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(m)
            else:
                m.size = len(data)
                tar.addfile(m, io.BytesIO(data))
    return path


def _unpacked(target: Path) -> list[str]:
    return sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())


def test_a_prefix_without_a_slash_is_that_one_file(tmp_path: Path) -> None:
    tarball = _tarball(
        tmp_path,
        {
            "top/t/shell.js": b"a",
            "top/t/shell.jsx": b"b",
            "top/t/intl402/x.js": b"c",
            "top/t/intl402x/y.js": b"d",
            "top/t/other/shell.js": b"e",
        },
    )
    target = tmp_path / "tree"
    prefixes = ("t/shell.js", "t/intl402/")
    unpack(((tarball, "top", prefixes),), target, max_members=10, max_bytes=100)
    assert _unpacked(target) == ["t/intl402/x.js", "t/shell.js"]


@pytest.mark.parametrize("problem", ["link", "too many", "too big", "nothing wanted"])
def test_a_refused_tarball_leaves_nothing_behind(tmp_path: Path, problem: str) -> None:
    members: dict[str, bytes | None] = {"top/t/a.js": b"a", "top/t/b.js": b"b"}
    limits = {"max_members": 10, "max_bytes": 100}
    prefixes = ("t/",)
    if problem == "link":
        members["top/t/evil"] = None
    elif problem == "too many":
        limits["max_members"] = 1
    elif problem == "too big":
        limits["max_bytes"] = 1
    else:
        prefixes = ("u/",)
    target = tmp_path / "tree"
    with pytest.raises(UnpackError):
        unpack(((_tarball(tmp_path, members), "top", prefixes),), target, **limits)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.tar.xz"]


def test_a_tree_takes_members_from_several_tarballs(tmp_path: Path) -> None:
    first = _tarball(tmp_path, {"a-1/wpt/url/x.js": b"a", "a-1/wpt/compression/old.js": b"b"})
    second = first.rename(tmp_path / "first.tar.xz")
    later = _tarball(tmp_path, {"b-2/wpt/compression/new.js": b"c"})
    target = tmp_path / "tree"
    parts = ((second, "a-1", ("wpt/url/",)), (later, "b-2", ("wpt/compression/",)))
    unpack(parts, target, max_members=10, max_bytes=100)
    assert _unpacked(target) == ["wpt/compression/new.js", "wpt/url/x.js"]
