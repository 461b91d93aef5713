"""Typed arrays, ArrayBuffer and DataView cross the boundary as themselves, both ways.

A Uint8Array is ``bytes``; every other kind (and ArrayBuffer, DataView) is a
:class:`~quickjail.sandbox.TypedArray` of its kind and viewed bytes, so a value goes back to
JavaScript as the same kind with the same contents; a numeric ``memoryview``/``array.array``
goes as the kind its format names. Hostile wire data is refused, and the bytes count against
the decode budget and the transfer cap like ``bytes``.
"""

from __future__ import annotations

import array
import json
import pickle
import struct
import sys
from typing import Any

import pytest

import quickjail
from quickjail import bridge
from quickjail.sandbox import TransferError, TypedArray, to_json_safe
from quickjail.sandbox._values import MAX_TRANSFER_BYTES, DecodeBudget, decode, encode

pytestmark = pytest.mark.usefixtures("sync_path")

# kind, the JavaScript elements, their little-endian struct format
KINDS: list[tuple[str, str, str]] = [
    ("Int8Array", "[-128, 0, 127]", "<3b"),
    ("Uint8ClampedArray", "[0, 128, 255]", "<3B"),
    ("Int16Array", "[-32768, 1, 32767]", "<3h"),
    ("Uint16Array", "[0, 258, 65535]", "<3H"),
    ("Int32Array", "[-2147483648, 7, 2147483647]", "<3i"),
    ("Uint32Array", "[0, 16909060, 4294967295]", "<3I"),
    ("Float16Array", "[0.5, -2, 65504]", "<3e"),
    ("Float32Array", "[0.5, -2.25, 1e30]", "<3f"),
    ("Float64Array", "[0.1, -0, 1e300]", "<3d"),
    ("BigInt64Array", "[-(2n ** 63n), 1n, 2n ** 63n - 1n]", "<3q"),
    ("BigUint64Array", "[0n, 1n, 2n ** 64n - 1n]", "<3Q"),
]
ELEMENTS: dict[str, list[Any]] = {
    "Int8Array": [-128, 0, 127],
    "Uint8ClampedArray": [0, 128, 255],
    "Int16Array": [-32768, 1, 32767],
    "Uint16Array": [0, 258, 65535],
    "Int32Array": [-(2**31), 7, 2**31 - 1],
    "Uint32Array": [0, 16909060, 2**32 - 1],
    "Float16Array": [0.5, -2.0, 65504.0],
    "Float32Array": [0.5, -2.25, struct.unpack("<f", struct.pack("<f", 1e30))[0]],
    "Float64Array": [0.1, -0.0, 1e300],
    "BigInt64Array": [-(2**63), 1, 2**63 - 1],
    "BigUint64Array": [0, 1, 2**64 - 1],
}
ECHO = "export function echo(v) { return v }"
DESCRIBE = """export function describe(v) {
  const kind = v?.constructor?.name;
  const items = ArrayBuffer.isView(v) && !(v instanceof DataView) ? [...v].map(String) : null;
  return { kind, items, byteLength: v.byteLength, byteOffset: v.byteOffset ?? 0,
    bufferLength: v.buffer ? v.buffer.byteLength : v.byteLength };
}"""


def ok(src: str, **kw: Any) -> Any:
    r = quickjail.run_code_sync(src, timeout=60, **kw)
    assert r.status == "success", r.error
    return r.result


def typed(kind: str, fmt: str) -> TypedArray:
    return TypedArray(kind, struct.pack(fmt, *ELEMENTS[kind]))


@pytest.mark.parametrize(("kind", "js", "fmt"), KINDS, ids=[k[0] for k in KINDS])
def test_every_typed_array_kind_arrives_as_a_typed_array_of_its_kind(
    kind: str, js: str, fmt: str
) -> None:
    got = ok(f"export default new {kind}({js})")
    assert got == typed(kind, fmt)
    assert got.kind == kind and len(got) == 3
    assert got.tolist() == ELEMENTS[kind]


@pytest.mark.parametrize(("kind", "js", "fmt"), KINDS, ids=[k[0] for k in KINDS])
def test_every_kind_round_trips_python_to_javascript_to_python(
    kind: str, js: str, fmt: str
) -> None:
    value = typed(kind, fmt)
    seen = ok(DESCRIBE, execute={"fn": "describe", "args": [value]})
    assert seen["kind"] == kind
    assert seen["items"] == ok(f"export default [...new {kind}({js})].map(String)")
    assert ok(ECHO, execute={"fn": "echo", "args": [value]}) == value
    # and JavaScript -> Python -> JavaScript: the program's own value comes back as itself
    back = ok(
        f"""export default async function () {{
          const mine = new {kind}({js});
          const back = await echo(mine);
          return [back.constructor.name, [...back].map(String).join() === [...mine].join()];
        }}""",
        globals={"echo": lambda v: v},
    )
    assert back == [kind, True]


