"""Request and Response, with the Body mixin, behave as WHATWG Fetch says for a Worker (values
checked against Node 20 and workerd; where they differ, the spec decides and the case says so).

Each case is the body of an async function; its result is what the spec makes of it.
"""

from __future__ import annotations

import pytest

import quickjail

CASES: list[tuple[str, str, object]] = [
    (
        "request_defaults",
        """const r = new Request("https://example.com/a/../b?q#f");
        return [r.method, r.url, r.redirect, r.integrity, r.keepalive, r.cache, r.body, r.bodyUsed,
          r.signal instanceof AbortSignal, r.signal.aborted, [...r.headers]]""",
        [
            "GET",
            "https://example.com/b?q#f",
            "follow",
            "",
            False,
            "default",
            None,
            False,
            True,
            False,
            [],
        ],
    ),
    (
        "a_browsers_request_members_have_their_spec_values",
        """const r = new Request("https://a/");
        const r2 = new Request("https://a/", { mode: "no-cors", credentials: "omit", referrer: "",
          referrerPolicy: "origin" });
        const r3 = new Request(r2, { referrer: "https://b/x" }), r4 = new Request(r2);
        const out = ["destination", "referrer", "referrerPolicy", "mode", "credentials",
          "isReloadNavigation", "isHistoryNavigation", "duplex"].map((k) => r[k]);
        try { r.mode = "navigate"; } catch {}
        return [out, [r2.mode, r2.credentials, r2.referrer, r2.referrerPolicy],
          [r3.mode, r3.referrer, r3.referrerPolicy], [r4.referrer, r4.referrerPolicy], r.mode]""",
        [
            ["", "about:client", "", "cors", "same-origin", False, False, "half"],
            ["no-cors", "omit", "", "origin"],
            ["no-cors", "https://b/x", ""],
            ["", "origin"],
            "cors",
        ],
    ),
    (
        "methods_are_normalized_and_forbidden_ones_refused",
        """const m = (x) => { try { return new Request("https://a/", { method: x }).method; }
          catch (e) { return e.name; } };
        return ["get", "post", "delete", "Options", "patch", "custom", "CONNECT", "trace", "track",
          "bad method", ""].map(m)""",
        [
            "GET",
            "POST",
            "DELETE",
            "OPTIONS",
            "patch",
            "custom",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
        ],
    ),
    (
        "a_worker_has_no_base_url_so_relative_urls_are_type_errors",
        """const out = [];
        for (const u of ["/relative", "relative", "https://u:p@a/", "http://[bad/"])
          try { new Request(u); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 4,
    ),
    (
        "bodies_set_a_content_type_unless_one_is_given",
        """const ct = (b, h) => new Request("https://a/", { method: "POST", body: b, headers: h })
          .headers.get("content-type");
        return [ct("s"), ct(new URLSearchParams("a=1")), ct(new Blob([], { type: "x/y" })),
          ct(new Blob([])), ct(new Uint8Array(1)), ct(new ArrayBuffer(1)),
          ct("s", { "Content-Type": "a/b" }), ct("s", { "Content-Type": "" }),
          ct(new FormData()).startsWith("multipart/form-data; boundary=")]""",
        [
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded;charset=UTF-8",
            "x/y",
            None,
            None,
            None,
            "a/b",
            "",
            True,
        ],
    ),
    (
        "get_and_head_cannot_have_a_body",
        """const out = [];
        for (const m of ["GET", "HEAD"])
          try { new Request("https://a/", { method: m, body: "x" }); out.push("no error"); }
          catch (e) { out.push(e.name); }
        out.push(new Request("https://a/", { body: null }).method);
        return out""",
        ["TypeError", "TypeError", "GET"],
    ),
    (
        "a_request_made_from_a_request_takes_its_body",
        """const a = new Request("https://a/x", { method: "PUT", body: "zz", headers: { k: "v" } });
        const b = new Request(a, { redirect: "manual" });
        return [b.url, b.method, b.redirect, b.headers.get("k"), a.bodyUsed, await b.text(),
          b.bodyUsed, await a.text().catch((e) => e.name)]""",
        ["https://a/x", "PUT", "manual", "v", True, "zz", True, "TypeError"],
    ),
    (
        # WPT request-disturbed (Node 20 leaves the input unused when init has a body)
        "the_input_request_is_used_once_a_request_is_made_from_it_and_not_before",
        """const a = new Request("https://a/", { method: "POST", body: "x" });
        const errs = [];
        for (const init of [{ method: "GET" }, { method: "CONNECT" }])
          try { new Request(a, init); } catch (e) { errs.push(e.name); }
        const before = a.bodyUsed, b = new Request(a, { body: "init body" });
        return [errs, before, a.bodyUsed, await b.text(),
          (() => { try { new Request(a); return "no error"; } catch (e) { return e.name; } })(),
          await new Request(a, { body: "again" }).text()]""",
        [["TypeError", "TypeError"], False, True, "init body", "TypeError", "again"],
    ),
    (
        "request_options_are_checked",
        """const out = [];
        for (const init of [{ redirect: "x" }, { cache: "x" }, { signal: {} }, 5,
          { mode: "navigate" }, { mode: "x" }, { credentials: "x" }, { referrerPolicy: "x" },
          { window: {} }, { referrer: "http://:bad" },
          { mode: "cors", credentials: "include", referrerPolicy: "", window: null, referrer: "" }])
          try { new Request("https://a/", init); out.push("no error");
          } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 10 + ["no error"],
    ),
    (
        "the_request_signal_follows_the_given_one",
        """const c = new AbortController();
        const r = new Request("https://a/", { signal: c.signal }), k = r.clone();
        const before = r.signal.aborted; c.abort("why");
        return [before, r.signal !== c.signal, r.signal.aborted, r.signal.reason,
          k.signal.aborted]""",
        [False, True, True, "why", True],
    ),
    (
        "response_defaults_and_status",
        """const r = new Response("abc", { status: 201, statusText: "Made", headers: { a: "1" } });
        const d = new Response();
        return [r.status, r.ok, r.statusText, r.type, r.url, r.redirected, r.headers.get("a"),
          d.status, d.statusText, d.body, new Response(null, { status: 299 }).ok,
          new Response(null, { status: 300 }).ok]""",
        [201, True, "Made", "default", "", False, "1", 200, "", None, True, False],
    ),
    (
        "status_outside_200_599_is_a_range_error",
        """const out = [];
        for (const s of [99, 199, 600, 0, 1000])
          try { new Response("", { status: s }); out.push("no error");
          } catch (e) { out.push(e.name); }
        return out""",
        ["RangeError"] * 5,
    ),
    (
        "null_body_statuses_and_bad_status_text_are_type_errors",
        """const out = [];
        for (const [b, i] of [["x", { status: 204 }], ["x", { status: 304 }],
          ["", { statusText: "a\\nb" }], ["", { statusText: "é\\u0100" }]])
          try { new Response(b, i); out.push("no error"); } catch (e) { out.push(e.name); }
        out.push(new Response(null, { status: 204 }).status);
        return out""",
        ["TypeError", "TypeError", "TypeError", "TypeError", 204],
    ),
    (
        "body_methods_read_once",
        """const r = new Response("héllo");
        const t = await r.text();
        return [t, r.bodyUsed, await r.text().catch((e) => e.name),
          await r.json().catch((e) => e.name),
          await r.arrayBuffer().catch((e) => e.name)]""",
        ["héllo", True, "TypeError", "TypeError", "TypeError"],
    ),
    (
        "body_readers_convert",
        """const mk = () => new Response(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
          { headers: { "content-type": "Text/HTML; Charset=utf-8" } });
        const ab = await mk().arrayBuffer(), by = await mk().bytes(), bl = await mk().blob();
        return [await mk().text(), await mk().json(), ab.byteLength, ab instanceof ArrayBuffer,
          by instanceof Uint8Array, by.length, bl.size, bl.type,
          await new Response("{bad").json().catch((e) => e.name), await new Response().text()]""",
        ["{}", {}, 5, True, True, 5, 5, "text/html;charset=utf-8", "SyntaxError", ""],
    ),
    (
        "clone_gives_an_independent_body",
        """const r = new Response("x", { headers: { a: "1" } }), c = r.clone();
        c.headers.set("a", "2");
        const t = await r.text();
        return [t, await c.text(), r.headers.get("a"), c.headers.get("a"),
          (() => { try { r.clone(); return "no error"; } catch (e) { return e.name; } })()]""",
        ["x", "x", "1", "2", "TypeError"],
    ),
    (
        "response_json_error_and_redirect",
        """const j = Response.json({ a: [1] }, { status: 202, headers: { x: "y" } });
        const e = Response.error(), r = Response.redirect("https://a.com/b c", 301);
        const errs = [];
        for (const f of [() => Response.json(undefined), () => Response.redirect("https://a/", 200),
          () => Response.redirect("/relative"), () => e.headers.set("a", "b"),
          () => r.headers.append("a", "b")])
          try { f(); errs.push("no error"); } catch (x) { errs.push(x.name); }
        return [j.status, j.headers.get("content-type"), j.headers.get("x"), await j.json(),
          e.type, e.status, e.ok, r.status, r.headers.get("location"),
          Response.redirect("https://a/").status, errs]""",
        [
            202,
            "application/json",
            "y",
            {"a": [1]},
            "error",
            0,
            False,
            301,
            "https://a.com/b%20c",
            302,
            ["TypeError", "RangeError", "TypeError", "TypeError", "TypeError"],
        ],
    ),
    (
        "web_idl_shape",
        """const shape = (C) => [C.length,
          Object.getOwnPropertyDescriptor(globalThis, C.name).enumerable,
          Object.prototype.toString.call(C.prototype),
          typeof Object.getOwnPropertyDescriptor(C.prototype, "bodyUsed").get,
          Object.getOwnPropertyDescriptor(C.prototype, "text").enumerable];
        const out = [shape(Request), shape(Response)];
        for (const f of [() => Request("https://a/"), () => Response(), () => new Request(),
          () => Object.getOwnPropertyDescriptor(Response.prototype, "status").get.call({})])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        out.push(await Response.prototype.text.call({}).catch((e) => e.name));
        return out""",
        [
            [1, False, "[object Request]", "function", True],
            [0, False, "[object Response]", "function", True],
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
        ],
    ),
    (
        "patched_prototypes_do_not_break_bodies",
        """Promise.prototype.then = function () { throw new Error("hijacked"); };
        JSON.parse = () => "hijacked";
        Uint8Array.prototype.slice = () => { throw new Error("hijacked"); };
        const r = new Response('{"a":1}');
        return await r.json()""",
        {"a": 1},
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_request_and_response_follow_the_fetch_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default await (async () => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_a_ten_megabyte_body_reads_within_the_default_memory_limit() -> None:
    r = quickjail.run_code_sync(
        """const r = new Response(new Uint8Array(10 * 1024 * 1024).fill(97));
        const t = await r.text();
        export default [t.length, t.charCodeAt(12345)]"""
    )
    assert r.status == "success", r.error
    assert r.result == [10 * 1024 * 1024, 97]


def test_the_body_stream_needs_streams_and_says_so() -> None:
    r = quickjail.run_code_sync(
        """let e; try { new Response("a").body; } catch (x) { e = x; }
        export default typeof ReadableStream === "function" || [e.name, e.message]"""
    )
    assert r.status == "success", r.error
    assert r.result is True or r.result == ["TypeError", "Response.body: streams are not available"]
