"""Values that cross the sandbox boundary, and their wire format (the "value message").

A value message is ``u8 flags | u32 json_len | json | u32 nblobs | (u32 len, bytes)*``, all
little-endian. Plain JSON travels as JSON (decoded by the C ``json`` module, fast). Everything
JSON cannot say is *tagged*: an object whose only key is ``"\\0"`` holds ``[tag, payload]``.
Flag bit 0 says tags may be present, so untagged messages skip the object hook entirely.

=========  ============================  ==================================
tag        JavaScript                    Python
=========  ============================  ==================================
``u``      ``undefined``                 :data:`UNDEFINED`
``b``      ``Uint8Array``/``ArrayBuffer`` ``bytes`` (payload: blob index)
``n``      ``BigInt``                    ``int``
``d``      ``Date``                      ``datetime`` (UTC); invalid → ``None``
``m``      ``Map``                       ``dict``
``s``      ``Set``                       ``frozenset``
``f``      ``NaN``/``±Infinity``/``-0``  ``float``
``t``      a string of ≥ 1 KiB           ``str`` (payload: blob index, UTF-8)
=========  ============================  ==================================

Object keys starting with ``"\\0"`` carry one extra leading ``"\\0"`` on the wire. Bytes travel
as raw blobs, never base64. Host functions inside namespaces are sent as ``{"\\x02fn": [id,
is_async, name]}`` objects that the guest turns into callable closures.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final, final

from quickjail.sandbox._abi import FN_KEY, MSG_TAGGED
from quickjail.sandbox.errors import TransferError
from quickjail.sandbox.host import HostFunction

__all__ = ["UNDEFINED", "TransferError", "Undefined", "decode", "encode"]

_U32 = struct.Struct("<I")
_HEAD = struct.Struct("<BI")
_SAFE_INT = 2**53 - 1
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
MAX_DEPTH: Final = 128
TEXT_BLOB_MIN: Final = 1024


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


def _date(ms: float | None) -> _dt.datetime | None:
    if ms is None:
        return None
    try:
        return _EPOCH + _dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None


def _map(entries: list[list[Any]]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, value in entries:
        try:
            out[key] = value
        except TypeError:
            raise TransferError("a Map key that is an object cannot be transferred") from None
    return out


def _set(items: list[Any]) -> frozenset[Any]:
    try:
        return frozenset(items)
    except TypeError:
        raise TransferError("a Set member that is an object cannot be transferred") from None


_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}

_TAGS: dict[str, Callable[[Any], Any]] = {
    "u": lambda _: UNDEFINED,
    "n": lambda hexdigits: int(hexdigits, 16),
    "d": _date,
    "m": _map,
    "s": _set,
    "f": _FLOATS.__getitem__,
}


def decode(buf: bytes | memoryview) -> Any:
    """Decode a value message written by the guest.

    Raises:
        TransferError: the message is malformed or holds what Python cannot represent.
    """
    try:
        flags, jlen = _HEAD.unpack_from(buf, 0)
        text = bytes(buf[5 : 5 + jlen])
        pos = 5 + jlen
        (nblobs,) = _U32.unpack_from(buf, pos)
        pos += 4
        view = memoryview(buf)
        blobs: list[memoryview] = []
        for _ in range(nblobs):
            (n,) = _U32.unpack_from(buf, pos)
            pos += 4
            if pos + n > len(buf):
                raise TransferError("malformed value message")
            blobs.append(view[pos : pos + n])
            pos += n
        if not flags & MSG_TAGGED:
            return json.loads(text)
        tags = dict(_TAGS)
        tags["b"] = lambda i: bytes(blobs[i])
        tags["t"] = lambda i: str(blobs[i], "utf-8", "replace")

        def hook(obj: dict[str, Any]) -> Any:
            if len(obj) == 1 and "\0" in obj:
                tag, *rest = obj["\0"]
                return tags[tag](rest[0] if rest else None)
            if any(k.startswith("\0") for k in obj):
                return {(k[1:] if k.startswith("\0") else k): v for k, v in obj.items()}
            return obj

        return json.loads(text, object_hook=hook)
    except TransferError:
        raise
    except (struct.error, ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
        raise TransferError(f"malformed value message ({type(exc).__name__})") from None


class _Encoder:
    __slots__ = ("blobs", "functions", "tagged")

    def __init__(self, functions: Callable[[HostFunction], int] | None):
        self.blobs: list[bytes] = []
        self.tagged = False
        self.functions = functions

    def tag(self, tag: str, payload: Any = None) -> dict[str, Any]:
        self.tagged = True
        return {"\0": [tag] if payload is None else [tag, payload]}

    def walk(self, value: Any, path: str, depth: int, seen: set[int]) -> Any:
        if isinstance(value, str):
            if len(value) < TEXT_BLOB_MIN:
                return value
            # long text travels as a raw UTF-8 blob: no JSON escaping on either side
            self.blobs.append(value.encode("utf-8", "surrogatepass"))
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
            self.blobs.append(bytes(value))
            return self.tag("b", len(self.blobs) - 1)
        if isinstance(value, _dt.datetime):
            when = value if value.tzinfo else value.replace(tzinfo=_dt.UTC)
            return self.tag("d", (when - _EPOCH) / _dt.timedelta(milliseconds=1))
        if depth >= MAX_DEPTH:
            raise TransferError(f"cannot transfer a value nested deeper than {MAX_DEPTH} at {path}")
        if isinstance(value, HostFunction) and self.functions is not None:
            # the JS name is the key it is bound to, never the Python function's own name
            name = path.rsplit(".", 1)[-1].strip("[]'\"")
            fid = self.functions(value)
            return {FN_KEY: [fid, value.is_async, name if name.isidentifier() else ""]}
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


def _encode_scalar(value: Any) -> bytes | None:
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
        TransferError: the value (or something inside it) cannot be transferred.
    """
    fast = _encode_scalar(value)
    if fast is not None:
        return fast
    enc = _Encoder(functions)
    tree = enc.walk(value, path, 0, set())
    text = _dumps(tree)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        # lone surrogates: let JSON escapes carry them exactly
        data = _dumps_ascii(tree).encode("ascii")
    parts = [
        _HEAD.pack(MSG_TAGGED if enc.tagged else 0, len(data)),
        data,
        _U32.pack(len(enc.blobs)),
    ]
    for blob in enc.blobs:
        parts.append(_U32.pack(len(blob)))
        parts.append(blob)
    return b"".join(parts)
