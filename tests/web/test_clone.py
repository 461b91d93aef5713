"""structuredClone follows HTML's structured serialize/deserialize, through the public API."""

from __future__ import annotations

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


@pytest.mark.parametrize(
    ("value", "check", "expected"),
    [
        ("undefined", "c === undefined", True),
        ("null", "c === null", True),
        ("-0", "Object.is(c, -0)", True),
        ("NaN", "Number.isNaN(c)", True),
        ("123n ** 20n", "c === 123n ** 20n", True),
        ("'str\\u{1F600}'", "c", "str\U0001f600"),
        (
            "new Boolean(false)",
            "[typeof c, c instanceof Boolean, c.valueOf()]",
            ["object", True, False],
        ),
        ("new Number(-0)", "[c instanceof Number, Object.is(c.valueOf(), -0)]", [True, True]),
        ("new String('s')", "[c instanceof String, c.valueOf(), c !== v]", [True, "s", True]),
        ("Object(5n)", "[typeof c, c.valueOf() === 5n]", ["object", True]),
        ("new Date(86400000)", "[c instanceof Date, c.getTime(), c !== v]", [True, 86400000, True]),
        ("new Date(NaN)", "Number.isNaN(c.getTime())", True),
        (
            "Object.assign(/a+b/giy, { lastIndex: 3, extra: 1 })",
            "[c instanceof RegExp, c.source, c.flags, c.lastIndex, 'extra' in c]",
            [True, "a+b", "giy", 0, False],
        ),
        (
            "new Map([[1, 'a'], [{ k: 1 }, [2]]])",
            "[c instanceof Map, c.size, c.get(1), [...c.keys()][1].k, [...c.values()][1][0]]",
            [True, 2, "a", 1, 2],
        ),
        ("new Set([1, 'a', 1])", "[c instanceof Set, [...c]]", [True, [1, "a"]]),
        (
            "new Uint8Array([1, 2, 3]).buffer",
            "[c instanceof ArrayBuffer, new Uint8Array(c), c !== v]",
            [True, b"\x01\x02\x03", True],
        ),
        (
            "new ArrayBuffer(2, { maxByteLength: 8 })",
            "[c.resizable, c.maxByteLength, c.byteLength]",
            [True, 8, 2],
        ),
        (
            "new Int16Array([-1, 2]).subarray(1)",
            "[c instanceof Int16Array, [...c], c.byteOffset, c.buffer.byteLength]",
            [True, [2], 2, 4],
        ),
        (
            "new BigInt64Array([-1n])",
            "[c instanceof BigInt64Array, c[0] === -1n]",
            [True, True],
        ),
        (
            "new DataView(new ArrayBuffer(8), 2, 4)",
            "[c instanceof DataView, c.byteOffset, c.byteLength]",
            [True, 2, 4],
        ),
        ("[1, , 3]", "[c.length, 1 in c, c[2]]", [3, False, 3]),
        ("Object.assign([1], { extra: 'e' })", "[Array.isArray(c), c.extra]", [True, "e"]),
        ("new Array(5)", "[c.length, Object.keys(c).length]", [5, 0]),
        (
            "({ get g() { return 7 }, [Symbol('s')]: 1, e: 2 })",
            "[Object.getOwnPropertyDescriptor(c, 'g').value,"
            " Object.getOwnPropertySymbols(c).length]",
            [7, 0],
        ),
        (
            "Object.defineProperty({ a: 1 }, 'hidden', { value: 2, enumerable: false })",
            "Object.getOwnPropertyNames(c)",
            ["a"],
        ),
        (
            "new (class K { #p = 1; q = 2; get r() { return 3 } })()",
            "[Object.getPrototypeOf(c) === Object.prototype, JSON.stringify(c)]",
            [True, '{"q":2}'],
        ),
        ("Object.create(null)", "Object.getPrototypeOf(c) === Object.prototype", True),
        ("({ ['__proto__']: 1 })", "[Object.hasOwn(c, '__proto__'), c.__proto__]", [True, 1]),
        (
            "new (class extends Map {})([[1, 2]])",
            "[Object.getPrototypeOf(c) === Map.prototype, c.get(1)]",
            [True, 2],
        ),
    ],
)
def test_clone_table(value: str, check: str, expected: object) -> None:
    assert js(f"const v = {value}; const c = structuredClone(v); {check}") == expected


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        ("new TypeError('m')", ["TypeError", "m", True, False]),
        ("new RangeError()", ["RangeError", "", True, False]),
        ("new URIError('u')", ["URIError", "u", True, False]),
        ("Object.assign(new Error('m'), { name: 'Custom' })", ["Error", "m", True, False]),
        (
            "(() => { class E extends TypeError {} return new E('s') })()",
            ["TypeError", "s", True, False],
        ),
        ("new Error('c', { cause: { k: 1 } })", ["Error", "c", True, True]),
    ],
)
def test_errors_keep_known_name_message_cause_and_stack(make: str, expected: list[object]) -> None:
    got = js(
        f"const e = {make}; const c = structuredClone(e);"
        "[c.name, c.message, c.stack === e.stack && c instanceof Error,"
        " Object.hasOwn(c, 'cause') && c.cause.k === 1 && c.cause !== e.cause]"
    )
    assert got == expected


def test_domexception_is_cloned() -> None:
    got = js(
        "const c = structuredClone(new DOMException('m', 'AbortError'));"
        "[c instanceof DOMException, c.name, c.message, c.code]"
    )
    assert got == [True, "AbortError", "m", 20]


