"""Values that cross the sandbox boundary, and their wire format (the "value message").

A value message is ``u8 flags | u32 json_len | json | u32 nblobs | (u32 len, bytes)*``, all
little-endian. Plain JSON travels as JSON (decoded by the C ``json`` module, fast). Everything
JSON cannot say is *tagged*: an object whose only key is ``"\\0"`` holds ``[tag, payload]``.
Flag bit 0 says tags may be present, so untagged messages skip the object hook entirely.

=========  ============================  ==================================================
tag        JavaScript                    Python
=========  ============================  ==================================================
``u``      ``undefined``                 :data:`UNDEFINED`
``b``      ``Uint8Array``/``ArrayBuffer`` ``bytes`` (payload: blob index)
``n``      ``BigInt``                    ``int``
``d``      ``Date``                      ``datetime`` (UTC); invalid → ``None``; a valid
                                         Date outside years 1–9999 → ``TypeError`` (1)
``m``      ``Map``                       ``dict``; keys that are one key in Python
                                         (``1``/``true``/``1n``, equal Dates, ``null`` and
                                         an invalid Date) → ``TypeError`` (1)
``s``      ``Set``                       ``frozenset``; members that are one in Python
                                         (``new Set([1, true, 1n])``) → ``TypeError`` (1)
``f``      ``NaN``/``±Infinity``/``-0``  ``float``
``t``      a string of ≥ 1 KiB           ``str`` (payload: blob index, UTF-8)
=========  ============================  ==================================================

(1) Never merged or dropped silently: a value Python cannot hold faithfully is a
``TransferError`` (a ``TypeError``) naming its path, which for a result is the run's error;
in logs (``lenient``) it becomes a short text instead (a far Date its ISO form, as JavaScript
writes it). The guest sends lone surrogates as U+FFFD, so object keys or Map keys that differ
only in lone surrogates are one key on the host: that is a ``TypeError`` too. Map keys and
Set members must be primitives or Dates, and at most ``MAX_SAME_HASH`` (8) of them may share
a Python hash value, so building the dict or frozenset is linear (BigInts that are multiples
of 2**61 - 1 all hash alike).

Object keys starting with ``"\\0"`` carry one extra leading ``"\\0"`` on the wire. Bytes travel
as raw blobs, never base64. Host functions inside namespaces are sent as ``{"\\x02fn": [id,
is_async, name]}`` objects that the guest turns into callable closures.

Bounds. Decoding is linear in the message; what it allocates is estimated before parsing
(:func:`_estimate`, an upper bound for any shape, strings at the width CPython stores them in)
and charged to a :class:`DecodeBudget`: a run's budget is
``DECODE_FACTOR`` (4) × ``memory_limit_bytes``, at least ``DECODE_FLOOR`` (64 MiB), for all
it sends (result, reports, logs), so a guest that encodes a small graph sharing its children
as a long run of ``[]`` cannot make the host hold many times the run's cap. Each blob may be
used once and blob indices must be in range. Encoding refuses a message larger than
``MAX_TRANSFER_BYTES`` (64 MiB), the cap the guest applies to what it sends.
"""

from __future__ import annotations

import functools
import json
import math
import re
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

from quickjail.sandbox._abi import FN_KEY, MSG_TAGGED
from quickjail.sandbox.errors import TransferError
from quickjail.sandbox.host import HostFunction

if TYPE_CHECKING:
    import datetime

__all__ = [
    "UNDEFINED",
    "DecodeBudget",
    "Message",
    "Reply",
    "TransferError",
    "Undefined",
    "check_message",
    "decode",
    "encode",
    "encode_message",
    "encode_reply",
    "encode_scalar",
    "reply_parts",
]

_U32 = struct.Struct("<I")
_HEAD = struct.Struct("<BI")
_SAFE_INT = 2**53 - 1
MAX_DEPTH: Final = 128
TEXT_BLOB_MIN: Final = 1024
MAX_TRANSFER_BYTES: Final = 64 * 2**20
DECODE_FACTOR: Final = 4
DECODE_FLOOR: Final = 64 * 2**20
DECODE_MESSAGE_FACTOR: Final = 64
MAX_SAME_HASH: Final = 8
_COST_OPEN: Final = 96
_COST_ITEM: Final = 48
_COST_QUOTE: Final = 32
_COST_WIDE_HEADER: Final = 40  # a str of 2- or 4-byte characters has a longer header
_TAG_TEXT: Final = b'{"\\u0000":["'
_TAG_REBATE: Final = 2 * _COST_OPEN + _COST_ITEM + 3 * _COST_QUOTE - _COST_OPEN
_REPLACEMENT: Final = "\ufffd".encode()
_FLOATS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}


