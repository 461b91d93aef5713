"""Build step: the UTS #46 (IDNA) data the guest's URL host parser needs, as one compact JSON text.

The mapping table (each code point valid, mapped to a string, deviation, ignored or disallowed)
and the joining types of RFC 5892's CONTEXTJ rules come from the pinned PyPI ``idna`` wheel
(``idna/uts46data.py`` and ``idna/idnadata.py``: the Unicode data of :data:`IDNA_VERSION`'s
stated Unicode version), fetched by ``pip download`` and checked by sha256 as the QuickJS-ng
sdist is (``sandbox/_build.py``). The files are read as data (``ast``), never imported. The
Bidi classes (RFC 5893's Bidi rule) and the viramas (canonical combining class 9) are not in
that package; they come from the build Python's ``unicodedata`` (its ``unidata_version`` is
recorded in the table and in ``build.json``).

The text is compact (about 74 KB): ranges as start deltas (:func:`varints`), one status
letter per range, mapped strings deduplicated, concatenated and named by index.
``_guest/web_idna.c`` holds it as a C string and hands it to ``web/idna.js`` on the first
non-ASCII host of a run, so a run that never parses one touches none of it. Loaded by path
from ``_build.py`` (no package imports).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from pathlib import Path

__all__ = ["IDNA_SHA256", "IDNA_VERSION", "IDNA_WHEEL", "fetch_idna", "fetch_wheel", "idna_table"]

IDNA_VERSION = "3.20"
IDNA_WHEEL = f"idna-{IDNA_VERSION}-py3-none-any.whl"
IDNA_SHA256 = "ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c"

# Bidi classes the Bidi rule names, one letter each; every other class is "x"
BIDI_LETTERS = {
    "L": "L",
    "R": "R",
    "AL": "A",
    "AN": "N",
    "EN": "E",
    "ES": "S",
    "CS": "C",
    "ET": "T",
    "ON": "O",
    "BN": "B",
    "NSM": "M",
}


class IdnaDataError(RuntimeError):
    """The pinned idna wheel could not be fetched, did not match its hash, or is not as expected."""


def fetch_idna(build_root: Path) -> Path:
    """The pinned idna wheel in ``build_root`` (downloaded when missing), checked by sha256."""
    return fetch_wheel(build_root, f"idna=={IDNA_VERSION}", IDNA_WHEEL, IDNA_SHA256)


def fetch_wheel(build_root: Path, requirement: str, wheel_name: str, sha256: str) -> Path:
    """A pinned wheel (``requirement`` as ``name==version``) in ``build_root``, downloaded with
    ``pip download`` when missing and checked by sha256 every time (the collation data's
    ``pyuca`` wheel comes through here too: see ``sandbox/_collation_tables.py``)."""
    build_root.mkdir(parents=True, exist_ok=True)
    wheel = build_root / wheel_name
    if not wheel.exists() or _sha256(wheel) != sha256:
        with tempfile.TemporaryDirectory(dir=build_root) as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--dest",
                tmp,
                requirement,
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            got = Path(tmp) / wheel_name
            if proc.returncode != 0 or not got.exists():
                raise IdnaDataError(f"pip download failed:\n{proc.stdout}\n{proc.stderr}")
            os.replace(got, wheel)
    digest = _sha256(wheel)
    if digest != sha256:
        raise IdnaDataError(f"{wheel.name}: sha256 {digest} does not match the pinned hash")
    return wheel


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assignments(source: str) -> dict[str, ast.expr]:
    """The module-level ``name = value`` (or annotated) assignments of a data module."""
    out: dict[str, ast.expr] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            out[target.id] = value
    return out


def _literal(node: ast.expr) -> object:
    """A literal, or the items of ``array("I", (...))`` as a tuple."""
    if isinstance(node, ast.Call) and len(node.args) == 2:
        return ast.literal_eval(node.args[1])
    return ast.literal_eval(node)


def _deltas(starts: list[int]) -> list[int]:
    return [b - a for a, b in zip([0, *starts], starts, strict=False)]


# the digits of :func:`varints`: 0-31 end a number, 32-63 carry 5 more bits
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"


def varints(values: list[int]) -> tuple[int, str]:
    """Non-negative integers as their count and one string, 5 bits a character, least
    significant first: the guest decodes it straight into an ``Int32Array`` of that size, with
    no array of numbers in between."""
    out = []
    for v in values:
        if v < 0:
            raise IdnaDataError(f"a negative number in the IDNA data: {v}")
        while v >= 32:
            out.append(ALPHABET[32 + (v & 31)])
            v >>= 5
        out.append(ALPHABET[v])
    return len(values), "".join(out)


def idna_table(wheel: Path) -> str:
    """The guest's IDNA data as JSON text (ASCII only), from the pinned wheel."""
    with zipfile.ZipFile(wheel) as z:
        uts46 = _assignments(z.read("idna/uts46data.py").decode("utf-8"))
        data = _assignments(z.read("idna/idnadata.py").decode("utf-8"))
    version = _literal(uts46["__version__"])
    starts = list(_literal(uts46["uts46_starts"]))  # type: ignore[call-overload]
    statuses = _literal(uts46["uts46_statuses"])
    replacements = list(_literal(uts46["uts46_replacements"]))  # type: ignore[call-overload]
    joining = _literal(data["joining_types"])
    if not (
        isinstance(statuses, bytes)
        and len(starts) == len(statuses) == len(replacements)
        and starts[0] == 0
        and isinstance(joining, dict)
    ):
        raise IdnaDataError("idna's uts46data.py is not the expected ranges table")
    strings: dict[str, int] = {}
    refs: list[int] = []
    letters = statuses.decode("ascii")
    if set(letters) - set("VMDIX"):
        raise IdnaDataError(f"unknown UTS #46 statuses {sorted(set(letters) - set('VMDIX'))}")
    for status, repl in zip(letters, replacements, strict=True):
        if status == "M":
            refs.append(strings.setdefault(repl or "", len(strings)))
    # Bidi classes and viramas from the build Python's unicodedata, as ranges
    bidi_starts: list[int] = []
    bidi = []
    viramas = []
    last = ""
    for cp in range(0x110000):
        ch = chr(cp)
        letter = BIDI_LETTERS.get(unicodedata.bidirectional(ch), "x")
        if letter != last:
            bidi_starts.append(cp)
            bidi.append(letter)
            last = letter
        if unicodedata.combining(ch) == 9:
            viramas.append(cp)
    joins: dict[str, list[int]] = {}
    for kind, ranges in sorted(joining.items()):
        bounds = []
        for r in ranges:
            bounds += [r >> 32, r & 0xFFFFFFFF]  # [start, end)
        joins[str(kind)] = _deltas(bounds)
    table = {
        "unicode": version,
        "idna": IDNA_VERSION,
        "bidiUnicode": unicodedata.unidata_version,
        "starts": varints(_deltas(starts)),
        "status": letters,
        "refs": varints(refs),
        # the mapped strings, concatenated, and their lengths in UTF-16 code units
        "text": "".join(strings),
        "lengths": varints([len(m.encode("utf-16-le")) // 2 for m in strings]),
        "bidiStarts": varints(_deltas(bidi_starts)),
        "bidi": "".join(bidi),
        "viramas": varints(_deltas(viramas)),
        "joining": {kind: varints(bounds) for kind, bounds in joins.items()},
    }
    return json.dumps(table, separators=(",", ":"), ensure_ascii=True)
