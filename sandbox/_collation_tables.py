"""Build step: the Unicode Collation Algorithm's root table (DUCET) as compact C arrays.

``Intl.Collator`` (``_guest/web/intl_collator.js``, compare in ``_guest/web_collate.c``) orders
strings by the Default Unicode Collation Element Table, ``allkeys-10.0.0.txt`` of the pinned
PyPI ``pyuca`` wheel (fetched by ``pip download`` and checked by sha256, as the IDNA data is:
:func:`sandbox._idna_tables.fetch_wheel`); the file is read as text, nothing is imported.

The tables (``collation.inc`` in the build folder, included by ``web_collate.c``):

- ``COLL_INDEX``/``COLL_BLOCKS``: a two-stage table from a code point to a 32-bit value: 0 when
  the code point is not listed (implicit weights, computed in C); one collation element inline
  when bit 31 is clear (primary << 15 | secondary << 6 | tertiary << 1 | variable); else an
  expansion (``COLL_CES`` offset << 5 | count; count 0 for an ignorable) or, with bit 30, the
  index of a contraction head in ``COLL_HEADS``.
- ``COLL_HEADS``: per head its own value and its contractions' range in ``COLL_CONTRACTIONS``
  (second and third code point, value), longest first.
- ``COLL_HAN``: the ranges of Unified_Ideograph (the implicit weights' bases), taken from the
  build Python's ``unicodedata`` names (its ``unidata_version`` is in ``build.json``); from
  the same, ``COLL_CCC`` (the canonical combining classes, for discontiguous contractions) and
  ``COLL_DECIMAL`` (the decimal digits, Nd, which numeric collation reads as numbers).
- ``COLL_SCRIPTS``: the primary range of each script a shipped locale puts first (CLDR's
  ``[reorder ...]``: Cyrillic for ru, Arabic for ar, Devanagari for hi, Hangul and Han for
  ko, Latin, kana and Han for ja, Han for zh), found by the names of its letters; and
- the primary of the digit zero (digits 0-9 have consecutive primaries, which numeric
  collation reads) and the last primary of the variable whitespace and punctuation, before
  U+0060 (what ``ignorePunctuation`` shifts away; symbols stay, as with CLDR's default
  maxVariable=punct).

Loaded by path from ``_build.py`` (no package imports).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
import zipfile
from pathlib import Path

__all__ = [
    "PYUCA_SHA256",
    "PYUCA_VERSION",
    "PYUCA_WHEEL",
    "UCA_VERSION",
    "CollationDataError",
    "collation_include",
]

PYUCA_VERSION = "1.2"
PYUCA_WHEEL = f"pyuca-{PYUCA_VERSION}-py2.py3-none-any.whl"
PYUCA_SHA256 = "abaa12e1bd2c7c68ca8396ff8383bc0654a739cef3ae68fd7af58bf29af0a91e"
UCA_VERSION = "10.0.0"

BLOCK_BITS = 7
HEAD_FLAG = 1 << 30
INDIRECT = 1 << 31
# the Unified_Ideograph code points named "CJK COMPATIBILITY IDEOGRAPH-..."
COMPAT_UNIFIED = (0xFA0E, 0xFA0F, 0xFA11, 0xFA13, 0xFA14, 0xFA1F, 0xFA21, 0xFA23, 0xFA24)
COMPAT_UNIFIED_RANGE = (0xFA27, 0xFA29)

# the scripts CLDR's tailorings of the shipped locales reorder ([reorder ...]), by the names of
# their letters; Han is the implicit weights' range (Unified_Ideograph)
REORDER_SCRIPTS = {
    "Latn": ("LATIN ",),
    "Cyrl": ("CYRILLIC ",),
    "Arab": ("ARABIC ",),
    "Deva": ("DEVANAGARI ",),
    "Hang": ("HANGUL ",),
    "Kana": ("HIRAGANA ", "KATAKANA"),
}
HAN_PRIMARIES = (0xFB40, 0xFBBF)

_ELEMENT = re.compile(r"\[([.*])([0-9A-F]{4})\.([0-9A-F]{4})\.([0-9A-F]{4})\]")


class CollationDataError(RuntimeError):
    """The pinned allkeys table is not as this generator expects."""


def _pack(variable: bool, p: int, s: int, t: int) -> int:
    if p > 0xFFFF or s > 0x1FF or t > 0x1F:
        raise CollationDataError(f"a weight out of range: [{p:04X}.{s:04X}.{t:04X}]")
    return p << 15 | s << 6 | t << 1 | int(variable)


def _parse(text: str) -> dict[tuple[int, ...], list[int]]:
    entries: dict[tuple[int, ...], list[int]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("@"):
            continue
        keys, _, elements = line.partition(";")
        cps = tuple(int(k, 16) for k in keys.split())
        ces = [
            _pack(v == "*", int(p, 16), int(s, 16), int(t, 16))
            for v, p, s, t in _ELEMENT.findall(elements)
        ]
        if not cps or len(cps) > 3 or (not ces and elements.strip() != ""):
            raise CollationDataError(f"unexpected allkeys line: {raw!r}")
        entries[cps] = ces
    return entries


def _han_ranges() -> list[tuple[int, int]]:
    """Unified_Ideograph as inclusive ranges, from the code points' names."""
    cps = [
        cp
        for cp in range(0x3400, 0x40000)
        if unicodedata.name(chr(cp), "").startswith("CJK UNIFIED IDEOGRAPH-")
    ]
    cps += [*COMPAT_UNIFIED, *range(COMPAT_UNIFIED_RANGE[0], COMPAT_UNIFIED_RANGE[1] + 1)]
    ranges: list[tuple[int, int]] = []
    for cp in sorted(cps):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def _ranges(value: dict[int, int]) -> list[int]:
    """Code points with a non-zero value, as ``start, end, value`` triples (end inclusive)."""
    out: list[int] = []
    for cp in sorted(value):
        if out and out[-2] == cp - 1 and out[-1] == value[cp]:
            out[-2] = cp
        else:
            out += [cp, cp, value[cp]]
    return out


