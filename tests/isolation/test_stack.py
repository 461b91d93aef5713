"""Stack exhaustion: deep recursion in JS, in native builtins and in the parser is a catchable
error inside JS (the program catches it and continues), or a ``js_error`` for a source too deep
to parse; never a crash, and never a wasm trap surfacing as a host-side ``InternalError``."""

from __future__ import annotations

from typing import Any

import pytest
from _isolation import Case, Ctx, MiB, case_id, run_case, table


def _caught(id: str, body: str, name: str | tuple[str, ...] = "RangeError", **kw: Any) -> Case:
    """``body`` must throw ``name``; the program catches it, recurses again, and continues."""
    names = (name,) if isinstance(name, str) else name
    src = (
        "let caught = 'nothing thrown';\n"
        f"try {{ {body} }} catch (e) {{ caught = e.name }}\n"
        "function again(n) { return n ? again(n - 1) + 1 : 0 }\n"
        "export default [caught, again(1000)]"
    )
    return Case(id, src, "completes", result=lambda v: v[0] in names and v[1] == 1000, **kw)


PROXIES = "let o = {}; for (let i = 0; i < 1e5; i++) o = new Proxy(o, {});\n"
BOUND = (
    "let f = function () {};\n"
    "for (let i = 0; i < 1e5; i++) {"
    " f = f.bind(null); Object.defineProperty(f, 'name', { value: '' }) }\n"
)


def _src(nest: str, close: str, n: int, pre: str = "export default ", post: str = "") -> str:
    return pre + nest * n + "1" + close * n + post


