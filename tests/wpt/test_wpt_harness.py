"""The WPT runner itself: what it unpacks from the pinned tarball, which files it runs, and that a
file failing to run counts as failing (never as passing, never hanging the suite)."""

from __future__ import annotations

import io
import shutil
import tarfile
import time
from pathlib import Path

import pytest
import wpt_harness
import wpt_source
from wpt_harness import HARNESS, discover, run_file
from wpt_source import WptSourceError

_TOP = "node-v20.19.2/"


def _tarball(tmp_path: Path, members: list[tarfile.TarInfo]) -> Path:
    path = tmp_path / "t.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        for m in members:
            tar.addfile(m, io.BytesIO(b"x" * m.size) if m.isfile() else None)
    return path


def _file(name: str, size: int = 1) -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.size = size
    return m


def test_only_the_wanted_members_of_the_tarball_are_unpacked(tmp_path: Path) -> None:
    tarball = _tarball(
        tmp_path,
        [_file(_TOP + "test/fixtures/wpt/url/a.any.js"), _file(_TOP + "deps/v8/big.cc", 5)],
    )
    target = tmp_path / "tree"
    wpt_source._unpack(((tarball, _TOP[:-1], ("test/fixtures/wpt/",)),), target)
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert files == ["test/fixtures/wpt/url/a.any.js"]


@pytest.mark.parametrize(
    "member",
    [
        "symlink",
        "hardlink",
        "dotdot",
    ],
)
def test_a_link_or_an_escaping_name_refuses_the_whole_tarball(tmp_path: Path, member: str) -> None:
    bad = tarfile.TarInfo(_TOP + "test/fixtures/wpt/url/evil")
    if member == "symlink":
        bad.type, bad.linkname = tarfile.SYMTYPE, "/etc/passwd"
    elif member == "hardlink":
        bad.type, bad.linkname = tarfile.LNKTYPE, _TOP + "test/fixtures/wpt/url/a.any.js"
    else:
        bad = _file(_TOP + "test/fixtures/wpt/../../../evil")
    tarball = _tarball(tmp_path, [_file(_TOP + "test/fixtures/wpt/url/a.any.js"), bad])
    target = tmp_path / "tree"
    with pytest.raises(WptSourceError):
        wpt_source._unpack(((tarball, _TOP[:-1], ("test/fixtures/wpt/",)),), target)
    assert not target.exists(), "a refused tarball left a tree behind"
    assert not (tmp_path / "evil").exists()


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WPT tree of our own files, with the pinned tree's testharness.js."""
    root = tmp_path_factory.mktemp("wpt")
    (root / "resources").mkdir()
    shutil.copy(wpt_source.wpt_root() / "resources" / "testharness.js", root / "resources")
    files = {
        "d/ok.any.js": "// META: script=helper.js\ntest(() => assert_equals(helped(), 1), 'a');",
        "d/helper.js": "'use strict';\nconst one = 1;\nfunction helped() { return one; }",
        "d/throws.any.js": "test(() => {}, 'before');\nthrow new Error('boom');",
        "d/spins.any.js": "test(() => {}, 'before');\nfor (;;) {}",
        "d/never.any.js": "promise_test(() => new Promise(() => {}), 'pending');",
        "d/corrupts.any.js": "test(() => {}, 'a');\n__wpt.results.push(5, {});",
        "d/window.any.js": "// META: global=window\ntest(() => {}, 'w');",
        "d/escapes.any.js": "// META: script=../../etc/passwd\ntest(() => {}, 'e');",
        "d/only.window.js": "test(() => {}, 'w');",
        "d/variants.any.js": "// META: variant=?a\n// META: variant=?b\n"
        "test(() => assert_true(location.search.length > 1), location.search);",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _run(root: Path, name: str) -> dict[str, tuple[str, str]]:
    [file] = [f for f in discover(root, "d")[0] if f.path == f"d/{name}"]
    return run_file(root, file).subtests


def test_a_helper_script_shares_the_global_scope_with_the_test(fake_root: Path) -> None:
    assert _run(fake_root, "ok.any.js") == {"a": ("PASS", "")}


def test_a_file_throwing_at_its_top_level_fails_as_a_whole(fake_root: Path) -> None:
    subtests = _run(fake_root, "throws.any.js")
    assert subtests[HARNESS][0] == "FAIL" and "boom" in subtests[HARNESS][1]


def test_a_file_that_corrupts_the_reporter_fails_as_a_whole(fake_root: Path) -> None:
    subtests = _run(fake_root, "corrupts.any.js")
    assert subtests[HARNESS][0] == "FAIL" and "not the reporter's" in subtests[HARNESS][1]


def test_a_file_that_never_ends_fails_within_its_budget(
    fake_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wpt_harness, "_NORMAL_S", 1)
    monkeypatch.setattr(wpt_harness, "_BACKSTOP_S", 2)
    started = time.monotonic()
    spins = _run(fake_root, "spins.any.js")
    assert spins[HARNESS][0] == "FAIL", spins  # the run's own timeout
    never = _run(fake_root, "never.any.js")
    assert never.get("pending", ("?",))[0] == "TIMEOUT" and never[HARNESS][0] == "TIMEOUT", never
    assert time.monotonic() - started < 60


def test_each_variant_is_a_run_of_its_own(fake_root: Path) -> None:
    runs = [f.id for f in discover(fake_root, "d")[0] if "variants" in f.path]
    assert runs == ["d/variants.any.js?a", "d/variants.any.js?b"]
    [file] = [f for f in discover(fake_root, "d")[0] if f.id == "d/variants.any.js?b"]
    assert run_file(fake_root, file).subtests == {"?b": ("PASS", "")}


def test_files_not_run_are_named_with_the_reason(fake_root: Path) -> None:
    runs, not_run = discover(fake_root, "d")
    assert not {"d/window.any.js", "d/escapes.any.js", "d/only.window.js"} & {f.path for f in runs}
    assert "window" in not_run["d/window.any.js"]
    assert "leaves the WPT tree" in not_run["d/escapes.any.js"]
    assert "window" in not_run["d/only.window.js"]
