"""How much host memory and nesting a value message may hold, judged from its JSON text.

Part of the value codec (:mod:`quickjail.sandbox._values`): the decoder charges
:func:`_estimate` to the run's budget before it parses, and refuses a value nested deeper
than the guest ever sends (:func:`_text_deeper_than` on the text at C speed, else
:func:`_deeper_than` on the value).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["_deeper_than", "_estimate", "_text_deeper_than", "_wide_strings"]

_COST_OPEN: Final = 96
_COST_ITEM: Final = 48
_COST_QUOTE: Final = 32
_COST_WIDE_HEADER: Final = 40  # a str of 2- or 4-byte characters has a longer header
_TAG_TEXT: Final = b'{"\\u0000":["'
_TAG_REBATE: Final = 2 * _COST_OPEN + _COST_ITEM + 3 * _COST_QUOTE - _COST_OPEN
_CONTAINERS: Final = (list, dict, frozenset, tuple)


def _deeper_than(value: Any, limit: int) -> bool:
    """True when containers nest more than ``limit`` levels in ``value``: the guest never
    sends that (it refuses a value nested deeper than ``MAX_DEPTH``), so only a compromised
    guest does, and no host code that walks values (``to_json_safe``, ``json.dumps``, a
    caller's own recursion) should meet it. A walk level by level, linear, no recursion."""
    level = [value] if isinstance(value, _CONTAINERS) else []
    for _ in range(limit):
        inner: list[Any] = []
        for c in level:
            items = c.values() if isinstance(c, dict) else c
            inner.extend([x for x in items if isinstance(x, _CONTAINERS)])
        if not inner:
            return False
        level = inner
    return True


_NOT_STRUCTURE: Final = bytes(range(256)).translate(None, b'[]{}"')
_QUOTED: Final = re.compile(rb'"[^"]*"')
_QUOTED_MAX: Final = 1 << 20  # bytes of quotes and brackets the string regex may take
_TEXT_DEPTH_WORK: Final = 4  # bytes the text walk may scan, per byte of text, before it gives up
# a JSON string holding a character a Python str stores 2 (or 4) bytes wide, once the escapes of
# such characters are marked by a byte from 0xC4 (or 0xF0); possessive, so nothing backtracks
_WIDE_STRING: Final = re.compile(rb'"[^"\xc4-\xff]*+[\xc4-\xff][^"]*+"')
_ASTRAL_STRING: Final = re.compile(rb'"[^"\xf0-\xff]*+[\xf0-\xff][^"]*+"')
_BELOW_ASTRAL: Final = bytes(range(0xF0))
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")


def _text_deeper_than(text: bytes, limit: int) -> bool | None:
    """Whether the valid JSON ``text`` nests containers more than ``limit`` levels, at C speed.

    Escaped quotes and every byte but brackets and quotes go, then the strings (a string holding a
    bracket is paired in order), leaving the brackets alone; each pass then drops the
    innermost pairs (one level: a placeholder keeps ``{[]}`` from closing twice), so a
    root deeper than ``limit`` outlives ``limit`` passes. A value decoded from ``text`` nests
    no deeper than the text (a tag wrapper is a container in the text, a leaf or one
    container in the value), so False is final. None, for the caller to walk the value, when
    the passes would scan more than ``_TEXT_DEPTH_WORK`` × the text (a comb of deep chains).
    """
    budget = _TEXT_DEPTH_WORK * len(text)
    # escaped backslashes pair from the left, as a JSON reader takes them; a backslash left
    # then starts another escape, so a quote after one is inside its string
    unescaped = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    marks = unescaped.translate(None, _NOT_STRUCTURE)
    rest = marks.replace(b'""', b"")
    if b'"' in rest:
        if len(marks) > _QUOTED_MAX:
            return None  # a regex over many strings holds the GIL: the walk yields it
        rest = _QUOTED.sub(b"", marks)
    for _ in range(limit):
        budget -= len(rest)
        if budget < 0:
            return None
        inner = rest.replace(b"[]", b"\0").replace(b"{}", b"\0")
        if len(inner) == len(rest):
            return None if rest else False  # nothing left, or not JSON after all
        rest = inner.replace(b"\0", b"")
    return bool(rest)


def _wide_strings(text: bytes) -> int:
    """Extra host bytes the strings of the JSON ``text`` take beyond one byte per text byte.

    CPython stores a whole ``str`` at the width of its widest character: 1 byte a character
    up to U+00FF, 2 up to U+FFFF, 4 beyond. So one astral character makes every other
    character of its string take 4 bytes, where the text spent 1 on each: a short ASCII
    string with one emoji takes ~4 times its UTF-8 length. Each string holding a character
    past U+00FF (a UTF-8 lead byte from 0xC4, or a ``\\u`` escape other than ``\\u00XX``) is
    charged its length once more, and each one holding an astral character (a lead byte
    from 0xF0, or a surrogate escape) twice more again: ``width × characters`` is at most
    ``width × text bytes``, whatever the mix; each wide string also pays its longer header
    (``_COST_WIDE_HEADER``). Plain ASCII text costs one C-speed check.

    Escaped quotes and backslashes are masked first and escapes of wide characters marked
    (same lengths, so no string shrinks), which makes every remaining quote a string
    boundary; a match that starts at a closing quote spans only the structure between two
    strings, which holds none of these bytes. Lone surrogate escapes count as astral (errs
    high).
    """
    if text.isascii() and text.count(b"\\u") == text.count(b"\\u00"):
        return 0
    # same lengths throughout: a string never shrinks, and every quote left is a boundary
    masked = text.replace(b"\\\\", b"__").replace(b'\\"', b"__").replace(b"\\u00", b"____")
    if b"\\u" in masked:
        masked = _SURROGATE_ESCAPE.sub(b"\xf0___", masked).replace(b"\\u", b"\xc4_")
    rest, count = _WIDE_STRING.subn(b"", masked)
    extra = len(masked) - len(rest) + count * _COST_WIDE_HEADER
    if count and masked.translate(None, _BELOW_ASTRAL):
        extra += 2 * (len(masked) - len(_ASTRAL_STRING.sub(b"", masked)))
    return extra


def _estimate(text: bytes) -> int:
    """An upper estimate of the host bytes ``json.loads(text)`` allocates (C-speed counts).

    Characters inside strings count too, so the estimate only errs high. A list or dict costs
    ``_COST_OPEN`` (an empty one, its slot in the parent, list over-allocation), each ``,`` or
    ``:`` ``_COST_ITEM`` (an element's slot and a number or a dict entry), each ``"`` half a
    short string; a tag wrapper gets back what its own characters were charged beyond the
    value it becomes. Every text byte costs one byte, and strings stored 2 or 4 bytes a
    character cost the difference (:func:`_wide_strings`). Text payload is charged by the
    message's length on top.
    """
    opens = text.count(b"[") + text.count(b"{")
    items = text.count(b",") + text.count(b":")
    quotes = text.count(b'"')
    tags = text.count(_TAG_TEXT)
    cost = opens * _COST_OPEN + items * _COST_ITEM + quotes * _COST_QUOTE - tags * _TAG_REBATE
    return max(cost, 0) + len(text) + _wide_strings(text) + _COST_OPEN