@final
class Undefined:
    """JavaScript's ``undefined``; use the :data:`UNDEFINED` singleton."""

    _instance: Undefined | None = None

    def __new__(cls) -> Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = Undefined()


class DecodeBudget:
    """The host memory that decoded values may still take, in estimated bytes.

    A run keeps one budget for every message its guest sends (result, reports, logs,
    rejections), sized from its memory cap by :meth:`for_run`, so what the host holds for a
    run stays a small multiple of what the run may hold itself, however the guest shapes its
    messages (a small graph that shares children encodes as a long run of ``[]``).
    """

    __slots__ = ("limit", "name", "used")

    def __init__(self, limit: int, name: str = "the decode budget") -> None:
        self.limit = limit
        self.name = name
        self.used = 0

    @classmethod
    def for_run(cls, memory_limit_bytes: int) -> DecodeBudget:
        """The budget of a run: ``DECODE_FACTOR`` × its memory cap, at least ``DECODE_FLOOR``."""
        limit = max(DECODE_FLOOR, DECODE_FACTOR * memory_limit_bytes)
        name = f"the run's decode budget ({DECODE_FACTOR} x memory_limit_bytes, at least 64 MiB)"
        return cls(limit, name)

    def charge(self, nbytes: int) -> None:
        """Take ``nbytes`` from the budget, before they are allocated."""
        if self.used + nbytes > self.limit:
            raise TransferError(
                f"cannot transfer a value that would take about {nbytes} bytes on the host: "
                f"over {self.name}, {self.limit - self.used} of {self.limit} bytes left"
            )
        self.used += nbytes


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


@final
class _Refused:
    """Stands in for a value Python cannot hold faithfully until its path is known."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


_KEY_TYPES: Final = frozenset({str, int, bool, float, type(None), Undefined})  # and datetime
_JS_MIN_YEAR_DAYS: Final = 719_162  # days from 0001-01-01 to 1970-01-01
_DAYS_PER_400_YEARS: Final = 146_097
_MS_PER_DAY: Final = 86_400_000
_JS_MAX_TIME: Final = 8.64e15


def _datetime_class() -> type[datetime.datetime] | None:
    """``datetime.datetime``, or None while the datetime module is not imported: no value can
    be a datetime then. Most runs never transfer a Date, and importing the module costs
    milliseconds of a process's first run, so it is imported only to make a Date."""
    module = sys.modules.get("datetime")
    return None if module is None else module.datetime


@functools.cache
def _epoch() -> datetime.datetime:
    """1970-01-01 UTC, JavaScript's time origin."""
    import datetime

    return datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _short(value: Any) -> str:
    """A short, never-raising repr for error messages (a key, a member)."""
    if type(value) is int and value.bit_length() > 64:
        return f"<{value.bit_length()}-bit int>"
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _js_iso(ms: float) -> str:
    """JavaScript's ``toISOString`` of a time value, for any year (Python stops at 9999)."""
    t = math.floor(ms)
    days, rem = divmod(t, _MS_PER_DAY)
    cycles, day = divmod(days + _JS_MIN_YEAR_DAYS, _DAYS_PER_400_YEARS)
    import datetime

    date = datetime.date.fromordinal(day + 1)
    year = date.year + 400 * cycles
    ys = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    secs, msec = divmod(rem, 1000)
    clock = f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}.{msec:03d}"
    return f"{ys}-{date.month:02d}-{date.day:02d}T{clock}Z"