CASES = [
    # ---- recursion in JS
    Case("plain-recursion-uncaught", "function f() { f() } f()", "js_error", error="RangeError"),
    _caught("plain-recursion", "function f() { f() } f()"),
    _caught("mutual-recursion", "function a() { b() } function b() { a() } a()"),
    _caught(
        "recursion-with-many-locals",
        "function f(a, b, c, d, e, g, h) { const x = [a, b, c]; return f(...x, d, e, g, h) }"
        " f(1, 2, 3, 4, 5, 6, 7)",
    ),
    _caught("recursion-inside-getter", "const o = { get x() { return this.x } }; o.x"),
    _caught(
        "recursion-inside-proxy-get", "const p = new Proxy({}, { get: (t, k, r) => r[k] }); p.x"
    ),
    _caught("recursion-via-tostring", "const o = { toString() { return `${this}` } }; String(o)"),
    _caught("async-recursion", "async function f() { await f() } await f()"),
    _caught("generator-delegation-recursion", "function* g() { yield* g() } [...g()]"),
    _caught(
        "class-extends-chain-1e4",
        "let C = class {};\n"
        "for (let i = 0; i < 1e4; i++) C = class extends C { constructor() { super() } };\n"
        "new C()",
    ),
    _caught(
        "overflow-twice-then-continue",
        "function f() { f() } for (let i = 0; i < 3; i++) { try { f() } catch {} } f()",
    ),
    # ---- recursion through native builtins (native frames interleaved)
    _caught("through-foreach", "function f() { [0].forEach(f) } f()"),
    _caught("through-sort", "function f() { [2, 1].sort(f) } f()"),
    _caught("through-json-reviver", "function f() { return JSON.parse('[1]', f) } f()"),
    _caught("through-replace", "function f() { return 'a'.replace(/a/, f) } f()"),
    _caught("through-reflect-apply", "function f() { return Reflect.apply(f, null, []) } f()"),
    _caught("through-tojson", "function f() { return JSON.stringify({ toJSON: f }) } f()"),
    _caught(
        "through-species",
        "function f() { class A extends Array { static get [Symbol.species]()"
        " { f(); return Array } } return new A(1).map((x) => x) } f()",
    ),
    _caught("through-proxy-apply", "function f() { return new Proxy(f, {})() } f()"),
    # ---- deep data walked by builtins
    _caught(
        "json-parse-unclosed-1e5", "JSON.parse('['.repeat(1e5))", ("RangeError", "SyntaxError")
    ),
    _caught("json-parse-valid-1e5", "JSON.parse('['.repeat(1e5) + ']'.repeat(1e5))"),
    _caught("array-tostring-cycle", "const a = [1]; a.push(a); String(a)"),
    _caught("array-join-cycle-through-nesting", "const a = [[[]]]; a[0][0].push(a); a.join()"),
    _caught(
        "array-tostring-deep-1e5", "let a = []; for (let i = 0; i < 1e5; i++) a = [a]; String(a)"
    ),
    _caught(
        "array-flat-deep-1e5",
        "let a = [1]; for (let i = 0; i < 1e5; i++) a = [a]; a.flat(Infinity)",
    ),
    _caught("proxy-chain-get-1e5", PROXIES + "o.x"),
    _caught("proxy-chain-set-1e5", PROXIES + "o.x = 1"),
    _caught("bound-chain-call-1e5", BOUND + "f()"),
    _caught(
        "regex-nested-capturing-groups",
        "new RegExp('('.repeat(1e5) + ')'.repeat(1e5))",
        "SyntaxError",
    ),
    _caught(
        "regex-nested-noncapturing-groups",
        "new RegExp('(?:a'.repeat(1e5) + ')'.repeat(1e5)).exec('a')",
        "SyntaxError",
    ),
    _caught(
        "regex-nested-lookaheads", "new RegExp('(?=a'.repeat(1e5) + ')'.repeat(1e5))", "SyntaxError"
    ),
    _caught(
        "regex-backtrack-stack", "/(a)*/.exec('a'.repeat(1e6))", "InternalError", memory=64 * MiB
    ),
    _caught(
        "json-stringify-deep-1e5",
        "let o = []; for (let i = 0; i < 1e5; i++) o = [o]; JSON.stringify(o)",
    ),
    _caught(
        "json-stringify-deep-object-1e5",
        "let o = {}; for (let i = 0; i < 1e5; i++) o = { o }; JSON.stringify(o)",
    ),
    # a Proxy forwarding to its target and a bound function calling its target took almost no
    # shadow stack, so these trapped on wasmtime's native stack (our patch 0003)
    _caught("proxy-chain-object-keys-1e5", PROXIES + "Object.keys(o)"),
    _caught("proxy-chain-getprototypeof-1e5", PROXIES + "Object.getPrototypeOf(o)"),
    _caught("proxy-chain-setprototypeof-1e5", PROXIES + "Object.setPrototypeOf(o, null)"),
    _caught("proxy-chain-for-in-1e5", PROXIES + "for (const k in o) {}"),
    _caught("proxy-chain-spread-1e5", PROXIES + "({ ...o })"),
    _caught("bound-chain-construct-1e5", BOUND + "new f()"),
    # ---- the transfer's depth cap
    Case(
        "result-nested-1e5",
        "let o = 1; for (let i = 0; i < 1e5; i++) o = [o]; export default o",
        "js_error",
        error="TypeError",
        message="deeper",
    ),
    _caught(
        "report-nested-1e5",
        "let o = 1; for (let i = 0; i < 1e5; i++) o = { o }; report(o)",
        "TypeError",
    ),
    Case(
        "log-nested-1e5-is-lenient",
        "let o = 1; for (let i = 0; i < 1e5; i++) o = [o]; console.log(o); export default 'ok'",
        "completes",
        result="ok",
    ),
    # ---- sources too deep to parse (passed as the module source itself; eval is off)
    Case("parse-nested-parens-1e5", _src("(", ")", 100_000), "js_error", error="RangeError"),
    Case("parse-nested-arrays-1e5", _src("[", "]", 100_000), "js_error", error="RangeError"),
    Case(
        "parse-nested-blocks-1e5",
        _src("{", "}", 100_000, pre="", post="; export default 1"),
        "js_error",
        error="RangeError",
    ),
    Case(
        "parse-nested-ternaries-1e5",
        "export default " + "1 ? " * 100_000 + "1" + " : 1" * 100_000,
        "js_error",
        error="RangeError",
    ),
    Case("parse-nested-arrows-1e4", _src("(() => ", ")", 10_000), "js_error"),
    Case("parse-nested-object-literals-1e4", _src("{ a: ", " }", 10_000), "js_error"),
    Case(
        "parse-nested-template-literals-1e4",
        "export default " + "`${" * 10_000 + "1" + "}`" * 10_000,
        "js_error",
    ),
    Case(
        "parse-nested-functions-1e4",
        "export default " + "function f() { return " * 10_000 + "1" + " }" * 10_000,
        "js_error",
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_deep_recursion_is_a_catchable_error(case: Case, ctx: Ctx) -> None:
    r = run_case(case, ctx)
    traps = [e for e in r.host_errors if "trap" in repr(e).lower()]
    assert not traps, f"case {case.id!r}: the guest trapped: {traps}"