def test_array_buffer_and_data_view_cross_as_themselves() -> None:
    got = ok("export default [new Uint8Array([1, 2, 3]).buffer, new DataView(new ArrayBuffer(2))]")
    assert got == [TypedArray("ArrayBuffer", b"\x01\x02\x03"), TypedArray("DataView", b"\0\0")]
    seen = ok(
        "export function f(a, d) { return [a.constructor.name, a.byteLength,"
        " d.constructor.name, d.getUint16(0, true)] }",
        execute={"fn": "f", "args": [got[0], TypedArray("DataView", b"\x34\x12")]},
    )
    assert seen == ["ArrayBuffer", 3, "DataView", 0x1234]
    assert bytes(got[0]) == b"\x01\x02\x03"  # bytes() of any of them is its bytes


def test_a_uint8array_stays_bytes_both_ways() -> None:
    assert ok("export default new Uint8Array([1, 2])") == b"\x01\x02"
    seen = ok(DESCRIBE, execute={"fn": "describe", "args": [bytearray(b"\x05")]})
    assert seen["kind"] == "Uint8Array" and seen["items"] == ["5"]


def test_only_the_viewed_bytes_of_a_subarray_cross() -> None:
    got = ok(
        """const f = new Float64Array([1, 2, 3, 4]);
        const rab = new ArrayBuffer(4, { maxByteLength: 16 });
        const grows = new Int16Array(rab); rab.resize(8);
        export default [f.subarray(1, 3), new DataView(f.buffer, 9, 2),
          new Uint8Array(f.buffer, 8, 1), new Int32Array(f.buffer, 8, 0), grows]"""
    )
    assert got[0] == TypedArray("Float64Array", struct.pack("<2d", 2, 3))
    assert got[1] == TypedArray("DataView", struct.pack("<d", 2)[1:3])
    assert got[2] == struct.pack("<d", 2)[:1]
    assert got[3] == TypedArray("Int32Array", b"")
    assert got[4] == TypedArray("Int16Array", bytes(8))  # a length-tracking view: its length now


@pytest.mark.parametrize("kind", [k[0] for k in KINDS] + ["ArrayBuffer", "DataView"], ids=str)
def test_an_empty_value_of_every_kind_crosses_both_ways(kind: str) -> None:
    ctor = "new ArrayBuffer(0)" if kind == "ArrayBuffer" else f"new {kind}(new ArrayBuffer(0))"
    assert ok(f"export default {ctor}") == TypedArray(kind)
    seen = ok(DESCRIBE, execute={"fn": "describe", "args": [TypedArray(kind)]})
    assert seen["kind"] == kind and seen["byteLength"] == 0


@pytest.mark.parametrize(
    ("value", "kind", "items"),
    [
        (array.array("h", [-1, 2]), "Int16Array", ["-1", "2"]),
        (array.array("d", [0.5]), "Float64Array", ["0.5"]),
        (array.array("Q", [2**64 - 1]), "BigUint64Array", [str(2**64 - 1)]),
        (memoryview(struct.pack("<2i", 7, -7)).cast("i"), "Int32Array", ["7", "-7"]),
        (memoryview(struct.pack(">2H", 1, 2)).cast("B").cast("H"), "Uint16Array", None),
        (memoryview(bytes(4)).cast("f"), "Float32Array", ["0"]),
        (memoryview(b"\x01\x02"), "Uint8Array", ["1", "2"]),
    ],
    ids=lambda v: repr(v)[:24],
)
def test_a_numeric_python_buffer_goes_as_the_kind_of_its_format(
    value: Any, kind: str, items: list[str] | None
) -> None:
    seen = ok(DESCRIBE, execute={"fn": "describe", "args": [value]})
    assert seen["kind"] == kind
    if items is not None:
        assert seen["items"] == items


def test_a_big_endian_buffer_is_swapped_to_javascript_order() -> None:
    value = TypedArray.from_buffer(memoryview(struct.pack(">2h", 1, -2)).cast("B"), "Int16Array")
    assert value.tolist() == [256, -257]  # bytes as given: the kind says little-endian
    swapped = TypedArray.from_buffer(array.array("h", [1, -2]))
    assert swapped == TypedArray("Int16Array", struct.pack("<2h", 1, -2))
    assert swapped.memoryview().tolist() == [1, -2]


