"""Values that cross the sandbox boundary, and their wire format (the "value message").

A value message is ``u8 flags | u32 json_len | json | u32 nblobs | (u32 len, bytes)*``, all
little-endian. Plain JSON travels as JSON (decoded by the C ``json`` module, fast). Everything
JSON cannot say is *tagged*: an object whose only key is ``"\\0"`` holds ``[tag, payload]``.
Flag bit 0 says tags may be present, so untagged messages skip the object hook entirely.

=========  ============================  ==================================================
tag        JavaScript                    Python
=========  ============================  ==================================================
``u``      ``undefined``                 :data:`UNDEFINED`
``b``      ``Uint8Array``                ``bytes`` (payload: blob index); ``bytearray``
                                         and a ``memoryview`` of format ``B`` go too
``a``      any other typed array,        :class:`TypedArray` (payload: ``[kind, blob
           ``ArrayBuffer``/``DataView``  index]``, kind the JavaScript name, the blob the
                                         viewed bytes, a whole number of little-endian
                                         elements); a numeric ``memoryview`` or
                                         ``array.array`` goes as the kind of its format
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

import json
import math
import struct
import sys
from collections.abc import Callable
from typing import Any, Final, final

from quickjail.sandbox._abi import MSG_TAGGED
from quickjail.sandbox._value_types import (
    ELEMENT_SIZES,
    UNDEFINED,
    TypedArray,
    Undefined,
)
from quickjail.sandbox._values_bounds import _deeper_than as _deeper_than
from quickjail.sandbox._values_bounds import _estimate
from quickjail.sandbox._values_bounds import _text_deeper_than as _text_deeper_than
from quickjail.sandbox._values_encode import (
    _HEAD,
    _NO_BLOBS,
    _U32,
    MAX_DEPTH,
    MAX_TRANSFER_BYTES,
    TEXT_BLOB_MIN,
    Message,
    Reply,
    _datetime_class,
    _epoch,
    encode,
    encode_message,
    encode_reply,
    encode_scalar,
    reply_parts,
)
from quickjail.sandbox.errors import TransferError

__all__ = [
    "DECODE_FACTOR",
    "DECODE_FLOOR",
    "DECODE_MESSAGE_FACTOR",
    "MAX_DEPTH",
    "MAX_SAME_HASH",
    "MAX_TRANSFER_BYTES",
    "TEXT_BLOB_MIN",
    "UNDEFINED",
    "DecodeBudget",
    "Message",
    "Reply",
    "TransferError",
    "TypedArray",
    "Undefined",
    "check_message",
    "decode",
    "encode",
    "encode_message",
    "encode_reply",
    "encode_scalar",
    "reply_parts",
]

DECODE_FACTOR: Final = 4
DECODE_FLOOR: Final = 64 * 2**20
DECODE_MESSAGE_FACTOR: Final = 64
MAX_SAME_HASH: Final = 8
_TYPED_COST: Final = 33 + 56  # a bytes object's header, a TypedArray's (two slots)
_REPLACEMENT: Final = "\ufffd".encode()
_FLOATS: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}


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
        if tag == "a":
            return self.typed(payload)
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

    def typed(self, payload: Any) -> TypedArray:
        """Tag ``a``: ``[kind, blob index]``, the blob a whole number of the kind's elements."""
        if type(payload) is not list or len(payload) != 2 or type(payload[0]) is not str:
            raise TransferError("malformed value message (typed array)")
        kind = payload[0]
        size = ELEMENT_SIZES.get(kind) if kind != "Uint8Array" else None  # that one is tag b
        if size is None:
            raise TransferError(
                f"malformed value message (unknown typed-array kind {_short(kind)})"
            )
        data = self.blob(payload[1])
        if len(data) % size:
            raise TransferError(
                f"malformed value message ({kind} of {len(data)} bytes, "
                f"not a whole number of {size}-byte elements)"
            )
        self.budget.charge(len(data) + _TYPED_COST)
        return TypedArray._trusted(kind, bytes(data))

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
