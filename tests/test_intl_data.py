"""The build step that turns the pinned formatjs packages into the guest's Intl table."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from quickjail.sandbox import _intl_data as intl


def test_a_module_becomes_a_function_of_its_imports_returning_its_exports() -> None:
    src = (
        'import D, { a, b as c } from "@x/lib";\nconst v = a + c;\nexport { v, v as default, D };\n'
    )
    out = intl.module_source(src, {"@x/lib": "mod:@x/lib@1.0.0"})
    assert out.startswith('(function (__import, Intl, globalThis, __json) {"use strict"; ')
    assert 'const D = __import("mod:@x/lib@1.0.0").default;' in out
    assert 'const { a, b: c } = __import("mod:@x/lib@1.0.0");' in out
    assert 'return { "v": v, "default": v, "D": D };' in out
    assert "import " not in out.split("{", 1)[1].replace("__import", "")


def test_an_import_of_a_package_that_is_not_pinned_fails_the_build() -> None:
    with pytest.raises(intl.IntlDataError, match="not a pinned dependency"):
        intl.module_source('import { a } from "left-pad";\n', {})
    with pytest.raises(intl.IntlDataError, match="does not handle"):
        intl.module_source("export const a = 1;\n", {})


def test_large_json_tables_become_entries_of_their_own_and_keep_the_line_count() -> None:
    table = "{\n" + ",\n".join(f'\t"k{i}": "v{i}"' for i in range(200)) + "\n};"
    src = (
        f'const small = {{\n\t"a": 1\n}};\nconst big = {table}\nconst code = {{\n\tf() {{}}\n}};\n'
    )
    code, data = intl.split_data(src, "mod:p@1")
    assert code.count("\n") == src.count("\n")
    assert 'const big = __json("mod:p@1#big");' in code
    assert "const small = {" in code and "f() {}" in code
    assert list(data) == ["mod:p@1#big"] and '"k199":"v199"' in data["mod:p@1#big"]


@pytest.mark.parametrize(
    ("base", "value"),
    [
        ({"a": {"b": 1, "c": [1, 2]}, "d": "x"}, {"a": {"b": 2, "c": [1, 2]}, "d": "x", "e": 3}),
        ({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 1}}),  # keys gone
        ({"a": 1}, {"a": {"n": 1}}),
        ({"a": [1]}, {"a": [2, 3]}),
    ],
)
def test_a_regional_diff_applied_to_its_base_gives_the_regional_data(
    base: dict[str, object], value: dict[str, object]
) -> None:
    assert intl.json_merge(base, intl.json_diff(base, value)) == value


def test_registered_tags_are_the_tag_its_default_content_and_their_truncations() -> None:
    content = {"en": ["en-US"], "zh-Hant": ["zh-Hant-TW"]}
    assert intl.registered_tags("en", content) == ["en", "en-US"]
    assert intl.registered_tags("zh-Hant", content) == ["zh-Hant", "zh", "zh-Hant-TW", "zh-TW"]


def test_a_tarball_that_does_not_match_its_pinned_integrity_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "registry"
    tgz = registry / "@x" / "lib" / "-" / "lib-1.0.0.tgz"
    tgz.parent.mkdir(parents=True)
    tgz.write_bytes(b"not the pinned bytes")
    monkeypatch.setenv("QUICKJAIL_NPM_REGISTRY", registry.as_uri())
    good = "sha512-" + base64.b64encode(hashlib.sha512(b"pinned").digest()).decode()
    pkg = intl.NpmPackage("@x/lib", "1.0.0", good)
    with pytest.raises(intl.IntlDataError, match="does not match"):
        intl.fetch_npm(tmp_path / "build", pkg)
    tgz.write_bytes(b"pinned")
    assert intl.fetch_npm(tmp_path / "build", pkg) == b"pinned"
    tgz.unlink()  # verified copies are reused without the registry
    assert intl.fetch_npm(tmp_path / "build", pkg) == b"pinned"


@pytest.mark.parametrize(
    "data",
    [b"", b"a", b"abcabcabcabc", b"x" * 1000, bytes(range(256)) * 3, '{"é": "ü"}'.encode() * 50],
)
def test_packed_entries_inflate_to_themselves(data: bytes) -> None:
    packed = intl.pack(data)
    assert intl.unpack(packed, len(data)) == data


def test_packing_takes_cldr_json_to_well_under_a_third() -> None:
    text = json.dumps(
        {f"key{i}": {"long": f"{{0}} unit{i % 7}s", "short": f"{{0}} u{i % 7}"} for i in range(500)}
    ).encode()
    assert len(intl.pack(text)) < len(text) // 3


def _tarball(names: list[str]) -> intl.Tarball:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in names:
            info = tarfile.TarInfo(f"package/{name}")
            tar.addfile(info, io.BytesIO(b""))
    return intl.Tarball(buf.getvalue())


def test_regional_english_is_every_en_file_of_the_package_its_parents_first() -> None:
    tar = _tarball(
        [
            "locale-data/en-ZW.js",
            "locale-data/en-ZW.d.ts",
            "locale-data/en.js",
            "locale-data/en-150.js",
            "locale-data/en-AU.js",
            "locale-data/en-001.js",
            "locale-data/en-Dsrt.js",
            "locale-data/de-AT.js",
            "polyfill.js",
        ]
    )
    assert intl.en_regions(tar) == ["en-001", "en-150", "en-AU", "en-Dsrt", "en-ZW"]


def test_a_regional_entry_is_a_diff_against_the_parent_closest_to_it() -> None:
    en = {"decimal": ".", "group": ",", "names": {"a": "A", "b": "B"}}
    world = {"decimal": ".", "group": ",", "names": {"a": "A1", "b": "B1"}}
    au = {"decimal": ".", "group": " ", "names": {"a": "A1", "b": "B1"}}
    base, diff = intl.diff_base({"en": en, "en-001": world}, au)
    assert (base, diff) == ("en-001", {"group": " "})
    assert intl.json_merge(world, diff) == au