def test_a_buffer_whose_format_has_no_kind_is_refused_naming_it() -> None:
    with pytest.raises(TransferError, match=r"format '\?'.* at execute\.args\[0\]"):
        quickjail.run_code_sync(ECHO, execute={"fn": "echo", "args": [memoryview(b"\0").cast("?")]})


def test_host_functions_take_and_give_typed_arrays() -> None:
    got: list[Any] = []

    def take(a: Any, b: TypedArray) -> Any:
        got.extend([a, b])
        return [array.array("i", [1, -1]), TypedArray("ArrayBuffer", b"xy"), a]

    result = ok(
        """export default async function () {
          const [i32, buf, back] = await take(new Float32Array([1.5]), new Uint16Array([9]));
          return [i32.constructor.name, [...i32], buf.constructor.name, buf.byteLength,
                  back.constructor.name, back[0]];
        }""",
        globals={"take": take},
    )
    assert got == [
        TypedArray("Float32Array", struct.pack("<f", 1.5)),
        TypedArray("Uint16Array", struct.pack("<H", 9)),
    ]
    assert result == ["Int32Array", [1, -1], "ArrayBuffer", 2, "Float32Array", 1.5]


def test_a_host_function_annotated_typed_array_refuses_other_values() -> None:
    def total(a: TypedArray) -> int:
        return sum(a.tolist())

    src = """export default async function (v) {
      try { return await total(v) } catch (e) { return e.name } }"""
    assert ok(src, execute={"args": [array.array("i", [2, 3])]}, globals={"total": total}) == 5
    assert ok(src, execute={"args": [[2, 3]]}, globals={"total": total}) == "TypeError"


@pytest.mark.parametrize(
    ("text", "blobs", "why"),
    [
        ('{"\\u0000":["a",["Int32Array",0]]}', (b"12345",), "not a whole number of 4-byte"),
        ('{"\\u0000":["a",["Int24Array",0]]}', (b"123",), "unknown typed-array kind"),
        ('{"\\u0000":["a",["Uint8Array",0]]}', (b"1",), "unknown typed-array kind"),
        ('{"\\u0000":["a",["Int8Array"]]}', (b"1",), "typed array"),
        ('{"\\u0000":["a",[3,0]]}', (b"1",), "typed array"),
        ('{"\\u0000":["a",["Int8Array",1]]}', (b"1",), "blob index"),
        (
            '[{"\\u0000":["a",["Int8Array",0]]},{"\\u0000":["a",["Int8Array",0]]}]',
            (b"1",),
            "reused",
        ),
    ],
)
def test_hostile_typed_array_messages_are_refused(
    text: str, blobs: tuple[bytes, ...], why: str
) -> None:
    data = text.encode()
    msg = struct.pack("<BI", 1, len(data)) + data + struct.pack("<I", len(blobs))
    msg += b"".join(struct.pack("<I", len(b)) + b for b in blobs)
    with pytest.raises(TransferError, match=why):
        decode(msg)


def test_a_typed_array_claiming_more_bytes_than_its_message_holds_is_refused() -> None:
    data = b'{"\\u0000":["a",["Float64Array",0]]}'
    msg = struct.pack("<BI", 1, len(data)) + data + struct.pack("<II", 1, 2**31) + bytes(8)
    with pytest.raises(TransferError, match="malformed"):
        decode(msg)


def test_typed_array_bytes_count_against_the_decode_budget_like_bytes() -> None:
    message = encode(TypedArray("Float64Array", bytes(8 * 1000)))
    decode(message, budget=DecodeBudget(10_000))
    with pytest.raises(TransferError, match="decode budget"):
        decode(message, budget=DecodeBudget(8_000))


def test_typed_arrays_over_the_transfer_cap_are_refused_before_copying() -> None:
    big = memoryview(bytearray(MAX_TRANSFER_BYTES + 8)).cast("d")
    with pytest.raises(TransferError, match="transfer cap"):
        encode(big)
    r = quickjail.run_code_sync(
        "export default new Float64Array(2 ** 23 + 1)", memory_limit_bytes=256 * 2**20, timeout=60
    )
    assert r.status == "error" and r.error is not None and "size cap" in r.error.message


def test_a_typed_array_is_immutable_hashable_picklable_and_checked() -> None:
    value = TypedArray("Uint32Array", struct.pack("<2I", 1, 2))
    assert pickle.loads(pickle.dumps(value)) == value
    assert {value: 1}[TypedArray("Uint32Array", struct.pack("<2I", 1, 2))] == 1
    assert value != TypedArray("Int32Array", value.data)
    with pytest.raises(AttributeError):
        value.kind = "Int32Array"  # type: ignore[misc]
    with pytest.raises(ValueError, match="whole number"):
        TypedArray("Float64Array", bytes(7))
    with pytest.raises(ValueError, match="unknown"):
        TypedArray("Int128Array", b"")


