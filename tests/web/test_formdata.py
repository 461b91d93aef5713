"""FormData, and bodies as multipart/form-data or application/x-www-form-urlencoded, behave as
the XHR, HTML and Fetch standards say (values checked against Node 20, whose FormData.length
is 1 where Web IDL gives 0, and whose parser refuses a value holding "--boundary" that does not
start a line, which workerd and RFC 2046 accept).

Each case is the body of an async function; its result is what the spec makes of it.
"""

from __future__ import annotations

import pytest

import quickjail

# a multipart body's parts, as [name, value] or [name, [filename, type, size]]
PARTS = """const parts = (f) => [...f].map(([k, v]) =>
  [k, typeof v === "string" ? v : [v.name, v.type, v.size]]);
const mp = (body, b = "XX") => new Response(body,
  { headers: { "content-type": `multipart/form-data; boundary="${b}"` } })
  .formData().then(parts, (e) => e.name);
const N = "\\r\\n", CD = "Content-Disposition: form-data; ";"""


CASES: list[tuple[str, str, object]] = [
    (
        "entries_keep_their_order_and_set_replaces_in_place",
        """const f = new FormData();
        f.append("x", "1"); f.append("y", "2"); f.append("x", "3"); f.set("x", "9"); f.append("z",
          4);
        const all = [...f], keys = [...f.keys()], values = [...f.values()];
        f.delete("y");
        return [all, keys, values, f.get("x"), f.getAll("x"), f.get("nope"), f.has("y"),
          [...f.entries()]]""",
        [
            [["x", "9"], ["y", "2"], ["z", "4"]],
            ["x", "y", "z"],
            ["9", "2", "4"],
            "9",
            ["9"],
            None,
            False,
            [["x", "9"], ["z", "4"]],
        ],
    ),
    (
        "blob_values_become_files_named_blob_unless_named",
        """const f = new FormData();
        const file = new File(["abc"], "a.txt", { type: "t/x", lastModified: 3 });
        f.append("b", new Blob(["zz"], { type: "x/y" }));
        f.append("f", file); f.append("g", file, "renamed"); f.set("h", new Blob([]), "h.bin");
        const [b, ff, g, h] = [f.get("b"), f.get("f"), f.get("g"), f.get("h")];
        return [b instanceof File, b.name, b.type, await b.text(), ff === file, g.name,
          g.lastModified,
          await g.text(), h.name]""",
        [True, "blob", "x/y", "zz", True, "renamed", 3, "abc", "h.bin"],
    ),
    (
        "patched_prototypes_do_not_break_formdata_bodies",
        """const f = new FormData();
        f.append("a", "1"); f.append("b", new Blob(["x"]), "b.txt");
        Object.getPrototypeOf([][Symbol.iterator]()).next = () => { throw new Error("hijacked"); };
        Array.prototype.push = () => { throw new Error("hijacked"); };
        const back = await new Response(f).formData();
        return [back.get("a"), back.get("b").name, await back.get("b").text()]""",
        ["1", "b.txt", "x"],
    ),
    (
        "bad_arguments_are_type_errors",
        """const out = [], f = new FormData();
        for (const g of [() => f.append("a", "b", "c"), () => f.append("a"), () => f.get(),
          () => new FormData({}), () => FormData(), () => FormData.prototype.get.call({}, "a")])
          try { g(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 6,
    ),
    (
        "serializes_as_multipart_and_parses_back",
        PARTS
        + """const f = new FormData();
        f.append("a", "1\\n2"); f.append('q"u\\no', "v");
        f.append("f", new Blob(["zz"], { type: "text/x" })); f.append("g",
          new Blob([new Uint8Array([0, 255])]), "b.bin");
        const r = new Response(f), ct = r.headers.get("content-type");
        const text = await r.clone().text(), boundary = ct.split("boundary=")[1];
        return [ct.startsWith("multipart/form-data; boundary="),
          text.startsWith(`--${boundary}\\r\\n`),
          text.endsWith(`--${boundary}--\\r\\n`), text.includes('name="q%22u%0D%0Ao"'),
          parts(await r.formData())]""",
        [
            True,
            True,
            True,
            True,
            [
                ["a", "1\r\n2"],
                ['q"u\r\no', "v"],
                ["f", ["blob", "text/x", 2]],
                ["g", ["b.bin", "application/octet-stream", 2]],
            ],
        ],
    ),
    (
        "parses_multipart_written_by_hand",
        PARTS
        + """return [await mp(`--XX${N}${CD}name="a"${N}${N}v1${N}--XX${N}`
            + `${CD}name="b"; filename="f.bin"${N}Content-Type: App/X${N}${N}${N}--XX--`),
          await mp(`--XX${N}content-disposition: form-data; name="é"${N}${N}`
            + `a--XX b${N}-XX${N}--XX--${N}`),
          await mp(`--XX${N}${CD}name="f"; filename="a.txt"${N}${N}hi${N}--XX--`)]""",
        [
            [["a", "v1"], ["b", ["f.bin", "app/x", 0]]],
            [["é", "a--XX b\r\n-XX"]],
            [["f", ["a.txt", "text/plain", 2]]],
        ],
    ),
    (
        "a_quoted_boundary_may_hold_escapes_and_semicolons",
        """const b = 'a"b;c';
        const body = `--${b}\\r\\nContent-Disposition: form-data; name="k"\\r\\n\\r\\n`
          + `v\\r\\n--${b}--`;
        const ct = 'multipart/form-data; charset=utf-8; boundary="a\\\\"b;c"; x=1';
        const f = await new Response(body, { headers: { "content-type": ct } }).formData();
        return [...f]""",
        [["k", "v"]],
    ),
    (
        "malformed_multipart_is_a_type_error",
        PARTS
        + """return [await mp("garbage"), await mp(`--XX${N}${CD}name="a"${N}${N}no end`),
          await mp("--XX\\r\\nContent-Disposition: form-data\\r\\n\\r\\nx\\r\\n--XX--"),
          await mp("--XX\\r\\nContent-Disposition: inline; name=a\\r\\n\\r\\nx\\r\\n--XX--"),
          await mp("--XX\\r\\n\\r\\n", ""), await mp("--XX"),
          await new Response("x").formData().catch((e) => e.name),
          await new Response("x",
          { headers: { "content-type": "multipart/form-data" } })
            .formData().catch((e) => e.name)]""",
        ["TypeError"] * 8,
    ),
    (
        "parses_urlencoded_bodies",
        """const r = new Response("a=1&b=%20x+y&&c&%FF=%e2%82%ac",
          { headers: { "content-type": "application/x-www-form-urlencoded;charset=UTF-8" } });
        const r2 = new Response(new URLSearchParams({ k: "v w" }));
        return [[...(await r.formData())], [...(await r2.formData())]]""",
        [[["a", "1"], ["b", " x y"], ["c", ""], ["\ufffd", "€"]], [["k", "v w"]]],
    ),
    (
        "web_idl_shape",
        """const it = new FormData().entries();
        return [FormData.length, FormData.prototype.append.length, FormData.prototype.set.length,
          Object.prototype.toString.call(new FormData()), Object.prototype.toString.call(it),
          FormData.prototype[Symbol.iterator] === FormData.prototype.entries,
          Object.getOwnPropertyDescriptor(globalThis, "FormData").enumerable]""",
        [0, 2, 2, "[object FormData]", "[object FormData Iterator]", True, False],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_formdata_follows_the_xhr_and_fetch_standards(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default await (async () => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_a_boundary_that_nearly_matches_everywhere_parses_within_the_default_limits() -> None:
    # a boundary that nearly matches everywhere: a naive search would compare ~70 bytes at each
    # of 4 million positions; every search here is memmem (two-way, linear in the body)
    r = quickjail.run_code_sync(
        """const b = "a".repeat(69) + "b", filler = "\\r\\n--" + "a".repeat(4 * 1024 * 1024);
        const body = `--${b}\\r\\nContent-Disposition: form-data; name="x"\\r\\n\\r\\n`
          + `${filler}\\r\\n--${b}--`;
        const f = await new Response(body,
          { headers: { "content-type": `multipart/form-data; boundary=${b}` } }).formData();
        export default [f.get("x").length, await new Response(body.slice(0, -4), {
          headers: { "content-type": `multipart/form-data; boundary=${b}` } })
          .formData().catch((e) => e.name)]"""
    )
    assert r.status == "success", r.error
    assert r.result == [4 * 1024 * 1024 + 4, "TypeError"]


def test_a_multipart_body_of_many_parts_parses() -> None:
    r = quickjail.run_code_sync(
        """const f = new FormData();
        for (let i = 0; i < 20000; i++) f.append(`k${i}`, `${i}`);
        const back = await new Response(f).formData();
        export default [[...back].length, back.get("k19999")]"""
    )
    assert r.status == "success", r.error
    assert r.result == [20000, "19999"]
