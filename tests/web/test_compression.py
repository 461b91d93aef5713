"""CompressionStream and DecompressionStream behave as the WHATWG Compression Standard says,
with zlib's bytes: what they make is what Node 20's zlib makes, what Node made they read back,
and bad input, bad chunks, decompression bombs and a hostile program end in the guest.

Each case is the body of an async function; the expected values are what Node 20 gives
unless a comment says otherwise.
"""

from __future__ import annotations

import base64
import zlib

import pytest

import quickjail

# Node 20.20.2: zlib.gzipSync / deflateSync / deflateRawSync of TEXT (its CompressionStream
# gives the same bytes)
TEXT = "Hello, quickjail! " * 4 + "\u00e9\u6f22\U0001f600"
NODE = {
    "gzip": "1f8b0800000000000003f348cdc9c9d751282ccd4ccece4acccc5154f0204be4f0ca677b167d983f"
    "a30100444707d851000000",
    "deflate": "789cf348cdc9c9d751282ccd4ccece4acccc5154f0204be4f0ca677b167d983fa301009a8d1f50",
    "deflate-raw": "f348cdc9c9d751282ccd4ccece4acccc5154f0204be4f0ca677b167d983fa30100",
}
# Node 20: Buffer.concat([zlib.gzipSync("a"), zlib.gzipSync("b")]), two gzip members
TWO_MEMBERS = "1f8b08000000000000034b040043beb7e8010000001f8b08000000000000034b0200f9efbe7101000000"

PRELUDE = f"""
const TEXT = {TEXT!r};
const NODE = {NODE!r};
const name = (e) => (e && e.name) || String(e);
const json = (v) => JSON.parse(JSON.stringify(v === undefined ? null : v));
const settle = (p) => p.then((v) => ["ok", v], (e) => ["err", name(e)]);
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, "0")).join("");
const unhex = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
const readAll = async (s) => {{
  const r = s.getReader(), out = [];
  for (;;) {{ const {{ done, value }} = await r.read(); if (done) return out; out.push(value); }}
}};
const concat = (chunks) => {{
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {{ out.set(c, at); at += c.length; }}
  return out;
}};
const through = (chunks, t) => readAll(ReadableStream.from(chunks).pipeThrough(t));
const squeeze = async (fmt, chunks) => concat(await through(chunks, new CompressionStream(fmt)));
const inflate = async (fmt, chunks) =>
  concat(await through(chunks, new DecompressionStream(fmt)));
"""

