"""The guest build: its inputs, and the bootstrap JavaScript embedded as a C string literal."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from quickjail.sandbox import _build, _collation_tables, _encoding_tables, _idna_tables

GUEST = _build.GUEST_DIR


def _c_literal_bytes(text: str) -> bytes:
    """The bytes of the C string literal lines ``c_string_literal`` writes (its escapes only)."""
    out = bytearray()
    for line in text.splitlines():
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', line)
        assert m is not None, line
        for esc, plain in re.findall(r"\\([0-7]{3}|.)|([^\\])", m[1]):
            if not esc:
                out += plain.encode("ascii")
            elif len(esc) == 3:
                out.append(int(esc, 8))
            else:
                out += {"n": b"\n", "\\": b"\\", '"': b'"', "?": b"?"}[esc]
    return bytes(out)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        bytes(range(256)),
        b'a "quoted" \\ line\n\n??=trigraph\r\n\tend',
        "naïve ✓ \u2028\n".encode(),
        b"1\x002",
    ],
)
def test_c_string_literal_round_trips_any_bytes(data: bytes) -> None:
    text = _build.c_string_literal(data)
    assert _c_literal_bytes(text) == data
    # printable ASCII only, so the compiler's source charset cannot matter
    assert all(0x20 <= ord(c) < 0x7F or c == "\n" for c in text)


def test_the_built_guest_embeds_bootstrap_js_byte_for_byte() -> None:
    js = (GUEST / "bootstrap.js").read_bytes()
    assert (GUEST / "quickjail.wasm").read_bytes().count(js + b"\0") == 1


def test_the_build_inputs_are_every_guest_source_and_the_build_code() -> None:
    inputs = set(_build.build_inputs())
    for path in GUEST.iterdir():
        if path.suffix in (".c", ".h", ".js"):
            assert path in inputs
    assert Path(_build.__file__).resolve() in inputs
    assert _build.PACKAGE_DIR / "_snapshot.py" in inputs
    # it pins the idna wheel whose UTS #46 data the guest embeds
    assert _build.PACKAGE_DIR / "_idna_tables.py" in inputs
    # ... and the npm package whose Encoding indexes TextDecoder's legacy decoders use
    assert _build.PACKAGE_DIR / "_encoding_tables.py" in inputs


def test_any_change_to_a_guest_source_makes_the_build_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "_guest"
    copy.mkdir()
    for path in _build.guest_inputs():
        shutil.copy(path, copy / path.name)
    monkeypatch.setattr(_build, "GUEST_DIR", copy)
    before = _build.inputs_hash()
    assert before == _build.inputs_hash()
    for path in sorted(copy.iterdir()):
        data = path.read_bytes()
        path.write_bytes(data + b"\n")
        assert _build.inputs_hash() != before, path.name
        path.write_bytes(data)
    (copy / "new.c").write_text("")
    assert _build.inputs_hash() != before


def test_the_guest_folder_holds_only_our_own_sources() -> None:
    # QuickJS comes from the pinned sdist at build time, never from the package
    third_party = {*_build.QUICKJS_SOURCES, "quickjs.h", "cutils.h", "libregexp.h", "dtoa.h"}
    for path in GUEST.iterdir():
        assert path.name not in third_party
        if path.suffix in (".c", ".h", ".js"):
            assert "Bellard" not in path.read_text(), path.name


def test_the_guest_records_the_pinned_idna_data_it_embeds() -> None:
    # the UTS #46 table comes from the pinned idna wheel; the Bidi classes and viramas from the
    # build Python's unicodedata, whose Unicode version build.json names
    info = json.loads(_build.INFO_PATH.read_text())
    assert info["idna"] == _idna_tables.IDNA_VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["idna_bidi_unicode"])


def test_the_guest_records_the_pinned_encoding_tables_it_embeds() -> None:
    info = json.loads(_build.INFO_PATH.read_text())
    tables = _encoding_tables
    assert info["encoding_tables"] == f"{tables.PACKAGE}@{tables.PACKAGE_VERSION}"


def test_the_guest_records_the_pinned_collation_table_it_embeds() -> None:
    # the DUCET of Intl.Collator comes from the pinned pyuca wheel (_collation_tables.py)
    assert _build.PACKAGE_DIR / "_collation_tables.py" in set(_build.build_inputs())
    info = json.loads(_build.INFO_PATH.read_text())
    assert info["uca"] == _collation_tables.UCA_VERSION


def _allkeys_wheel(tmp_path: Path, lines: list[str]) -> Path:
    wheel = tmp_path / "fake.whl"
    text = f"@version {_collation_tables.UCA_VERSION}\n" + "\n".join(lines) + "\n"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"pyuca/allkeys-{_collation_tables.UCA_VERSION}.txt", text)
    return wheel


def _define(text: str, name: str) -> int:
    m = re.search(rf"#define {name} (\d+)", text)
    assert m is not None
    return int(m[1])


DIGITS = [f"{0x30 + d:04X} ; [.{0x100 + d:04X}.0020.0002]" for d in range(10)]
# a letter of each script a locale reorders: Latin, Cyrillic, Arabic, Devanagari, Hangul, kana
LETTERS = [
    f"{cp:04X} ; [.{0x200 + 0x10 * i:04X}.0020.0002]"
    for i, cp in enumerate([0x61, 0x434, 0x628, 0x915, 0x1100, 0x3042])
]
# a table the generator accepts: whitespace, punctuation, the first symbol, digits, letters
BASE = [
    "0020 ; [*0010.0020.0002]",  # space: variable
    "002E ; [*0011.0020.0002]",  # full stop: variable punctuation
    "0060 ; [*0012.0020.0002]",  # grave accent: the first symbol
    *DIGITS,
    *LETTERS,
]


def test_the_collation_tables_name_the_digits_and_the_last_punctuation(tmp_path: Path) -> None:
    lines = [
        *BASE,
        "00E6 ; [.0200.0020.0004][.0000.0110.0004][.0201.0020.0004]",
        "006C 00B7 ; [.0202.0020.0002]",
    ]
    text = _collation_tables.collation_include(_allkeys_wheel(tmp_path, lines))
    assert _define(text, "COLL_DIGIT_ZERO") == 0x100
    assert _define(text, "COLL_VARIABLE_TOP") == 0x11


def _with(lines: list[str]) -> list[str]:
    """The BASE table with ``lines`` in place of the same code points."""
    keys = {line.split(";")[0].strip() for line in lines}
    return [x for x in BASE if x.split(";")[0].strip() not in keys] + lines


@pytest.mark.parametrize(
    "bad",
    [
        "0031 ; [.0105.0020.0002]",  # the digits' primaries not consecutive
        "0062 ; [.10000.0020.0002]",  # not four hex digits: no element parses
        "0061 0062 0063 0064 ; [.0100.0020.0002]",  # a contraction of four
        "0062 ; [.0280.0020.0002]",  # Latin's letters reach into Cyrillic's range
    ],
)
def test_a_collation_table_not_as_expected_is_refused(tmp_path: Path, bad: str) -> None:
    _collation_tables.collation_include(_allkeys_wheel(tmp_path, _with([])))
    with pytest.raises(_collation_tables.CollationDataError):
        _collation_tables.collation_include(_allkeys_wheel(tmp_path, _with([bad])))