class _Decoder:
    """The hooks of one decode: tags, key checks, blobs (each used once) and refusals."""

    __slots__ = ("blobs", "budget", "lenient", "refusals", "used")

    def __init__(self, blobs: list[memoryview], budget: DecodeBudget, lenient: bool) -> None:
        self.blobs = blobs
        self.used = bytearray(len(blobs))
        self.budget = budget
        self.lenient = lenient
        self.refusals = 0

    def refuse(self, reason: str, stand_in: str) -> Any:
        if self.lenient:
            return stand_in
        self.refusals += 1
        return _Refused(reason)

    def blob(self, index: Any) -> memoryview:
        if type(index) is not int or not 0 <= index < len(self.blobs) or self.used[index]:
            raise TransferError("malformed value message (a blob index out of range or reused)")
        self.used[index] = 1
        return self.blobs[index]

    def tag(self, tag: str, payload: Any) -> Any:
        if tag == "u":
            return UNDEFINED
        if tag == "f":
            return _FLOATS[payload]
        if tag == "n":
            if type(payload) is not str:
                raise TransferError("malformed value message (BigInt)")
            return int(payload, 16)
        if tag == "b":
            data = self.blob(payload)
            self.budget.charge(len(data) + 33)
            return bytes(data)
        if tag == "t":
            data = self.blob(payload)
            charged = 4 * len(data) + 80  # up to 4 bytes a character, until it is known
            self.budget.charge(charged)
            text = str(data, "utf-8", "replace")
            self.budget.used -= charged - sys.getsizeof(text)
            return text
        if tag == "d":
            return self.date(payload)
        if tag == "m":
            return self.map(payload)
        if tag == "s":
            return self.set(payload)
        raise TransferError(f"malformed value message (unknown tag {_short(tag)})")

    def date(self, ms: Any) -> Any:
        if ms is None:
            return None  # an invalid Date
        if type(ms) not in (int, float) or not abs(ms) <= _JS_MAX_TIME:
            raise TransferError("malformed value message (Date)")
        import datetime  # on first use (see _datetime_class)

        try:
            return _epoch() + datetime.timedelta(milliseconds=ms)
        except OverflowError:
            text = _js_iso(ms)
            return self.refuse(f"a Date outside Python's years 1-9999 ({text})", text)

    def _check_keys(self, keys: list[Any], what: str) -> str | None:
        """Why these keys cannot be a dict or frozenset, or None; linear whatever they are."""
        per_hash: dict[int, int] = {}
        for key in keys:
            kind = type(key)
            if kind not in _KEY_TYPES and kind is not _Refused and kind is not _datetime_class():
                return f"a {what} that is not a primitive or a Date"
            h = hash(key)
            n = per_hash.get(h, 0) + 1
            if n > MAX_SAME_HASH:
                # distinct hashes never share a probe sequence for long, so a dict built from
                # keys with at most MAX_SAME_HASH per hash value costs linear time
                return f"more than {MAX_SAME_HASH} {what}s of one Python hash value"
            per_hash[h] = n
        return None

    def map(self, entries: Any) -> Any:
        if type(entries) is not list or any(type(e) is not list or len(e) != 2 for e in entries):
            raise TransferError("malformed value message (Map)")
        problem = self._check_keys([e[0] for e in entries], "Map key")
        if problem is not None:
            return self.refuse(problem, f"[Map: {problem}]")
        out: dict[Any, Any] = {}
        for key, value in entries:
            if key in out:
                other = next(k for k in out if k == key)
                problem = f"a Map whose keys {_short(other)} and {_short(key)} are one in Python"
                return self.refuse(problem, f"[Map: {problem}]")
            out[key] = value
        return out

    def set(self, items: Any) -> Any:
        if type(items) is not list:
            raise TransferError("malformed value message (Set)")
        problem = self._check_keys(items, "Set member")
        if problem is not None:
            return self.refuse(problem, f"[Set: {problem}]")
        out = frozenset(items)
        if len(out) != len(items):
            seen: dict[Any, Any] = {}
            for item in items:
                if item in seen:
                    pair = f"{_short(seen[item])} and {_short(item)}"
                    problem = f"a Set whose members {pair} are one in Python"
                    return self.refuse(problem, f"[Set: {problem}]")
                seen[item] = item
        return out

    def object(self, obj: dict[str, Any]) -> Any:
        if len(obj) == 1 and "\0" in obj:
            wrapped = obj["\0"]
            if type(wrapped) is not list or not 1 <= len(wrapped) <= 2:
                raise TransferError("malformed value message (tag)")
            return self.tag(wrapped[0], wrapped[1] if len(wrapped) == 2 else None)
        if any(k.startswith("\0") for k in obj):
            return {(k[1:] if k.startswith("\0") else k): v for k, v in obj.items()}
        return obj

    def pairs(self, pairs: list[tuple[str, Any]]) -> Any:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            problem = "an object whose keys differ only in lone surrogates (sent as U+FFFD)"
            return self.refuse(problem, f"[Object: {problem}]")
        return self.object(obj)


