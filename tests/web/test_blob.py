"""Blob and File behave as the W3C File API says (values checked against Node 20).

Each case is the body of an async function; its result is what the spec makes of it.
"""

from __future__ import annotations

import pytest

import quickjail

CASES: list[tuple[str, str, object]] = [
    (
        "parts_are_utf8_strings_buffer_sources_and_blobs",
        """const b = new Blob(["héllo", new Uint8Array([33]), new Blob(["x"]),
          new Uint16Array([0x4241]).buffer, new DataView(new Uint8Array([67, 68]).buffer, 1)]);
        return [b.size, await b.text()]""",
        [11, "héllo!xABD"],
    ),
    (
        "type_is_lowercased_and_non_printable_types_become_empty",
        """return [new Blob([], { type: "Text/PLAIN" }).type, new Blob([], { type: "é/x" }).type,
          new Blob().type, new Blob().size]""",
        ["text/plain", "", "", 0],
    ),
    (
        "slice_takes_negative_indices_and_a_content_type",
        """const b = new Blob(["abcdef"], { type: "x/y" });
        return [await b.slice(-3, -1).text(), b.slice(2, 1).size, b.slice().type,
          b.slice(1, 3, "A/B").type, await b.slice(-100, 100).text(), b.slice(4).size,
          await b.slice(1, 5).slice(1, -1).text()]""",
        ["de", 0, "", "a/b", "abcdef", 2, "cd"],
    ),
    (
        # Web IDL [Clamp]: halves round to even (WPT Blob-slice; Node 20 aborts on these)
        "slice_rounds_fractional_indices_half_to_even",
        """const b = new Blob(["abcd"]), out = [];
        for (const [s, e] of [[0.5], [1.5], [2.5], [3.5], [0, 0.5], [0, 1.5], [0, 2.5], [0, 3.5],
          [1.5, 2.5], [1.5, 3.5], [-Infinity, Infinity], [-1.5], [NaN, "3"]])
          out.push(await (e === undefined ? b.slice(s) : b.slice(s, e)).text());
        return out""",
        ["abcd", "cd", "cd", "", "", "ab", "ab", "abcd", "", "cd", "abcd", "cd", "abc"],
    ),
    (
        "reads_copy_out_and_never_share_the_blob_bytes",
        """const b = new Blob(["ab"]);
        const u = await b.bytes(); u[0] = 122;
        const ab = await b.arrayBuffer(); new Uint8Array(ab)[1] = 122;
        return [await b.text(), u instanceof Uint8Array, ab instanceof ArrayBuffer,
          ab.byteLength]""",
        ["ab", True, True, 2],
    ),
    (
        "a_part_changed_after_construction_does_not_change_the_blob",
        """const u = new Uint8Array([97, 98]); const b = new Blob([u]); u[0] = 122;
        return await b.text()""",
        "ab",
    ),
    (
        "text_decodes_utf8_with_replacement_and_drops_a_bom",
        """return [await new Blob([new Uint8Array([0xef, 0xbb, 0xbf, 0x41, 0xff])]).text(),
          await new Blob(["\\ud800"]).text()]""",
        ["A\ufffd", "\ufffd"],
    ),
    (
        "native_endings_become_newlines",
        """return [await new Blob(["a\\r\\nb\\rc\\n"], { endings: "native" }).text(),
          await new Blob(["a\\r\\nb"], { endings: "transparent" }).text()]""",
        ["a\nb\nc\n", "a\r\nb"],
    ),
    (
        "arguments_convert_left_to_right_and_options_in_lexicographic_order",
        """const log = [], acc = [], f = [];
        try {
          new Blob([{ toString() { log.push("part"); throw new Error("x"); } }],
            { get type() { log.push("type"); } });
        } catch (e) { log.push(e.message); }
        new Blob([], { get type() { acc.push("type"); }, get endings() { acc.push("endings"); } });
        new File([{ toString() { f.push("part"); return "a"; } }],
          { toString() { f.push("name"); return "n"; } },
          { get type() { f.push("type"); return ""; } });
        return [log, acc, f, await new Blob(new String("xyz")).text(),
          await new Blob(new Uint8Array([1, 2, 3])).text(),
          await new Blob([null, undefined, true, 0, new String("s"), ["x", "y"], {}]).text()]""",
        [
            ["part", "x"],
            ["endings", "type"],
            ["part", "name", "type"],
            "xyz",
            "123",
            "nullundefinedtrue0sx,y[object Object]",
        ],
    ),
    (
        "file_has_a_name_and_last_modified",
        """const f = new File(["a", "b"], "n.txt", { type: "text/x", lastModified: 5 });
        const now = new File([], "x").lastModified;
        return [f.name, f.lastModified, f.size, f.type, f instanceof Blob, typeof now,
          Object.prototype.toString.call(f), await f.text()]""",
        ["n.txt", 5, 2, "text/x", True, "number", "[object File]", "ab"],
    ),
    (
        "web_idl_shape",
        """const d = Object.getOwnPropertyDescriptor(globalThis, "Blob");
        return [Blob.length, File.length, Blob.name, d.enumerable, d.writable,
          Object.prototype.toString.call(new Blob()), Object.getPrototypeOf(File) === Blob,
          Object.getOwnPropertyDescriptor(Blob.prototype, "size").enumerable,
          Object.keys(new Blob()).length]""",
        [0, 2, "Blob", False, True, "[object Blob]", True, True, 0],
    ),
    (
        "bad_arguments_are_type_errors",
        """const out = [];
        for (const f of [() => new Blob("abc"), () => new Blob(5), () => new Blob([], 5),
          () => new Blob([], { endings: "bad" }), () => new File(["a"]), () => Blob(),
          () => Object.getOwnPropertyDescriptor(Blob.prototype, "size").get.call({})])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        out.push(await Blob.prototype.text.call({}).catch((e) => e.name));
        return out""",
        ["TypeError"] * 8,
    ),
    (
        "structured_clone_copies_blobs_and_files",
        """const f = new File(["xyz"], "a.bin", { type: "a/b", lastModified: 7 });
        const [c, d] = structuredClone([f, new Blob(["q"])]);
        return [c instanceof File, c !== f, c.name, c.type, c.lastModified, await c.text(),
          d instanceof Blob, d instanceof File, await d.text()]""",
        [True, True, "a.bin", "a/b", 7, "xyz", True, False, "q"],
    ),
    (
        "patched_prototypes_do_not_break_blobs",
        """const hijacked = () => { throw new Error("hijacked"); };
        Uint8Array.prototype.slice = Uint8Array.prototype.set = hijacked;
        String.prototype.toLowerCase = () => "hijacked";
        const b = new Blob(["ab"], { type: "A/B" });
        return [b.type, await b.slice(1).text(), (await b.bytes()).length]""",
        ["a/b", "b", 2],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_blob_and_file_follow_the_file_api(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default await (async () => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_blob_stream_needs_streams_and_says_so() -> None:
    r = quickjail.run_code_sync(
        """let e; try { new Blob(["a"]).stream(); } catch (x) { e = x; }
        export default typeof ReadableStream === "function" || [e.name, e.message]"""
    )
    assert r.status == "success", r.error
    assert r.result is True or r.result == ["TypeError", "Blob.stream: streams are not available"]


def test_a_blob_past_the_memory_limit_fails_in_the_guest_only() -> None:
    r = quickjail.run_code_sync(
        """const part = "x".repeat(1 << 20), parts = [];
        for (let i = 0; i < 1000; i++) parts.push(part);
        export default new Blob(parts).size"""
    )
    assert r.status == "memory", r.error
    assert quickjail.run_code_sync("export default new Blob(['ok']).size").result == 2
