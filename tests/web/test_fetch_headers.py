"""Headers behave as WHATWG Fetch says for a Worker (no forbidden names; values checked against
Node 20).

Each case is the body of a function; its result is what the spec makes of it.
"""

from __future__ import annotations

import pytest

import quickjail

CASES: list[tuple[str, str, object]] = [
    (
        "names_are_case_insensitive_and_values_combine",
        """const h = new Headers({ "X-B": "2", a: " 1 " });
        h.append("x-b", "3");
        return [h.get("X-B"), h.get("a"), h.has("A"), h.get("missing"), h.has("x-c")]""",
        ["2, 3", "1", True, None, False],
    ),
    (
        "iteration_is_sorted_and_combined_but_set_cookie_stays_apart",
        """const h = new Headers([["z", "1"], ["Set-Cookie", "a=1"], ["b", "2"],
          ["set-cookie", "b=2"], ["B", "3"]]);
        return [[...h], [...h.keys()], [...h.values()], h.getSetCookie(), h.get("set-cookie")]""",
        [
            [["b", "2, 3"], ["set-cookie", "a=1"], ["set-cookie", "b=2"], ["z", "1"]],
            ["b", "set-cookie", "set-cookie", "z"],
            ["2, 3", "a=1", "b=2", "1"],
            ["a=1", "b=2"],
            "a=1, b=2",
        ],
    ),
    (
        "set_replaces_every_value_and_delete_removes_them",
        """const h = new Headers([["a", "1"], ["b", "x"], ["a", "2"]]);
        h.set("A", "9"); const afterSet = [...h];
        h.delete("a");
        return [afterSet, [...h]]""",
        [[["a", "9"], ["b", "x"]], [["b", "x"]]],
    ),
    (
        "init_from_a_record_a_sequence_or_headers",
        """const a = new Headers({ x: "1" }), b = new Headers([["y", "2"]]), c = new Headers(b);
        b.set("y", "changed");
        return [[...a], [...c], [...new Headers(new Map([["m", "3"]]))], [...new Headers()]]""",
        [[["x", "1"]], [["y", "2"]], [["m", "3"]], []],
    ),
    (
        "values_are_normalized_and_tabs_inside_are_kept",
        """const h = new Headers({ a: "\\t x\\ty \\r\\n" });
        return [h.get("a"), new Headers({ b: "" }).get("b")]""",
        ["x\ty", ""],
    ),
    (
        "invalid_names_and_values_are_type_errors",
        """const out = [];
        for (const f of [() => new Headers({ "a b": "1" }), () => new Headers({ a: "x\\ny" }),
          () => new Headers({ a: "\\u0100" }), () => new Headers({ "é": "1" }),
          () => new Headers([["a"]]), () => new Headers([["a", "b", "c"]]), () => new Headers(5),
          () => new Headers("a"), () => new Headers().get(""), () => new Headers().append("a",
          "\\0"),
          () => new Headers().set("(", "1"), () => new Headers().has("a:"), () => Headers(),
          () => Headers.prototype.get.call({}, "a"), () => new Headers().append("a")])
          try { f(); out.push("no error"); } catch (e) { out.push(e.name); }
        return out""",
        ["TypeError"] * 15,
    ),
    (
        "iterators_are_live_and_shaped_as_web_idl_says",
        """const h = new Headers({ a: "1", b: "2" }); const it = h.keys();
        const first = it.next().value; h.append("c", "3");
        const rest = [...it];
        const proto = Object.getPrototypeOf(it);
        return [first, rest, Object.prototype.toString.call(it),
          Object.getPrototypeOf(proto) ===
            Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())),
          Headers.prototype[Symbol.iterator] === Headers.prototype.entries]""",
        ["a", ["b", "c"], "[object Headers Iterator]", True, True],
    ),
    (
        "for_each_sees_sorted_values",
        """const h = new Headers({ b: "2", a: "1" }), seen = [];
        h.forEach(function (v, k, o) { seen.push([k, v, o === h, this.t]); }, { t: 1 });
        return seen""",
        [["a", "1", True, 1], ["b", "2", True, 1]],
    ),
    (
        "web_idl_shape",
        """const d = Object.getOwnPropertyDescriptor(globalThis, "Headers");
        return [Headers.length, d.enumerable, Object.prototype.toString.call(new Headers()),
          Object.getOwnPropertyDescriptor(Headers.prototype, "get").enumerable,
          Object.keys(new Headers()).length, Headers.prototype.append.length]""",
        [0, False, "[object Headers]", True, 0, 2],
    ),
    (
        "patched_prototypes_do_not_break_headers",
        """Array.prototype.sort = () => { throw new Error("hijacked"); };
        Array.prototype.push = () => { throw new Error("hijacked"); };
        String.prototype.toLowerCase = () => "hijacked";
        RegExp.prototype.test = () => false;
        const h = new Headers({ B: "2" }); h.append("a", "1"); h.append("b", "3");
        Object.getPrototypeOf([][Symbol.iterator]()).next = () => { throw new Error("hijacked"); };
        const out = [];
        for (const pair of h) out[out.length] = pair;
        return out""",
        [["a", "1"], ["b", "2, 3"]],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_headers_follow_the_fetch_standard(body: str, expected: object) -> None:
    r = quickjail.run_code_sync(f"export default (() => {{ {body} }})()")
    assert r.status == "success", r.error
    assert r.result == expected


def test_twenty_thousand_headers_sort_and_combine() -> None:
    r = quickjail.run_code_sync(
        """const h = new Headers();
        for (let i = 0; i < 20000; i++) h.append(`x-${i % 5000}`, `${i}`);
        let n = 0; for (const [k] of h) n++;
        export default [n, h.get("x-7")]"""
    )
    assert r.status == "success", r.error
    assert r.result == [5000, "7, 5007, 10007, 15007"]