def _where(root: Any) -> tuple[str, str]:
    """The reason and path of the first refused value in a decoded tree (linear, iterative)."""
    # each entry: (node, parent entry index, label); labels are joined only for the hit
    entries: list[tuple[Any, int, str]] = [(root, -1, "value")]
    todo = [0]
    while todo:
        index = todo.pop()
        node = entries[index][0]
        found: tuple[int, str] | None = None
        if type(node) is _Refused:
            found = (index, "")
        elif type(node) is dict:
            for k, v in node.items():
                if type(k) is _Refused:
                    node, found = k, (index, "<key>")
                    break
                label = f".{k[:64]}" if type(k) is str else f"[{_short(k)}]"
                entries.append((v, index, label))
                todo.append(len(entries) - 1)
        elif type(node) is list:
            for i, v in enumerate(node):
                entries.append((v, index, f"[{i}]"))
                todo.append(len(entries) - 1)
        elif type(node) is frozenset:
            for m in node:
                if type(m) is _Refused:
                    node, found = m, (index, "<item>")
                    break
        if found is not None:
            at, label = found
            parts = [label]
            while at >= 0:
                parts.append(entries[at][2])
                at = entries[at][1]
            return node.reason, "".join(reversed(parts))
    return "a value Python cannot hold", "value"


_SMALL_MESSAGE: Final = 4096  # bytes: the quick path's JSON scan stays short
_SLOW: Final = object()
_ONE_MESSAGE: Final = "the decode budget of one message"
# json.loads's own scanner (its default decoder's), without the wrappers around it
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode_small(buf: bytes, budget: DecodeBudget | None) -> Any:
    """The common short message (a host call's arguments): untagged JSON and no blobs,
    decoded with what :func:`decode` would check; ``_SLOW`` for any other shape."""
    n = len(buf)
    if n < 9 or buf[0] != 0 or buf[n - 4 :] != _NO_BLOBS:
        return _SLOW
    text = buf[5 : n - 4]
    if _HEAD.unpack_from(buf, 0)[1] != n - 9 or _REPLACEMENT in text:
        return _SLOW
    if n > MAX_DEPTH and text.count(b"[") + text.count(b"{") > MAX_DEPTH:
        return _SLOW  # it might nest too deep: the full path walks it
    try:
        doc = text.decode("utf-8")
    except UnicodeDecodeError:
        return _SLOW  # the full path says what is wrong
    if budget is None:
        budget = DecodeBudget(DECODE_FLOOR + DECODE_MESSAGE_FACTOR * n, _ONE_MESSAGE)
    cost = _estimate(text)
    budget.charge(cost)
    try:
        value, end = _scan(doc, 0)
        if end == len(doc):
            return value
    except (StopIteration, ValueError, RecursionError):
        pass
    budget.used -= cost  # the full path charges it again, and says what is wrong
    return _SLOW