def _array(ctype: str, name: str, values: list[int]) -> str:
    rows = [", ".join(str(v) for v in values[i : i + 16]) for i in range(0, len(values), 16)]
    body = ",\n".join(rows) if rows else "0"
    return f"static const {ctype} {name}[] = {{\n{body}\n}};\n"


def collation_include(wheel: Path) -> str:
    """The C include of the collation tables, from the pinned pyuca wheel."""
    with zipfile.ZipFile(wheel) as z:
        text = z.read(f"pyuca/allkeys-{UCA_VERSION}.txt").decode("utf-8")
    if f"@version {UCA_VERSION}" not in text:
        raise CollationDataError(f"allkeys is not version {UCA_VERSION}")
    entries = _parse(text)
    ces: list[int] = []
    expansions: dict[tuple[int, ...], int] = {}

    def value(elements: list[int]) -> int:
        if len(elements) == 1 and elements[0]:
            return elements[0]
        if len(elements) > 31:
            raise CollationDataError("an expansion of more than 31 elements")
        key = tuple(elements)
        if key not in expansions:
            expansions[key] = len(ces)
            ces.extend(elements)
        return INDIRECT | expansions[key] << 5 | len(elements)

    singles = {cps[0]: value(e) for cps, e in entries.items() if len(cps) == 1}
    by_head: dict[int, list[tuple[tuple[int, ...], list[int]]]] = {}
    for cps, e in entries.items():
        if len(cps) > 1:
            by_head.setdefault(cps[0], []).append((cps, e))
    heads: list[int] = []
    contractions: list[int] = []
    for head in sorted(by_head):
        items = sorted(by_head[head], key=lambda item: -len(item[0]))
        first = len(contractions) // 3
        for cps, e in items:
            contractions += [cps[1], cps[2] if len(cps) > 2 else 0, value(e)]
        heads += [singles.get(head, 0), first, len(items)]
        singles[head] = INDIRECT | HEAD_FLAG | (len(heads) // 3 - 1)
    if len(ces) >= 1 << 25:
        raise CollationDataError("too many expansion elements")
    # the two-stage table
    size = 1 << BLOCK_BITS
    top = (max(singles) >> BLOCK_BITS) + 1
    blocks: dict[tuple[int, ...], int] = {}
    index: list[int] = []
    flat: list[int] = []
    for b in range(top):
        block = tuple(singles.get((b << BLOCK_BITS) + i, 0) for i in range(size))
        if block not in blocks:
            blocks[block] = len(blocks)
            flat.extend(block)
        index.append(blocks[block])
    digits = [singles.get(0x30 + d, 0) for d in range(10)]
    zero = digits[0] >> 15
    if any(v & INDIRECT or v >> 15 != zero + d for d, v in enumerate(digits)):
        raise CollationDataError("the digits' primaries are not consecutive")
    # DUCET's variable elements are whitespace, then punctuation, then the general symbols,
    # which start with U+0060 GRAVE ACCENT (as CLDR's symbol group does)
    symbols = singles.get(0x60, 0) >> 15
    punct = [v >> 15 for cp, v in singles.items() if not v & INDIRECT and v & 1 and cp != 0x60]
    if not singles.get(0x60, 0) & 1 or not any(p < symbols for p in punct):
        raise CollationDataError("U+0060 is not the first variable symbol")
    han = _han_ranges()
    # each reordered script's primaries, one range above the digits that no other script's
    # letters fall in
    letters = zero + 10
    scripts: list[int] = []
    for name, prefixes in REORDER_SCRIPTS.items():
        ps = [
            v >> 15
            for cp, v in singles.items()
            if not v & INDIRECT
            and letters <= v >> 15 < HAN_PRIMARIES[0]
            and unicodedata.name(chr(cp), "").startswith(prefixes)
        ]
        if not ps:
            raise CollationDataError(f"no letters of {name}")
        scripts += [min(ps), max(ps)]
    scripts += HAN_PRIMARIES
    bounds = sorted(zip(scripts[::2], scripts[1::2], strict=True))
    if any(a[1] >= b[0] for a, b in itertools.pairwise(bounds)):
        raise CollationDataError("the reordered scripts' ranges overlap")
    marks = {cp: c for cp in range(0x110000) if (c := unicodedata.combining(chr(cp)))}
    decimals = {cp: 1 for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Nd"}
    ccc, nd = _ranges(marks), _ranges(decimals)
    return "".join(
        [
            f"/* generated by sandbox/_build.py from allkeys-{UCA_VERSION}.txt of the pinned"
            f" {PYUCA_WHEEL} and unicodedata {unicodedata.unidata_version}: do not edit */\n",
            f"#define COLL_BLOCK_BITS {BLOCK_BITS}\n",
            f"#define COLL_INDEX_SIZE {len(index)}\n",
            f"#define COLL_DIGIT_ZERO {zero}\n",
            f"#define COLL_VARIABLE_TOP {max(p for p in punct if p < symbols)}\n",
            f"#define COLL_HAN_RANGES {len(han)}\n",
            f"#define COLL_CCC_RANGES {len(ccc) // 3}\n",
            f"#define COLL_LETTERS {letters}\n",
            f"/* {', '.join([*REORDER_SCRIPTS, 'Hani'])} */\n",
            f"#define COLL_DECIMAL_RANGES {len(nd) // 3}\n",
            _array("uint16_t", "COLL_INDEX", index),
            _array("uint32_t", "COLL_BLOCKS", flat),
            _array("uint32_t", "COLL_CES", ces),
            _array("uint32_t", "COLL_HEADS", heads),
            _array("uint32_t", "COLL_CONTRACTIONS", contractions),
            _array("uint32_t", "COLL_HAN", [v for r in han for v in r]),
            _array("uint32_t", "COLL_CCC", ccc),
            _array("uint32_t", "COLL_SCRIPTS", scripts),
            _array("uint32_t", "COLL_DECIMAL", nd),
        ]
    )