CASES: list[tuple[str, str, object]] = [
    (
        "interface_shape_follows_web_idl",
        """const c = new CompressionStream("gzip"), d = new DecompressionStream("deflate");
        const get = Object.getOwnPropertyDescriptor(CompressionStream.prototype, "readable").get;
        const errs = [];
        for (const f of [() => new CompressionStream(), () => new CompressionStream("zip"),
          () => new DecompressionStream("GZIP"), () => CompressionStream("gzip"),
          () => get.call(d), () => get.call({})])
          try { f(); errs.push("none"); } catch (e) { errs.push(name(e)); }
        return [CompressionStream.length, DecompressionStream.length,
          Object.prototype.toString.call(c), Object.prototype.toString.call(d),
          Object.keys(CompressionStream.prototype), Object.keys(DecompressionStream.prototype),
          Object.keys(globalThis).filter((k) => k.includes("ompression")),
          c.readable instanceof ReadableStream, d.writable instanceof WritableStream, errs]""",
        [
            1,
            1,
            "[object CompressionStream]",
            "[object DecompressionStream]",
            ["readable", "writable"],
            ["readable", "writable"],
            [],
            True,
            True,
            ["TypeError"] * 6,
        ],
    ),
    (
        "compressed_bytes_are_node_zlibs",
        """const input = new TextEncoder().encode(TEXT), out = [];
        for (const f of ["gzip", "deflate", "deflate-raw"])
          out.push(hex(await squeeze(f, [input])));
        return out""",
        [NODE["gzip"], NODE["deflate"], NODE["deflate-raw"]],
    ),
    (
        "node_made_streams_decompress_to_their_text_whatever_the_chunking",
        """const out = [];
        for (const f of ["gzip", "deflate", "deflate-raw"]) {
          const all = unhex(NODE[f]);
          const one = await inflate(f, [all]);
          const bytewise = await inflate(f, Array.from(all, (b) => new Uint8Array([b])));
          out.push(new TextDecoder().decode(one), hex(one) === hex(bytewise));
        }
        return out""",
        [TEXT, True] * 3,
    ),
    (
        "a_quarter_megabyte_round_trips_in_pieces_of_at_most_64_kib",
        """const input = new Uint8Array(1 << 18);
        let x = 1;
        for (let i = 0; i < input.length; i++) {
          x = (x * 1103515245 + 12345) >>> 0;
          input[i] = i % 3 ? x >>> 24 : 0x61;
        }
        const parts = [];
        for (let at = 0, n = 1; at < input.length; at += n, n = n * 7 % 30011 + 1)
          parts.push(input.subarray(at, at + n));
        const sha = async (u8) => hex(new Uint8Array(await crypto.subtle.digest("SHA-256", u8)));
        const want = await sha(input), out = [];
        for (const f of ["gzip", "deflate", "deflate-raw"]) {
          const packed = await squeeze(f, parts);
          const pieces = await through([packed], new DecompressionStream(f));
          const back = concat(pieces);
          out.push(back.length, await sha(back) === want,
            pieces.every((p) => p.length <= 65536 && p instanceof Uint8Array),
            pieces.length >= 4);
        }
        return out""",
        [1 << 18, True, True, True] * 3,
    ),
    (
        "every_buffer_source_is_a_chunk_and_empty_ones_add_nothing",
        """const bytes = unhex(NODE.deflate), buf = bytes.buffer;
        const chunks = [new ArrayBuffer(0), buf.slice(0, 3), new DataView(buf, 3, 5),
          new Uint16Array(buf.slice(8, 12)), new Uint8Array(0), bytes.subarray(12)];
        const empty = await squeeze("gzip", []);
        return [new TextDecoder().decode(await inflate("deflate", chunks)),
          hex(await inflate("gzip", [empty])), empty.length]""",
        [TEXT, "", 20],
    ),
    (
        "chunks_that_are_not_buffer_sources_error_both_streams",
        """const bad = ["text", 1, null, undefined, {}, [1, 2], new SharedArrayBuffer(4),
          new Uint8Array(new SharedArrayBuffer(4))];
        const out = [];
        for (const c of bad)
          out.push((await settle(through([c], new CompressionStream("gzip"))))[1],
            (await settle(through([c], new DecompressionStream("gzip"))))[1]);
        return out""",
        ["TypeError"] * 16,
    ),
    (
        "corrupt_truncated_and_trailing_input_are_type_errors",
        """const good = unhex(NODE.gzip);
        const corrupt = good.slice(); corrupt[15] ^= 0xff;
        const badCrc = good.slice(); badCrc[good.length - 6] ^= 1;
        const cases = [[corrupt], [good.subarray(0, good.length - 1)], [good.subarray(0, 5)],
          [good, new Uint8Array([0])], [new Uint8Array([1, 2, 3])], [badCrc],
          [unhex(NODE["deflate-raw"]), new Uint8Array([7])], []];
        const out = [];
        for (const c of cases) out.push((await settle(inflate("gzip", c)))[1]);
        out.push((await settle(inflate("deflate-raw",
          [unhex(NODE["deflate-raw"]), new Uint8Array([7])])))[1]);
        out.push((await settle(inflate("gzip", [unhex(TWO_MEMBERS)])))[1]);
        return out""".replace("TWO_MEMBERS", repr(TWO_MEMBERS)),
        ["TypeError"] * 10,
    ),
    (
        # Node 20 fulfils the failing write (its zlib runs off-thread); in the standard the
        # transform algorithm throws, so the write rejects with the stream's error
        "a_stream_after_an_error_rejects_its_writes_and_reads",
        """const d = new DecompressionStream("deflate");
        const w = d.writable.getWriter(), r = d.readable.getReader();
        const first = settle(w.write(new Uint8Array([0xff, 0xff, 0xff]))), read = settle(r.read());
        return [await first, await read, await settle(w.write(new Uint8Array(1))),
          await settle(w.close())]""",
        [["err", "TypeError"], ["err", "TypeError"], ["err", "TypeError"], ["err", "TypeError"]],
    ),
]