def decode(
    buf: bytes | memoryview, *, budget: DecodeBudget | None = None, lenient: bool = False
) -> Any:
    """Decode a value message written by the guest.

    Work and memory are linear in the message and checked before they are spent: the
    decoded values are charged to ``budget`` (a run's :class:`DecodeBudget`; by default one
    of ``DECODE_FLOOR`` + ``DECODE_MESSAGE_FACTOR`` × the message's size) before parsing,
    each blob may be used once, and Map keys and Set members are checked in linear time
    before a dict or frozenset is built from them.

    Args:
        buf: the message.
        budget: what decoded values may still take on the host.
        lenient: for logs: a value Python cannot hold faithfully becomes a short text
            saying what it was, instead of an error.

    Raises:
        TransferError: the message is malformed, over the budget, or holds what Python
            cannot represent faithfully (the message names the path).
    """
    if type(buf) is bytes and len(buf) <= _SMALL_MESSAGE:
        quick = _decode_small(buf, budget)
        if quick is not _SLOW:
            return quick
    try:
        flags, jlen, spans, _end = _frame(buf)
        text = bytes(buf[5 : 5 + jlen])
        view = memoryview(buf)
        blobs = [view[pos : pos + n] for pos, n in spans]
        if budget is None:
            limit = DECODE_FLOOR + DECODE_MESSAGE_FACTOR * len(buf)
            budget = DecodeBudget(limit, _ONE_MESSAGE)
        budget.charge(_estimate(text))
        opens = text.count(b"[") + text.count(b"{")
        replaced = _REPLACEMENT in text  # lone surrogates may have merged object keys
        if not flags & MSG_TAGGED and not replaced:
            value = json.loads(text)
        else:
            dec = _Decoder(blobs, budget, lenient)
            if replaced:
                value = json.loads(text, object_pairs_hook=dec.pairs)
            else:
                value = json.loads(text, object_hook=dec.object)
            if dec.refusals:
                reason, path = _where(value)
                raise TransferError(f"cannot transfer {reason} at {path}")
        # plain JSON is checked on its text, at C speed; a tagged message's text has a
        # wrapper container and an escape per tag, so its value is walked instead
        if (
            opens > MAX_DEPTH
            and (flags & MSG_TAGGED or _text_deeper_than(text, MAX_DEPTH) is not False)
            and _deeper_than(value, MAX_DEPTH)
        ):
            raise TransferError(f"malformed value message (nested deeper than {MAX_DEPTH})")
        return value
    except TransferError:
        raise
    except RecursionError:
        raise TransferError("malformed value message (nested too deeply)") from None
    except (struct.error, ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
        raise TransferError(f"malformed value message ({type(exc).__name__})") from None


def check_message(buf: bytes) -> None:
    """Check that ``buf`` is framed as a value message (its JSON and blobs fill it exactly)
    and within ``MAX_TRANSFER_BYTES``, without decoding it: for a message passed on as is.

    Linear in the number of blobs (at most a quarter of the message's bytes).

    Raises:
        TransferError: the framing is wrong or the message is over the transfer cap.
    """
    try:
        _flags, _jlen, spans, end = _frame(buf)
    except struct.error:
        raise TransferError("malformed value message (too short)") from None
    if end != len(buf):
        raise TransferError("malformed value message (its parts do not fill it)")
    if len(buf) - 9 - 4 * len(spans) > MAX_TRANSFER_BYTES:
        raise TransferError(f"cannot transfer more than {MAX_TRANSFER_BYTES} bytes")


def _frame(buf: bytes | memoryview) -> tuple[int, int, list[tuple[int, int]], int]:
    """A message's framing: its flags, its JSON's length, each blob's ``(offset, length)``
    and where the last blob ends; linear in the blobs (at most a quarter of the bytes).

    Raises:
        TransferError: a blob count or length that cannot fit in the message.
        struct.error: the message ends inside a length.
    """
    flags, jlen = _HEAD.unpack_from(buf, 0)
    pos = 5 + jlen
    (nblobs,) = _U32.unpack_from(buf, pos)
    pos += 4
    if nblobs > len(buf) // 4:
        raise TransferError("malformed value message")
    spans: list[tuple[int, int]] = []
    for _ in range(nblobs):
        (n,) = _U32.unpack_from(buf, pos)
        pos += 4
        if pos + n > len(buf):
            raise TransferError("malformed value message")
        spans.append((pos, n))
        pos += n
    return flags, jlen, spans, pos


@final
class Message:
    """A value message kept as its parts, to be copied straight into guest memory.

    A part is bytes or an ASCII ``str`` whose own characters are its UTF-8 bytes (a long text
    blob, never copied on the host: the guest's memory is its first copy). ``size`` is the
    message's length in bytes. Every part is immutable, so the message is a snapshot. A str
    part that is not ASCII is refused where it is copied (``NativeInstance.write_parts``,
    :meth:`buffers`), never written as other bytes.
    """

    __slots__ = ("parts", "size")

    def __init__(self, parts: tuple[bytes | str, ...], size: int | None = None) -> None:
        self.parts = parts
        self.size = sum(map(len, parts)) if size is None else size

    def __len__(self) -> int:
        return self.size

    def tobytes(self) -> bytes:
        """The message as one bytes (copies it, unless it is one bytes part)."""
        parts = self.parts
        if len(parts) == 1 and type(parts[0]) is bytes:
            return parts[0]
        return b"".join(self.buffers())

    def buffers(self) -> list[bytes]:
        """The parts as bytes, a str part encoded (one copy), for a host stream."""
        return _as_bytes(self.parts)


def _as_bytes(parts: Sequence[bytes | str]) -> list[bytes]:
    return [p.encode("ascii") if isinstance(p, str) else p for p in parts]


class _Encoder:
    __slots__ = ("blob_bytes", "blobs", "functions", "keep_text", "tagged")

    def __init__(self, functions: Callable[[HostFunction], int] | None, keep_text: bool = False):
        self.blobs: list[bytes | str] = []
        self.blob_bytes = 0
        self.tagged = False
        self.functions = functions
        self.keep_text = keep_text  # an ASCII str blob stays the str (its bytes are its own)

    def blob(self, nbytes: int, path: str) -> None:
        """Make room for a blob of ``nbytes``, refusing it before copying past the cap."""
        self.blob_bytes += nbytes
        if self.blob_bytes > MAX_TRANSFER_BYTES:
            raise TransferError(
                f"cannot transfer more than {MAX_TRANSFER_BYTES} bytes (the transfer cap) at {path}"
            )

    def tag(self, tag: str, payload: Any = None) -> dict[str, Any]:
        self.tagged = True
        return {"\0": [tag] if payload is None else [tag, payload]}

    def walk(self, value: Any, path: str, depth: int, seen: set[int]) -> Any:
        if isinstance(value, str):
            if len(value) < TEXT_BLOB_MIN:
                return value
            # long text travels as a raw UTF-8 blob: no JSON escaping on either side
            self.blob(len(value), path)  # UTF-8 takes at least a byte a character
            if self.keep_text and type(value) is str and value.isascii():
                self.blobs.append(value)  # O(1) check; its characters are its UTF-8
                return self.tag("t", len(self.blobs) - 1)
            data = value.encode("utf-8", "surrogatepass")
            self.blob(len(data) - len(value), path)
            self.blobs.append(data)
            return self.tag("t", len(self.blobs) - 1)
        if value is None or value is True or value is False:
            return value
        if isinstance(value, int):
            if -_SAFE_INT <= value <= _SAFE_INT:
                return value
            return self.tag("n", format(value, "x"))
        if isinstance(value, float):
            if math.isfinite(value) and not (value == 0 and math.copysign(1, value) < 0):
                return value
            return self.tag(
                "f",
                "NaN"
                if value != value
                else "-0"
                if value == 0
                else "Infinity"
                if value > 0
                else "-Infinity",
            )
        if value is UNDEFINED:
            return self.tag("u")
        if isinstance(value, bytes | bytearray | memoryview):
            self.blob(memoryview(value).nbytes, path)
            self.blobs.append(bytes(value))
            return self.tag("b", len(self.blobs) - 1)
        datetime_class = _datetime_class()
        if datetime_class is not None and isinstance(value, datetime_class):
            import datetime

            when = value if value.tzinfo else value.replace(tzinfo=datetime.UTC)
            return self.tag("d", (when - _epoch()) / datetime.timedelta(milliseconds=1))
        if depth >= MAX_DEPTH:
            raise TransferError(f"cannot transfer a value nested deeper than {MAX_DEPTH} at {path}")
        if isinstance(value, HostFunction) and self.functions is not None:
            # the JS name is the key it is bound to, never the Python function's own name
            name = path.rsplit(".", 1)[-1].strip("[]'\"")
            fid = self.functions(value)
            return {FN_KEY: [fid, value.js_mode, name if name.isidentifier() else ""]}
        ident = id(value)
        if ident in seen:
            raise TransferError(f"cannot transfer a circular reference at {path}")
        seen.add(ident)
        try:
            if isinstance(value, Mapping):
                if all(type(k) is str for k in value):
                    out: dict[str, Any] = {}
                    for k, v in value.items():
                        if k.startswith("\0"):
                            self.tagged = True
                            key = "\0" + k
                        elif k == FN_KEY:
                            raise TransferError(f"the key {FN_KEY!r} is reserved, at {path}")
                        else:
                            key = k
                        out[key] = self.walk(v, f"{path}.{k}", depth + 1, seen)
                    return out
                pairs = [
                    [
                        self.walk(k, f"{path}<key>", depth + 1, seen),
                        self.walk(v, f"{path}[{k!r}]", depth + 1, seen),
                    ]
                    for k, v in value.items()
                ]
                return self.tag("m", pairs)
            if isinstance(value, list | tuple):
                return [self.walk(v, f"{path}[{i}]", depth + 1, seen) for i, v in enumerate(value)]
            if isinstance(value, set | frozenset):
                return self.tag(
                    "s", [self.walk(v, f"{path}<item>", depth + 1, seen) for v in value]
                )
        finally:
            seen.discard(ident)
        raise TransferError(f"cannot transfer a value of type {type(value).__name__} at {path}")


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_CONSTANTS = {None: b"null", True: b"true", False: b"false"}
_NO_BLOBS = b"\0\0\0\0"


def encode_scalar(value: Any) -> bytes | None:
    """The message of a plain scalar, built directly (host calls mostly return these)."""
    t = type(value)
    if t is int:
        if not -_SAFE_INT <= value <= _SAFE_INT:
            return None
        data = str(value).encode()
    elif t is str:
        if len(value) >= TEXT_BLOB_MIN:
            return None
        try:
            data = _dumps(value).encode("utf-8")
        except UnicodeEncodeError:
            return None
    elif t is float:
        if not math.isfinite(value) or (value == 0 and math.copysign(1, value) < 0):
            return None
        data = repr(value).encode()
    elif value is None or t is bool:
        data = _CONSTANTS[value]
    else:
        return None
    return _HEAD.pack(0, len(data)) + data + _NO_BLOBS


def encode(
    value: Any,
    *,
    path: str = "value",
    functions: Callable[[HostFunction], int] | None = None,
) -> bytes:
    """Encode a Python value as a value message for the guest.

    Args:
        value: JSON types, ``UNDEFINED``, bytes, int of any size, float, datetime, dict (str
            keys → object, other keys → Map), list/tuple, set/frozenset.
        path: the name used for the value in error messages.
        functions: when given, each :class:`~quickjail.sandbox.host.HostFunction` is
            registered through it (it returns the function's id in the run's dispatch table)
            instead of being refused.

    Raises:
        TransferError: the value (or something inside it) cannot be transferred, or the
            message would be larger than ``MAX_TRANSFER_BYTES`` (64 MiB, the same cap the
            guest applies to what it sends).
    """
    fast = encode_scalar(value)
    if fast is not None:
        return fast
    return b"".join(_as_bytes(_encode_parts(value, path, functions, keep_text=False)))


def encode_message(value: Any, *, path: str = "value") -> Message:
    """:func:`encode` as a :class:`Message`: a long ASCII ``str`` is kept as a part, not
    copied, for a message that goes straight into guest memory. Same checks and cap."""
    fast = encode_scalar(value)
    if fast is not None:
        return Message((fast,), len(fast))
    return Message(tuple(_encode_parts(value, path, None, keep_text=True)))


Reply: TypeAlias = "bytes | Message"
"""A host call's reply message: plain bytes when short, its parts when long."""
_SHORT_REPLY: Final = 4096  # bytes: a reply this short is joined (one small copy, less to do)


def encode_reply(value: Any, *, path: str = "value") -> Reply:
    """:func:`encode_message` for a host call's result: the common short reply as bytes, a
    long one as a :class:`Message` (a long ASCII text in it is never copied on the host)."""
    fast = encode_scalar(value)
    if fast is not None:
        return fast  # most replies: no Message made at all
    message = encode_message(value, path=path)
    return message.tobytes() if message.size <= _SHORT_REPLY else message


def reply_parts(data: Reply) -> tuple[bytes | str, ...]:
    """The parts a reply is copied from (one bytes, or a :class:`Message`'s parts)."""
    return (data,) if isinstance(data, bytes) else data.parts


def _encode_parts(
    value: Any, path: str, functions: Callable[[HostFunction], int] | None, *, keep_text: bool
) -> list[bytes | str]:
    """The parts of a value message: head, JSON, blob count, then each blob's length and
    bytes; the transfer cap is checked before the blobs are copied anywhere."""
    enc = _Encoder(functions, keep_text)
    tree = enc.walk(value, path, 0, set())
    text = _dumps(tree)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # lone surrogates: let JSON escapes carry them exactly
        data = _dumps_ascii(tree).encode("ascii")
    if len(data) + enc.blob_bytes > MAX_TRANSFER_BYTES:
        raise TransferError(
            f"cannot transfer more than {MAX_TRANSFER_BYTES} bytes (the transfer cap) at {path}"
        )
    parts: list[bytes | str] = [
        _HEAD.pack(MSG_TAGGED if enc.tagged else 0, len(data)),
        data,
        _U32.pack(len(enc.blobs)),
    ]
    for blob in enc.blobs:
        parts.append(_U32.pack(len(blob)))
        parts.append(blob)
    return parts