def test_to_json_safe_writes_a_typed_array_as_its_kind_and_base64() -> None:
    got = ok("export default { f: new Int16Array([1]), u: new Uint8Array([1]) }")
    safe = to_json_safe(got)
    assert safe == {"f": {"$typedarray": "Int16Array", "$bytes": "AQA="}, "u": {"$bytes": "AQ=="}}
    json.dumps(safe)


def test_a_paused_call_carries_typed_arrays_through_its_continuation() -> None:
    key = b"k" * 32

    def approve(v: Any) -> Any:
        raise bridge.Pause({"seen": v})

    src = """export default async function () {
      const back = await approve(new BigInt64Array([-5n]));
      return [back.constructor.name, back[0]];
    }"""
    r = quickjail.run_code_sync(src, globals={"approve": approve}, timeout=60)
    assert r.status == "paused" and r.continuation is not None
    assert r.paused[0].info == {"seen": TypedArray("BigInt64Array", struct.pack("<q", -5))}
    answer = TypedArray("Float32Array", struct.pack("<f", 0.25))
    again = quickjail.resume_sync(
        r.continuation.seal(key),
        key=key,
        answers={r.paused[0].call_id: answer},
        globals={"approve": approve},
        timeout=60,
    )
    assert again.status == "success", again
    assert again.result == ["Float32Array", 0.25]


def test_a_pool_run_carries_typed_arrays_both_ways() -> None:
    from quickjail.executors import ProcessPool

    value = TypedArray("Uint16Array", struct.pack("<2H", 1, 65535))
    with ProcessPool(workers=1) as pool:
        r = bridge.run_code_sync(
            """export default async function (v) {
              const more = await twice(v);
              return [v, more, new DataView(more.buffer, 1, 2)];
            }""",
            execute={"args": [value]},
            globals={"twice": lambda v: array.array("H", v.tolist() * 2)},
            executor=pool,
            timeout=60,
        )
    assert r.status == "success", r.error
    doubled = struct.pack("<4H", 1, 65535, 1, 65535)
    assert r.result == [
        value,
        TypedArray("Uint16Array", doubled),
        TypedArray("DataView", doubled[1:3]),
    ]


def test_a_secret_inside_a_typed_array_is_redacted_like_bytes() -> None:
    from quickjail.runtime._secrets import Redactor

    redactor = Redactor(["hunter22"])
    got = ok("export default new TextEncoder().encode('pw=hunter22!').buffer")
    assert got.kind == "ArrayBuffer"
    clean = redactor.value({"buf": got, "wide": TypedArray("Int32Array", b"hunter22" + bytes(4))})
    assert b"hunter22" not in clean["buf"].data and clean["buf"].kind == "ArrayBuffer"
    assert b"hunter22" not in clean["wide"].data and len(clean["wide"].data) % 4 == 0


def test_a_log_argument_typed_array_arrives_as_itself_and_a_detached_buffer_as_empty() -> None:
    r = quickjail.run_code_sync(
        """const b = new ArrayBuffer(4), u = new Int16Array(b);
        structuredClone(b, { transfer: [b] });
        console.log(new Int16Array([3]), b, new DataView(new ArrayBuffer(2)));
        export default [b, u]""",
        timeout=60,
    )
    assert r.status == "success", r.error
    assert r.logs[0].args == [
        TypedArray("Int16Array", b"\x03\x00"),
        TypedArray("ArrayBuffer"),
        TypedArray("DataView", b"\0\0"),
    ]
    assert r.result == [TypedArray("ArrayBuffer"), TypedArray("Int16Array")]
    view = quickjail.run_code_sync(
        """const b = new ArrayBuffer(4), d = new DataView(b); b.transfer();
        export default d""",
        timeout=60,
    )
    assert view.status == "error" and view.error is not None and view.error.name == "TypeError"


def test_memoryview_casts_to_the_element_format_or_says_to_use_tolist() -> None:
    assert TypedArray("Int16Array", struct.pack("<2h", 1, -1)).memoryview().tolist() == [1, -1]
    assert TypedArray("ArrayBuffer", b"\x01\x02").memoryview().tolist() == [1, 2]
    half = TypedArray("Float16Array", struct.pack("<e", 0.5))
    assert half.tolist() == [0.5]
    if sys.version_info >= (3, 12):
        assert half.memoryview().tolist() == [0.5]
    else:
        with pytest.raises(ValueError, match="tolist"):
            half.memoryview()
