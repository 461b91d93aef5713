"""Our patches to the pinned QuickJS-ng sources: pinned by hash, applied exactly, or refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from quickjail.sandbox import _build

PATCH = """--- a/x.c
+++ b/x.c
@@ -2,3 +2,3 @@
 two
-three
+THREE
 four
"""


def test_every_patch_is_pinned_by_its_hash_and_counts_as_a_build_input() -> None:
    present = sorted(p.name for p in _build.PATCHES_DIR.glob("*.patch"))
    assert present == sorted(_build.PATCHES)
    inputs = set(_build.build_inputs())
    for name, digest in _build.PATCHES.items():
        path = _build.PATCHES_DIR / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        assert path in inputs


def test_a_patch_applies_exactly_where_it_says() -> None:
    hunks = _build._patch_hunks(PATCH)
    text = "one\ntwo\nthree\nfour\nfive\n"
    assert _build.apply_patch(text, hunks["x.c"], "x.c") == "one\ntwo\nTHREE\nfour\nfive\n"


@pytest.mark.parametrize(
    "text",
    ["one\ntwo\nthree!\nfour\n", "two\nthree\nfour\n", "one\ntwo\n"],
)
def test_a_patch_that_does_not_match_the_sources_is_refused(text: str) -> None:
    with pytest.raises(_build.PatchError):
        _build.apply_patch(text, _build._patch_hunks(PATCH)["x.c"], "x.c")


def test_a_changed_or_unpinned_patch_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pristine = _build.PATCHES_DIR
    patches = tmp_path / "_patches"
    shutil.copytree(pristine, patches)
    monkeypatch.setattr(_build, "PATCHES_DIR", patches)
    src = tmp_path / "src"  # never read: the hash check comes first
    name = sorted(_build.PATCHES)[0]
    (patches / name).write_bytes((patches / name).read_bytes() + b" \n")
    with pytest.raises(_build.PatchError, match="sha256"):
        _build.patch_sources(src, tmp_path / "out")
    shutil.copy(pristine / name, patches / name)
    (patches / "9999-extra.patch").write_text(PATCH)
    with pytest.raises(_build.PatchError, match="pins"):
        _build.patch_sources(src, tmp_path / "out")


def test_every_source_is_compiled_from_one_folder_where_a_patched_header_is_the_only_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with the pristine folder on the include path too, a compile cache kept objects built
    # against the pristine header (the patched copy was not among their dependencies)
    patches = tmp_path / "_patches"
    patches.mkdir()
    header_patch = PATCH.replace("x.c", "x.h")
    (patches / "0001-x.patch").write_text(header_patch)
    monkeypatch.setattr(_build, "PATCHES_DIR", patches)
    monkeypatch.setattr(
        _build, "PATCHES", {"0001-x.patch": hashlib.sha256(header_patch.encode()).hexdigest()}
    )
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.h").write_text("one\ntwo\nthree\nfour\nfive\n")
    (src / "x.c").write_text('#include "x.h"\n')
    (src / ".verified").write_text("")
    out = _build.patch_sources(src, tmp_path / "out")
    assert sorted(p.name for p in out.iterdir()) == ["x.c", "x.h"]
    assert (out / "x.h").read_text() == "one\ntwo\nTHREE\nfour\nfive\n"
    assert (out / "x.c").read_text() == '#include "x.h"\n'
    assert (src / "x.h").read_text() == "one\ntwo\nthree\nfour\nfive\n"  # pristine
