"""Byte streams (ReadableStream type "bytes") behave as WHATWG Streams says: BYOB reads fill the
reader's own buffer, which is transferred, a default reader gets Uint8Array chunks, and tee
gives each branch its own copy.

Each case is the body of an async function; the expected values are what Node 20 gives.
"""

from __future__ import annotations

import pytest

import quickjail

PRELUDE = """
const flush = () => new Promise((r) => setTimeout(r, 0));
const name = (e) => (e && e.name) || String(e);
const json = (v) => JSON.parse(JSON.stringify(v === undefined ? null : v));
const settle = (p) => p.then((v) => ["ok", v], (e) => ["err", name(e)]);
const tag = (v) => Object.prototype.toString.call(v);
"""

CASES: list[tuple[str, str, object]] = [
    (
        "interface_shape_follows_web_idl",
        """let ctrl;
        const rs = new ReadableStream({ type: "bytes", start(c) { ctrl = c; } });
        const r = rs.getReader({ mode: "byob" });
        return [tag(ctrl), tag(r), ReadableStreamBYOBReader.length,
          Object.keys(ReadableByteStreamController.prototype).sort(),
          Object.keys(ReadableStreamBYOBReader.prototype).sort(),
          Object.keys(ReadableStreamBYOBRequest.prototype).sort(), ctrl.byobRequest,
          ctrl.desiredSize]""",
        [
            "[object ReadableByteStreamController]",
            "[object ReadableStreamBYOBReader]",
            1,
            ["byobRequest", "close", "desiredSize", "enqueue", "error"],
            ["cancel", "closed", "read", "releaseLock"],
            ["respond", "respondWithNewView", "view"],
            None,
            0,
        ],
    ),
    (
        "a_default_reader_gets_the_enqueued_bytes_and_the_source_buffer_is_transferred",
        """const chunk = new Uint8Array([1, 2, 3]);
        const rs = new ReadableStream({ type: "bytes",
          start(c) { c.enqueue(chunk); c.enqueue(new Uint16Array([0x0201])); c.close(); } });
        const r = rs.getReader();
        const a = await r.read(), b = await r.read(), end = await r.read();
        return [tag(a.value), Array.from(a.value), Array.from(b.value), end.done,
          chunk.byteLength]""",
        ["[object Uint8Array]", [1, 2, 3], [1, 2], True, 0],
    ),
    (
        "a_byob_read_fills_the_readers_view_from_the_queue",
        """const rs = new ReadableStream({ type: "bytes",
          start(c) { c.enqueue(new Uint8Array([1, 2, 3, 4, 5])); c.close(); } });
        const r = rs.getReader({ mode: "byob" });
        const buf = new ArrayBuffer(3);
        const first = await r.read(new Uint8Array(buf));
        const second = await r.read(new Uint8Array(8));
        const third = await r.read(new Uint8Array(8));
        return [Array.from(first.value), buf.byteLength, first.value.buffer.byteLength,
          Array.from(second.value), third.done, third.value.byteLength]""",
        [[1, 2, 3], 0, 3, [4, 5], True, 0],
    ),
    (
        "pull_answers_a_byob_request_with_respond",
        """const rs = new ReadableStream({ type: "bytes",
          pull(c) { const v = c.byobRequest.view; v[0] = 7; v[1] = 8;
                    c.byobRequest.respond(2); } });
        const r = rs.getReader({ mode: "byob" });
        const { value } = await r.read(new Uint8Array(4));
        return [tag(value), Array.from(value), value.byteOffset, value.buffer.byteLength]""",
        ["[object Uint8Array]", [7, 8], 0, 4],
    ),
    (
        "read_with_min_waits_for_enough_elements",
        """let ctrl;
        const rs = new ReadableStream({ type: "bytes", start(c) { ctrl = c; } });
        const r = rs.getReader({ mode: "byob" });
        const p = r.read(new Uint16Array(3), { min: 2 });
        ctrl.enqueue(new Uint8Array([1, 0, 2]));
        let settled = false;
        p.then(() => { settled = true; });
        await flush();
        const early = settled;
        ctrl.enqueue(new Uint8Array([0, 3]));
        const { value } = await p;
        return [early, tag(value), Array.from(value)]""",
        [False, "[object Uint16Array]", [1, 2]],
    ),
    (
        "auto_allocate_gives_default_readers_a_byob_request",
        """const rs = new ReadableStream({ type: "bytes", autoAllocateChunkSize: 16,
          pull(c) { const v = c.byobRequest.view; v[0] = v.byteLength;
                    c.byobRequest.respond(1); } });
        const { value } = await rs.getReader().read();
        return [Array.from(value), value.buffer.byteLength]""",
        [[16], 16],
    ),
    (
        "bad_byob_reads_reject",
        """const rs = new ReadableStream({ type: "bytes" });
        const r = rs.getReader({ mode: "byob" });
        return [await settle(r.read(new Uint8Array(0))), await settle(r.read({})),
          await settle(r.read(new Uint8Array(2), { min: 3 })),
          await settle(r.read(new Uint8Array(2), { min: 0 }))]""",
        [["err", "TypeError"], ["err", "TypeError"], ["err", "RangeError"], ["err", "TypeError"]],
    ),
    (
        "a_byob_reader_needs_a_byte_stream_and_a_byte_stream_no_size",
        """const out = [];
        for (const f of [() => new ReadableStream().getReader({ mode: "byob" }),
                         () => new ReadableStream({ type: "bytes" }, { size() { return 1; } }),
                         () => new ReadableStream({ type: "bytes", autoAllocateChunkSize: 0 })])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError", "RangeError", "TypeError"],
    ),
    (
        "tee_gives_each_branch_its_own_copy",
        """const rs = new ReadableStream({ type: "bytes",
          start(c) { c.enqueue(new Uint8Array([1, 2])); c.close(); } });
        const [a, b] = rs.tee();
        const x = await a.getReader().read(), y = await b.getReader({ mode: "byob" })
          .read(new Uint8Array(4));
        x.value[0] = 99;
        return [Array.from(x.value), Array.from(y.value), x.value.buffer === y.value.buffer]""",
        [[99, 2], [1, 2], False],
    ),
    (
        "cancel_resolves_pending_byob_reads_as_done",
        """let reason;
        const rs = new ReadableStream({ type: "bytes", cancel(r) { reason = r; } });
        const r = rs.getReader({ mode: "byob" });
        const p = r.read(new Uint8Array(2));
        await r.cancel("stop");
        const res = await p;
        return [reason, res.done, res.value]""",
        ["stop", True, None],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_byte_streams_follow_the_streams_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(
        f"{PRELUDE}\nexport default json(await (async () => {{ {body} }})());", timeout=30
    )
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []
