"""TextEncoderStream and TextDecoderStream behave as WHATWG Encoding says: characters split
across chunks come out whole, and the decoder's options work as TextDecoder's.

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
const readAll = async (s) => { const o = []; for await (const v of s) o.push(v); return o; };
const through = (chunks, t) => readAll(ReadableStream.from(chunks).pipeThrough(t));
const bytes = (...a) => new Uint8Array(a);
"""

CASES: list[tuple[str, str, object]] = [
    (
        "interface_shape_follows_web_idl",
        """const e = new TextEncoderStream(), d = new TextDecoderStream("utf8", { fatal: true });
        return [TextEncoderStream.length, TextDecoderStream.length,
          Object.prototype.toString.call(e), Object.prototype.toString.call(d),
          e.encoding, d.encoding, d.fatal, d.ignoreBOM,
          Object.keys(TextEncoderStream.prototype).sort(),
          Object.keys(TextDecoderStream.prototype).sort()]""",
        [
            0,
            0,
            "[object TextEncoderStream]",
            "[object TextDecoderStream]",
            "utf-8",
            "utf-8",
            True,
            False,
            ["encoding", "readable", "writable"],
            ["encoding", "fatal", "ignoreBOM", "readable", "writable"],
        ],
    ),
    (
        "the_encoder_joins_a_surrogate_pair_split_across_chunks",
        """const out = await through(["a\\ud83d", "\\ude00b", "", "\\u00e9"],
          new TextEncoderStream());
        return out.map((u) => [Object.prototype.toString.call(u), Array.from(u)])""",
        [
            ["[object Uint8Array]", [97]],
            ["[object Uint8Array]", [240, 159, 152, 128, 98]],
            ["[object Uint8Array]", [195, 169]],
        ],
    ),
    (
        "a_high_surrogate_left_at_the_end_is_a_replacement_character",
        """const out = await through(["x\\ud800"], new TextEncoderStream());
        return out.map((u) => Array.from(u))""",
        [[120], [239, 191, 189]],
    ),
    (
        "the_encoder_converts_chunks_to_strings",
        """const out = await through([12, null], new TextEncoderStream());
        return out.map((u) => new TextDecoder().decode(u))""",
        ["12", "null"],
    ),
    (
        "the_decoder_joins_a_character_split_across_chunks",
        """const euro = new TextEncoder().encode("\\u20ac\\ud83d\\ude00");
        const chunks = Array.from(euro, (b) => bytes(b));
        return (await through(chunks, new TextDecoderStream())).join("")""",
        "\u20ac\U0001f600",
    ),
    (
        "the_decoder_takes_every_buffer_source",
        """const buf = new TextEncoder().encode("hey").buffer;
        return through([buf, new DataView(buf, 1, 1), new Uint16Array([0x6968])],
          new TextDecoderStream())""",
        ["hey", "e", "hi"],
    ),
    (
        "an_unfinished_character_at_the_end_is_a_replacement_or_a_fatal_error",
        """const lax = await through([bytes(0x61, 0xe2, 0x82)], new TextDecoderStream());
        const strict = await settle(through([bytes(0x61, 0xe2, 0x82)],
          new TextDecoderStream("utf-8", { fatal: true })));
        return [lax, strict]""",
        [["a", "\ufffd"], ["err", "TypeError"]],
    ),
    (
        "a_fatal_decoder_errors_on_an_invalid_byte",
        """return settle(through([bytes(0x61), bytes(0xff)],
          new TextDecoderStream("utf-8", { fatal: true })))""",
        ["err", "TypeError"],
    ),
    (
        "the_bom_is_dropped_unless_ignore_bom",
        """const bom = [bytes(0xef, 0xbb), bytes(0xbf, 0x61)];
        return [(await through(bom, new TextDecoderStream())).join(""),
          (await through(bom, new TextDecoderStream("utf-8", { ignoreBOM: true }))).join("")]""",
        ["a", "\ufeffa"],
    ),
    (
        "a_second_write_waits_until_the_first_chunk_is_read",
        """const out = [];
        for (const [S, input] of [[TextDecoderStream, bytes(65)], [TextEncoderStream, "A"]]) {
          const s = new S(), w = s.writable.getWriter(), r = s.readable.getReader(), ev = [];
          await flush();
          r.read().then(() => ev.push("read1"));
          const w1 = w.write(input), w2 = w.write(input);
          w1.then(() => ev.push("write1")); w2.then(() => ev.push("write2"));
          await flush();
          ev.push("paused");
          const r2 = r.read().then(() => ev.push("read2"));
          await Promise.all([w1, w2, r2]);
          out.push(ev);
        }
        return out""",
        [["read1", "write1", "paused", "read2", "write2"]] * 2,
    ),
    (
        "non_buffer_chunks_error_the_decoder_and_bad_labels_are_refused",
        """let label;
        try { new TextDecoderStream("nope"); } catch (e) { label = e.name; }
        // Node 20 decodes an undefined chunk as empty; WPT decode-bad-chunks wants an error
        return [label, await settle(through(["text"], new TextDecoderStream())),
          await settle(through([undefined], new TextDecoderStream()))]""",
        ["RangeError", ["err", "TypeError"], ["err", "TypeError"]],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_text_streams_follow_the_encoding_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(
        f"{PRELUDE}\nexport default json(await (async () => {{ {body} }})());", timeout=30
    )
    assert r.status == "success", r.error
    assert r.result == expected
    assert r.logs == []