def _run(body: str, **kwargs: object) -> quickjail.CodeResult:
    return quickjail.run_code_sync(
        f"{PRELUDE}\nexport default json(await (async () => {{ {body} }})());",
        timeout=60,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_compression_streams_follow_the_compression_standard(body: str, expected: object) -> None:
    r = _run(body)
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []


# 64 MiB of zeros in 65 KB: inflating it whole needs more than the run's 32 MiB
BOMB = base64.b64encode(zlib.compress(bytes(64 << 20), 9)).decode()
_BOMB_SRC = f"""const bomb = Uint8Array.from(atob({BOMB!r}), (c) => c.charCodeAt(0));"""


def test_a_decompression_bomb_streams_in_bounded_pieces() -> None:
    r = _run(
        _BOMB_SRC
        + """const r = ReadableStream.from([bomb])
          .pipeThrough(new DecompressionStream("deflate")).getReader();
        let total = 0, biggest = 0, nonzero = 0;
        for (;;) {
          const { done, value } = await r.read();
          if (done) break;
          total += value.length;
          biggest = Math.max(biggest, value.length);
          if (value[0] || value[value.length >> 1] || value[value.length - 1]) nonzero++;
        }
        return [total, biggest, nonzero]""",
        memory_limit_bytes=32 << 20,
    )
    assert r.status == "success", r.error
    assert r.result == [64 << 20, 65536, 0]


def test_a_decompression_bomb_kept_whole_ends_at_the_memory_limit() -> None:
    r = _run(
        _BOMB_SRC + """return (await inflate("deflate", [bomb])).length""",
        memory_limit_bytes=32 << 20,
    )
    assert r.status == "memory", r.error
    assert quickjail.run_code_sync("export default typeof CompressionStream").result == "function"


def test_zlib_memory_counts_against_the_limit_and_is_freed_with_its_stream() -> None:
    # a deflate stream holds about 256 KiB of zlib state: 400 kept ones exceed 32 MiB ...
    kept = _run(
        """const keep = [];
        for (let i = 0; i < 400; i++) {
          const c = new CompressionStream("gzip");
          c.writable.getWriter().write(new Uint8Array([i]));
          keep.push(c);
        }
        await new Promise((r) => setTimeout(r, 0));
        return keep.length""",
        memory_limit_bytes=32 << 20,
    )
    assert kept.status == "memory", kept.error
    # ... and 400 dropped ones (finished, failed or abandoned) fit in it
    dropped = _run(
        """for (let i = 0; i < 400; i++) {
          const c = new CompressionStream("gzip"), w = c.writable.getWriter();
          w.write(new Uint8Array([i]));
          if (i % 3 === 0) { w.close(); await readAll(c.readable); }
          if (i % 3 === 1) await w.abort(new Error("x"));
          await new Promise((r) => setTimeout(r, 0));
        }
        return "ok\"""",
        memory_limit_bytes=32 << 20,
    )
    assert dropped.status == "success", dropped.error
    assert dropped.result == "ok"


def test_replaced_intrinsics_do_not_reach_the_compression_streams() -> None:
    r = quickjail.run_code_sync(
        """const spy = (what) => function () { throw new Error("hijacked " + what); };
        const input = new TextEncoder().encode("abc".repeat(100));
        const TA = Object.getPrototypeOf(Uint8Array).prototype;
        for (const m of ["set", "slice", "subarray"]) TA[m] = spy(m);
        Object.defineProperty(TA, "buffer", { get: spy("buffer") });
        Object.defineProperty(ArrayBuffer.prototype, "byteLength", { get: spy("byteLength") });
        Promise.prototype.then = spy("then");
        Array.prototype[Symbol.iterator] = spy("iterator");
        const c = new CompressionStream("gzip"), d = new DecompressionStream("gzip");
        const w = c.writable.getWriter(); w.write(input); w.close();
        const dw = d.writable.getWriter(), cr = c.readable.getReader();
        const out = [];
        const pump = async () => {
          for (;;) { const x = await cr.read(); if (x.done) { await dw.close(); return; }
            await dw.write(x.value); }
        };
        const drain = async () => {
          const r = d.readable.getReader();
          for (;;) { const x = await r.read(); if (x.done) return; out.push(x.value.length); }
        };
        const pumped = pump(), drained = drain();  // (Promise.all would call the spied then)
        await pumped;
        await drained;
        export default JSON.stringify(out);"""
    )
    assert r.status == "success", r.error
    assert r.result == "[300]"
    assert r.logs == []
