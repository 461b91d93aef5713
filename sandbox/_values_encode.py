"""The encoder of the value codec: Python values -> value messages for the guest.

The format is in :mod:`quickjail.sandbox._values`, which re-exports everything here.
"""

from __future__ import annotations

import array
import functools
import json
import math
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, final

from quickjail.sandbox._abi import FN_KEY, MSG_TAGGED
from quickjail.sandbox._value_types import UNDEFINED, TypedArray, little_endian
from quickjail.sandbox.errors import TransferError
from quickjail.sandbox.host import HostFunction

if TYPE_CHECKING:
    import datetime

__all__ = [
    "MAX_DEPTH",
    "MAX_TRANSFER_BYTES",
    "TEXT_BLOB_MIN",
    "Message",
    "Reply",
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

    def typed(self, value: TypedArray | memoryview | array.array[Any], path: str) -> Any:
        """A typed array as tag ``a`` (``[kind, blob]``), a Uint8Array as tag ``b``."""
        if isinstance(value, TypedArray):
            kind, data = value.kind, value.data
            self.blob(len(data), path)
        else:
            view = memoryview(value)
            self.blob(view.nbytes, path)  # refused before it is copied
            try:
                kind, data = little_endian(view)
            except TransferError as exc:
                raise TransferError(f"{exc} at {path}") from None
        self.blobs.append(data)
        if kind == "Uint8Array":
            return self.tag("b", len(self.blobs) - 1)
        return self.tag("a", [kind, len(self.blobs) - 1])

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
        if isinstance(value, bytes | bytearray):
            self.blob(len(value), path)
            self.blobs.append(bytes(value))
            return self.tag("b", len(self.blobs) - 1)
        if isinstance(value, TypedArray | memoryview | array.array):
            return self.typed(value, path)
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
        value: JSON types, ``UNDEFINED``, bytes/bytearray (→ Uint8Array), a
            :class:`~quickjail.sandbox.TypedArray` or a numeric ``memoryview``/``array.array``
            (→ the typed array of its kind), int of any size, float, datetime, dict (str keys
            → object, other keys → Map), list/tuple, set/frozenset.
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