def test_cycles_and_shared_references_are_preserved() -> None:
    got = js(
        "const shared = { s: 1 }; const o = { a: shared, b: shared, m: new Map(), arr: [] };"
        "o.self = o; o.m.set(o, o.arr); o.arr.push(o, shared);"
        "const c = structuredClone(o);"
        "[c !== o, c.self === c, c.a === c.b, c.a !== shared, c.m.get(c) === c.arr,"
        " c.arr[0] === c, c.arr[1] === c.a]"
    )
    assert got == [True] * 7


def test_views_on_one_buffer_still_share_it() -> None:
    got = js(
        "const b = new ArrayBuffer(8); const v = [new Uint8Array(b, 1, 2), new DataView(b),"
        " new Float32Array(b, 4, 1), b];"
        "const c = structuredClone(v); c[0][0] = 9;"
        "[c[0].buffer === c[1].buffer, c[2].buffer === c[3], c[1].getUint8(1),"
        " new Uint8Array(b)[1], c[3] !== b]"
    )
    assert got == [True, True, 9, 0, True]


@pytest.mark.parametrize(
    "value",
    [
        "() => 1",
        "function f() {}",
        "class K {}",
        "Symbol('s')",
        "Object(Symbol())",
        "new WeakMap()",
        "new WeakSet()",
        "new WeakRef({})",
        "new FinalizationRegistry(() => {})",
        "Promise.resolve(1)",
        "new Proxy({}, {})",
        "(function* () {})()",
        "new Map().keys()",
        "({ nested: [{ f() {} }] })",
        "({ f: Math.max })",
        "new Map([[1, Symbol()]])",
        "(() => { const b = new ArrayBuffer(1); b.transfer(); return b })()",
        "(() => { const b = new ArrayBuffer(1); const u = new Uint8Array(b); b.transfer();"
        " return u })()",
    ],
)
def test_uncloneable_values_throw_datacloneerror(value: str) -> None:
    got = js(
        f"try {{ structuredClone({value}); 'cloned' }}"
        " catch (e) { [e instanceof DOMException, e.name, e.code] }"
    )
    assert got == [True, "DataCloneError", 25]


def test_getters_run_in_order_and_their_errors_propagate() -> None:
    got = js(
        "const log = []; const o = { get a() { log.push('a'); return { get x() { log.push('x');"
        " return 1 } } }, get b() { log.push('b'); return 2 } };"
        "structuredClone(o);"
        "let e; try { structuredClone({ get boom() { throw new SyntaxError('g') } }) }"
        " catch (x) { e = x.name }"
        "[log, e]"
    )
    assert got == [["a", "x", "b"], "SyntaxError"]


def test_a_proxy_of_an_array_clones_as_an_array() -> None:
    assert js("structuredClone(new Proxy([1, 2], {}))") == [1, 2]


def test_transfer_detaches_the_source_and_moves_the_bytes() -> None:
    got = js(
        "const b = new Uint8Array([1, 2, 3]).buffer; const v = new Uint8Array(b, 1);"
        "const c = structuredClone({ b, v }, { transfer: [b] });"
        "[b.detached, b.byteLength, v.length, new Uint8Array(c.b), c.v.buffer === c.b, [...c.v]]"
    )
    assert got == [True, 0, 0, b"\x01\x02\x03", True, [2, 3]]


def test_a_transferred_buffer_need_not_be_in_the_value() -> None:
    assert js("const b = new ArrayBuffer(4); structuredClone(1, { transfer: [b] }); b.detached")


@pytest.mark.parametrize(
    ("options", "outcome"),
    [
        ("{ transfer: [b, b] }", "DataCloneError"),
        ("{ transfer: [new Uint8Array(1)] }", "DataCloneError"),
        ("{ transfer: [{}] }", "DataCloneError"),
        ("{ transfer: [d] }", "DataCloneError"),
        ("{ transfer: [1] }", "TypeError"),
        ("{ transfer: 1 }", "TypeError"),
        ("1", "TypeError"),
        ("null", "ok"),
        ("{}", "ok"),
        ("{ transfer: undefined }", "ok"),
    ],
)
def test_transfer_list_is_checked(options: str, outcome: str) -> None:
    got = js(
        "const b = new ArrayBuffer(1); const d = new ArrayBuffer(1); d.transfer();"
        f"let r; try {{ structuredClone(b, {options}); r = 'ok' }} catch (e) {{ r = e.name }}"
        "[r, r === 'ok' || !b.detached]"
    )
    assert got == [outcome, True]


def test_a_failed_clone_detaches_nothing() -> None:
    got = js(
        "const b = new ArrayBuffer(4);"
        "try { structuredClone({ b, f() {} }, { transfer: [b] }) } catch {}"
        "b.detached"
    )
    assert got is False


def test_a_hundred_thousand_deep_object_clones_without_recursion() -> None:
    got = js(
        "let deep = {}; for (let i = 0; i < 1e5; i++) deep = { n: deep };"
        "let d = structuredClone(deep), k = 0; while (d.n) { d = d.n; k++ } k"
    )
    assert got == 100000


def test_a_missing_argument_is_a_typeerror() -> None:
    got = js("try { structuredClone() } catch (e) { [e.name, structuredClone.length] }")
    assert got == ["TypeError", 1]


def test_the_clone_ignores_later_monkey_patching() -> None:
    got = js(
        "const v = { m: new Map([[1, 2]]), a: [1] };"
        "Map.prototype.set = () => { throw new Error('patched') };"
        "Object.defineProperty = () => { throw new Error('patched') };"
        "Function.prototype.call = () => { throw new Error('patched') };"
        "const c = structuredClone(v); [c.m.size, c.a]"
    )
    assert got == [1, [1]]
