"""The Python types of JavaScript values that Python has no type for: ``undefined``, and
typed arrays, ``ArrayBuffer`` and ``DataView``.

A ``Uint8Array`` crosses as ``bytes`` (most code uses it). Every other typed-array kind, an
``ArrayBuffer`` and a ``DataView`` cross as a :class:`TypedArray`: the kind's JavaScript name
and the bytes it views (little-endian elements, as on the wire), so a value read from a run
goes back to JavaScript as the same kind with the same contents. Python buffers with a numeric
format (``memoryview``, ``array.array``) go to JavaScript as the kind their format names.
"""

from __future__ import annotations

import array
import struct
import sys
from typing import Any, Final, final

from quickjail.sandbox.errors import TransferError

__all__ = [
    "ELEMENT_SIZES",
    "KINDS",
    "UNDEFINED",
    "TypedArray",
    "Undefined",
    "buffer_kind",
    "little_endian",
]


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

KINDS: Final = {
    "Int8Array": "b",
    "Uint8Array": "B",
    "Uint8ClampedArray": "B",
    "Int16Array": "h",
    "Uint16Array": "H",
    "Int32Array": "i",
    "Uint32Array": "I",
    "Float16Array": "e",
    "Float32Array": "f",
    "Float64Array": "d",
    "BigInt64Array": "q",
    "BigUint64Array": "Q",
    "ArrayBuffer": "B",
    "DataView": "B",
}
"""Each kind's JavaScript name and the ``struct`` format of one of its elements."""
ELEMENT_SIZES: Final = {kind: struct.calcsize(fmt) for kind, fmt in KINDS.items()}
# a buffer's format letter and item size -> the kind that holds its elements
_BY_FORMAT: Final = {
    **{(c, n): k for c in "bhilqn" for n, k in ((1, "Int8Array"), (2, "Int16Array"))},
    **{(c, n): k for c in "bhilqn" for n, k in ((4, "Int32Array"), (8, "BigInt64Array"))},
    **{(c, n): k for c in "BHILQN" for n, k in ((1, "Uint8Array"), (2, "Uint16Array"))},
    **{(c, n): k for c in "BHILQN" for n, k in ((4, "Uint32Array"), (8, "BigUint64Array"))},
    ("c", 1): "Uint8Array",
    ("e", 2): "Float16Array",
    ("f", 4): "Float32Array",
    ("d", 8): "Float64Array",
}


def _swapped(data: bytes, size: int) -> bytes:
    """``data`` with the bytes of each ``size``-byte element reversed (linear, C-speed)."""
    if size == 1:
        return data
    out = bytearray(len(data))
    for i in range(size):
        out[i::size] = data[size - 1 - i :: size]
    return bytes(out)


def buffer_kind(view: memoryview) -> tuple[str, bool]:
    """The kind a buffer's format names, and whether its elements are big-endian.

    Raises:
        TransferError: the format is not one number per element (``?``, ``P``, a struct).
    """
    fmt = view.format
    big = fmt[:1] in (">", "!") or (fmt[:1] in ("", "@", "=") and sys.byteorder == "big")
    letter = fmt[1:] if fmt[:1] in ("@", "=", "<", ">", "!") else fmt
    kind = _BY_FORMAT.get((letter, view.itemsize))
    if kind is None:
        raise TransferError(
            f"cannot transfer a buffer of format {fmt!r}: only one number per element "
            "(b B h H i I l L q Q n N e f d c) has a typed-array kind; cast it or use bytes"
        )
    if letter == "c" or len(letter) != 1:
        big = False
    return kind, big


def little_endian(value: memoryview | array.array[Any]) -> tuple[str, bytes]:
    """A numeric buffer's kind and its bytes as little-endian elements (copied once).

    Raises:
        TransferError: the buffer's format has no typed-array kind.
    """
    view = value if isinstance(value, memoryview) else memoryview(value)
    kind, big = buffer_kind(view)
    data = view.tobytes()
    return kind, _swapped(data, view.itemsize) if big else data


