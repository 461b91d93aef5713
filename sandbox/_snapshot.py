"""Bake an initialized QuickJS runtime into the guest module (a pre-initialized snapshot).

The guest's ``qj_init`` builds the runtime, the context and the bootstrap (~300 µs). Doing that
once at build time and rewriting the module so its data segments *are* the memory after
``qj_init`` makes every fresh instance ready at instantiation: wasmtime maps the data as a
copy-on-write image, so a new sandbox costs tens of microseconds.

The rewrite touches three sections: memory (initial size = size after init), data (one active
segment per run of non-zero bytes) and data count. Globals are checked, not patched: the only
mutable global of the module must be the stack pointer, which is back at its initial value once
``qj_init`` has returned. The stack region below it is dead after the call and is left zero.
"""

from __future__ import annotations

from collections.abc import Iterator

import wasmtime

_SECTION_MEMORY = 5
_SECTION_GLOBAL = 6
_SECTION_DATA = 11
_SECTION_DATACOUNT = 12
_PAGE = 65536
# Runs of zeros shorter than this stay inside one segment (fewer, larger segments).
_MERGE_GAP = 512


class SnapshotError(RuntimeError):
    """The module does not have the shape the snapshot relies on."""


def _uleb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, pos


def _sleb(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            if b & 0x40:
                result -= 1 << shift
            return result, pos


def _enc_uleb(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _enc_sleb(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        done = (value == 0 and not b & 0x40) or (value == -1 and b & 0x40)
        out.append(b if done else b | 0x80)
        if done:
            return bytes(out)


def _sections(wasm: bytes) -> Iterator[tuple[int, bytes]]:
    if wasm[:8] != b"\0asm\x01\0\0\0":
        raise SnapshotError("not a wasm module")
    pos = 8
    while pos < len(wasm):
        sid = wasm[pos]
        size, pos = _uleb(wasm, pos + 1)
        yield sid, wasm[pos : pos + size]
        pos += size


def _section(sid: int, payload: bytes) -> bytes:
    return bytes([sid]) + _enc_uleb(len(payload)) + payload


def _stack_pointer_init(globals_payload: bytes) -> int:
    count, pos = _uleb(globals_payload, 0)
    mutable: list[int] = []
    for _ in range(count):
        valtype, mut = globals_payload[pos], globals_payload[pos + 1]
        pos += 2
        op = globals_payload[pos]
        pos += 1
        if op == 0x41:  # i32.const
            value, pos = _sleb(globals_payload, pos)
        elif op == 0x42:  # i64.const
            value, pos = _sleb(globals_payload, pos)
        else:
            raise SnapshotError(f"unsupported global initializer opcode {op:#x}")
        if globals_payload[pos] != 0x0B:
            raise SnapshotError("unsupported global initializer expression")
        pos += 1
        if mut and valtype == 0x7F:
            mutable.append(value)
        elif mut:
            raise SnapshotError("unexpected mutable non-i32 global")
    if len(mutable) != 1:
        raise SnapshotError(f"expected exactly one mutable global, found {len(mutable)}")
    return mutable[0]


def _memory_section(payload: bytes, pages: int) -> bytes:
    count, pos = _uleb(payload, 0)
    if count != 1:
        raise SnapshotError("expected exactly one memory")
    flags = payload[pos]
    _, after = _uleb(payload, pos + 1)
    rest = payload[after:]
    if flags not in (0, 1):
        raise SnapshotError(f"unsupported memory flags {flags}")
    return _enc_uleb(1) + bytes([flags]) + _enc_uleb(pages) + rest


def _data_segments(image: bytes | bytearray, start: int) -> list[tuple[int, bytes]]:
    """Split the non-zero bytes of image[start:] into segments."""
    view = memoryview(image)
    segments: list[tuple[int, bytes]] = []
    n = len(image)
    pos = start
    while pos < n:
        # skip zero pages fast
        if pos % 4096 == 0 and pos + 4096 <= n and not any(view[pos : pos + 4096]):
            pos += 4096
            continue
        if image[pos] == 0:
            pos += 1
            continue
        seg_start = pos
        zeros = 0
        while pos < n:
            if image[pos]:
                zeros = 0
            else:
                zeros += 1
            pos += 1
            if zeros >= _MERGE_GAP:
                break
        seg_end = pos - zeros
        segments.append((seg_start, bytes(view[seg_start:seg_end])))
    return segments


def _data_section(segments: list[tuple[int, bytes]]) -> bytes:
    out = bytearray(_enc_uleb(len(segments)))
    for offset, data in segments:
        out += b"\x00\x41" + _enc_sleb(offset) + b"\x0b" + _enc_uleb(len(data)) + data
    return bytes(out)


def _stub_imports(store: wasmtime.Store, module: wasmtime.Module) -> list[wasmtime.Func]:
    """Imports that fail loudly: qj_init must not call the host except to report OOM."""
    out: list[wasmtime.Func] = []
    for imp in module.imports:
        ty = imp.type
        if not isinstance(ty, wasmtime.FuncType):
            raise SnapshotError(f"unexpected non-function import {imp.module}.{imp.name}")
        results = ty.results

        def stub(
            *args: object,
            _name: str = f"{imp.module}.{imp.name}",
            _results: list[wasmtime.ValType] = results,
        ) -> object:
            if _name in ("wasi_snapshot_preview1.clock_time_get",):
                return 0
            if _name == "wasi_snapshot_preview1.random_get":
                return 0
            raise SnapshotError(f"qj_init called the host import {_name}")

        out.append(wasmtime.Func(store, ty, stub))
    return out


def stack_top(wasm: bytes) -> int:
    """The stack pointer's initial value: the shadow stack is ``[0, stack_top)`` (the guest is
    linked stack-first, which :func:`snapshot` relies on too), dead whenever no call runs."""
    for sid, payload in _sections(wasm):
        if sid == _SECTION_GLOBAL:
            return _stack_pointer_init(payload)
    raise SnapshotError("the module has no global section")


def snapshot(raw: bytes) -> bytes:
    """Return ``raw`` rewritten so a fresh instance starts with ``qj_init`` already done."""
    engine = wasmtime.Engine()
    module = wasmtime.Module(engine, raw)
    store = wasmtime.Store(engine)
    instance = wasmtime.Instance(store, module, _stub_imports(store, module))
    exports = instance.exports(store)
    init = exports["_initialize"]
    qj_init = exports["qj_init"]
    memory = exports["memory"]
    assert isinstance(init, wasmtime.Func) and isinstance(qj_init, wasmtime.Func)
    assert isinstance(memory, wasmtime.Memory)
    init(store)
    status = qj_init(store)
    if status != 0:
        raise SnapshotError(f"qj_init returned {status}")
    pages = memory.size(store)
    image = memory.read(store, 0, pages * _PAGE)

    sections = list(_sections(raw))
    by_id = {sid: payload for sid, payload in sections}
    stack_top = _stack_pointer_init(by_id[_SECTION_GLOBAL])
    segments = _data_segments(image, stack_top)

    out = bytearray(raw[:8])
    for sid, payload in sections:
        if sid == _SECTION_MEMORY:
            payload = _memory_section(payload, pages)
        elif sid == _SECTION_DATA:
            payload = _data_section(segments)
        elif sid == _SECTION_DATACOUNT:
            payload = _enc_uleb(len(segments))
        out += _section(sid, payload)
    return bytes(out)