@final
class TypedArray:
    """A JavaScript typed array (other than ``Uint8Array``), ``ArrayBuffer`` or ``DataView``.

    ``kind`` is the JavaScript constructor's name (``"Float64Array"``, ``"ArrayBuffer"``...)
    and ``data`` the bytes it views, elements little-endian: a subarray is only its own
    bytes. Immutable, hashable and picklable; equal when kind and bytes are. A run's
    ``Uint8Array`` arrives as ``bytes``; ``TypedArray("Uint8Array", ...)`` may be sent.

    Example::

        TypedArray("Float32Array", array.array("f", [0.5, 2.0]).tobytes())
        TypedArray.from_buffer(array.array("i", [1, -2]))      # an Int32Array
        result.memoryview().tolist()                           # the elements
    """

    __slots__ = ("data", "kind")
    kind: str
    data: bytes

    def __init__(self, kind: str, data: bytes | bytearray | memoryview = b"") -> None:
        """Check ``kind`` and that ``data`` holds a whole number of its elements.

        Raises:
            ValueError: an unknown kind, or a length that is not a whole number of elements.
        """
        size = ELEMENT_SIZES.get(kind) if type(kind) is str else None
        if size is None:
            raise ValueError(f"unknown typed-array kind {kind!r} (one of {', '.join(KINDS)})")
        raw = bytes(data)
        if len(raw) % size:
            raise ValueError(
                f"a {kind} of {len(raw)} bytes: not a whole number of {size}-byte elements"
            )
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "data", raw)

    @classmethod
    def from_buffer(
        cls, buffer: memoryview | array.array[Any] | bytes | bytearray, kind: str | None = None
    ) -> TypedArray:
        """A typed array from a Python buffer: its kind from the buffer's format (``"i"`` →
        ``Int32Array``, ``"d"`` → ``Float64Array``...) unless ``kind`` says which; big-endian
        formats (``">i"``) are swapped to JavaScript's little-endian order.

        Raises:
            TransferError: the buffer's format has no typed-array kind (and no ``kind``).
            ValueError: ``kind`` is unknown or its elements do not fill the buffer.
        """
        view = memoryview(buffer)
        if kind is not None:
            return cls(kind, view.tobytes())
        found, data = little_endian(view)
        return cls(found, data)

    @property
    def itemsize(self) -> int:
        """The bytes of one element (1 for ``ArrayBuffer`` and ``DataView``)."""
        return ELEMENT_SIZES[self.kind]

    @property
    def format(self) -> str:
        """The ``struct`` format of one element (``"B"`` for ``ArrayBuffer`` and ``DataView``)."""
        return KINDS[self.kind]

    def __len__(self) -> int:
        """The number of elements (bytes, for ``ArrayBuffer`` and ``DataView``)."""
        return len(self.data) // ELEMENT_SIZES[self.kind]

    def __bytes__(self) -> bytes:
        """The bytes it views, as on the wire (``bytes(value)``)."""
        return self.data

    def memoryview(self) -> memoryview:
        """A read-only view of the elements, cast to :attr:`format` (``view.tolist()``).

        Raises:
            ValueError: a ``Float16Array`` before Python 3.12 (memoryview has no ``"e"``
                cast there): use :meth:`tolist`.
        """
        data = self.data if sys.byteorder == "little" else _swapped(self.data, self.itemsize)
        view: Any = memoryview(data)  # typeshed types cast() by literal formats only
        try:
            cast: memoryview = view.cast(self.format)
            return cast
        except ValueError:
            raise ValueError(
                f"this Python has no memoryview of {self.kind}: use tolist()"
            ) from None

    def tolist(self) -> list[Any]:
        """The elements as Python ints or floats."""
        return list(struct.unpack(f"<{len(self)}{self.format}", self.data))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("TypedArray is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("TypedArray is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypedArray):
            return NotImplemented
        return self.kind == other.kind and self.data == other.data

    def __hash__(self) -> int:
        return hash((self.kind, self.data))

    def __repr__(self) -> str:
        return f"TypedArray({self.kind!r}, {self.data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TypedArray, (self.kind, self.data))

    @classmethod
    def _trusted(cls, kind: str, data: bytes) -> TypedArray:
        """A typed array whose kind and length the caller has checked (the decoder)."""
        self = object.__new__(cls)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "data", data)
        return self
