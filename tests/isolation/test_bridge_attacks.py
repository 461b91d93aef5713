"""Attacks on the bridge: hostile values as arguments, results and reports (proxies, getters,
cycles, lone surrogates, huge and deep values, forged tags), host functions misused (wrong
types, too many arguments, called after the run), re-entrant runs, and host functions that
return what cannot cross. Each is a clean JS-side error or a faithful copy, never a host fault."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from _isolation import Case, Ctx, MiB, case_id, run_case, table

from quickjail.bridge import run_code, run_code_sync, synchronous
from quickjail.sandbox import UNDEFINED, CodeResult, TypedArray
from quickjail.sandbox.host import is_async_callable


def _host(ctx: Ctx) -> dict[str, Any]:
    """Host functions that record their calls in ``ctx.calls``."""

    def echo(*args: Any) -> list[Any]:
        ctx.calls.append(args)
        return list(args)

    def length(s: str) -> int:
        ctx.calls.append(("length", len(s)))
        return len(s)

    def typed(s: str, n: int) -> str:
        ctx.calls.append(("typed", s, n))
        return s * n

    async def slow() -> int:
        await anyio.sleep(0.05)
        return 1

    def late(tag: str) -> str:
        ctx.calls.append(("late", tag))
        return tag

    def lone() -> list[str]:
        return ["\ud800", "a\udfffb", "\U0001f600"]

    def huge() -> str:
        return "y" * (20 * MiB)

    def dunder_proto() -> dict[str, Any]:
        return {"__proto__": {"polluted": 1}, "constructor": {"prototype": {"x": 1}}}

    def nested_run() -> Any:
        r = run_code_sync("export default 6 * 7", language="javascript", timeout=2)
        return [r.status, r.result]

    async def nested_run_async() -> Any:
        r = await run_code("export default 6 * 7", language="javascript", timeout=2)
        return [r.status, r.result]

    class Opaque:
        pass

    def cycle() -> list[Any]:
        a: list[Any] = []
        a.append(a)
        return a

    def generator() -> Iterator[int]:
        yield 1

    bad_results: dict[str, Any] = {
        "opaque": lambda: Opaque(),
        "generator": generator,
        "python_fn": lambda: len,
        "cycle": cycle,
        "deep": lambda: _nest(200),
        "reserved_key": lambda: {"\x02fn": [0, False, "echo"]},
    }
    functions: dict[str, Any] = {
        "echo": echo,
        "length": length,
        "typed": typed,
        "slow": slow,
        "late": late,
        "lone": lone,
        "huge": huge,
        "dunder_proto": dunder_proto,
        "nested_run": nested_run,
        "nested_run_async": nested_run_async,
        **bad_results,
    }
    # the attacks here target the values crossing, so the sync functions answer in JS at once
    # (a thrown error, not a rejected promise); echo_p takes the default Promise path
    globals = {k: v if is_async_callable(v) else synchronous(v) for k, v in functions.items()}
    return {"globals": {**globals, "echo_p": echo}}


def _nest(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = [v]
    return v


def _not_called(r: CodeResult, ctx: Ctx) -> None:
    assert ctx.calls == [], f"the host function ran: {ctx.calls}"


def _received(*expected: Any) -> Any:
    def check(r: CodeResult, ctx: Ctx) -> None:
        assert ctx.calls == [expected], ctx.calls

    return check


def _reentrant_report(ctx: Ctx) -> dict[str, Any]:
    def cb(value: Any) -> None:
        r = run_code_sync("export default 40 + 2", language="javascript", timeout=2)
        ctx.calls.append((value, r.status, r.result))

    return {"report": cb}


def _reentrant_report_async(ctx: Ctx) -> dict[str, Any]:
    async def cb(value: Any) -> None:
        r = await run_code("export default 40 + 2", language="javascript", timeout=2)
        ctx.calls.append((value, r.status, r.result))

    return {"report": cb}


def _report_cb_raises(ctx: Ctx) -> dict[str, Any]:
    def cb(value: Any) -> None:
        raise RuntimeError("/work/main/secret.py: token=hunter2")

    return {"report": cb}


def _two_nested_runs(r: CodeResult, ctx: Ctx) -> None:
    assert ctx.calls == [(1, "success", 42), (2, "success", 42)], ctx.calls


def _host_error_kept_on_host(r: CodeResult, ctx: Ctx) -> None:
    assert any("hunter2" in str(e) for e in r.host_errors), r.host_errors


def _wrap(body: str) -> str:
    return (
        f"let out;\ntry {{ out = {body} }} catch (e) {{ out = [e.name, e.message] }}\n"
        "export default out"
    )


def _js_type_error(v: Any) -> bool:
    return isinstance(v, list) and v[:1] == ["TypeError"]


CASES = [
    # ---- proxies
    Case(
        "proxy-as-argument",
        "echo(new Proxy({}, {}))",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "proxy-with-throwing-traps-as-argument",
        "echo(new Proxy([], { get() { throw new Error('trap') }, ownKeys() { throw 1 } }))",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "proxy-as-result", "export default new Proxy({ a: 1 }, {})", "js_error", error="TypeError"
    ),
    Case(
        "proxy-nested-in-report",
        _wrap("report({ a: [new Proxy({}, {})] })"),
        "completes",
        result=_js_type_error,
    ),
    Case(
        "revoked-proxy-as-argument",
        "const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); echo(proxy)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "proxy-as-argument-of-a-promise-function",
        "export default await echo_p(new Proxy({}, {})).then(() => 'called', (e) => e.name)",
        "completes",
        result="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "unawaited-proxy-argument-is-an-unhandled-rejection",
        "echo_p(new Proxy({}, {})); export default 'went on'",
        "completes",
        result="went on",
        opts=_host,
        check=_not_called,
    ),
    # ---- getters and hooks on arguments
    Case(
        "throwing-getter-in-argument",
        _wrap("echo({ get x() { throw new Error('getter') } })"),
        "completes",
        result=["Error", "getter"],
        opts=_host,
        check=_not_called,
    ),
    Case(
        "getter-in-argument-is-read-once",
        "let n = 0; echo({ get x() { return ++n } }); export default n",
        "completes",
        result=1,
        opts=_host,
        check=_received({"x": 1}),
    ),
    Case(
        "getter-calls-host-during-encoding",
        "export default echo({ get x() { return echo('inner')[0] } })",
        "completes",
        result=[{"x": "inner"}],
        opts=_host,
    ),
    Case(
        "tojson-on-argument-not-called",
        "const o = { a: 1 }; Object.defineProperty(o, 'toJSON', { value: () => 'hijacked' });\n"
        "export default echo(o)",
        "completes",
        result=[{"a": 1}],
        opts=_host,
        check=_received({"a": 1}),
    ),
    Case(
        "array-index-getter-shrinks-array-mid-encoding",
        "const a = [1, 2, 3];\n"
        "Object.defineProperty(a, 0, { get() { a.length = 1; return 'first' },"
        " enumerable: true, configurable: true });\n"
        "export default echo(a)",
        "completes",
        result=lambda v: v[0][0] == "first" and len(v[0]) == 3,
        opts=_host,
    ),
    # ---- cycles, depth, exotic types
    Case(
        "cycle-in-argument",
        "const a = [1]; a.push(a); echo(a)",
        "js_error",
        error="TypeError",
        message="circular",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "cycle-through-map-in-argument",
        "const m = new Map(); m.set('self', m); echo(m)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "deep-argument-1e5",
        "let o = 1; for (let i = 0; i < 1e5; i++) o = [o]; echo(o)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "symbol-argument",
        "echo(Symbol('s'))",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "function-argument",
        "echo(() => 1)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "float64array-argument",
        "export default echo(new Float64Array(2).subarray(1))",
        "completes",
        result=[TypedArray("Float64Array", bytes(8))],
        opts=_host,
    ),
    Case(
        "detached-buffer-argument",
        "const b = new ArrayBuffer(8); const u = new Float32Array(b); b.transfer();\n"
        "export default echo(u, b)",
        "completes",
        result=[TypedArray("Float32Array"), TypedArray("ArrayBuffer")],
        opts=_host,
    ),
    Case(
        "map-with-object-key-argument",
        _wrap("echo(new Map([[{}, 1]]))"),
        "completes",
        result=_js_type_error,
        opts=_host,
    ),
    Case(
        "set-of-arrays-argument",
        _wrap("echo(new Set([[1]]))"),
        "completes",
        result=_js_type_error,
        opts=_host,
    ),
    Case(
        "map-with-object-key-report",
        _wrap("report(new Map([[{}, 1]]))"),
        "completes",
        result=_js_type_error,
    ),
    Case(
        "map-with-object-key-result",
        "export default new Map([[{}, 1]])",
        "js_error",
        error="TypeError",
    ),
    Case(
        "bigint-5000-digits-result",
        "export default 10n ** 5000n",
        "completes",
        result=lambda v: v == 10**5000,
    ),  # not printed: 5000 digits exceed int->str limits
    Case(
        "bigint-5000-digits-report",
        "report(10n ** 5000n); export default 'ok'",
        "completes",
        result="ok",
    ),
    Case(
        "bigint-5000-digits-argument",
        "export default echo(10n ** 5000n)[0] === 10n ** 5000n",
        "completes",
        result=True,
        opts=_host,
    ),
    # ---- strings
    Case(
        "lone-surrogates-in-arguments",
        "echo('\\ud800', 'a\\udfffb', '\\ud83d'); export default 1",
        "completes",
        result=1,
        opts=_host,
        check=_received("\ufffd", "a\ufffdb", "\ufffd"),
    ),
    Case(
        "lone-surrogates-in-result",
        "export default ['\\udc00', 'x\\ud800']",
        "completes",
        result=["\ufffd", "x\ufffd"],
    ),
    Case(
        "lone-surrogates-from-host-arrive-exactly",
        "const [a, b, c] = lone();\n"
        "export default [a.charCodeAt(0), b.length, b.charCodeAt(1), c.codePointAt(0)]",
        "completes",
        result=[0xD800, 3, 0xDFFF, 0x1F600],
        opts=_host,
    ),
    Case(
        "nul-and-control-chars-round-trip",
        "const s = 'a\\0b\\u0001\\u2028\\u2029\"\\\\'; export default echo(s)[0] === s",
        "completes",
        result=True,
        opts=_host,
    ),
    Case(
        "huge-argument-20mb",
        "export default length('x'.repeat(20 * 2 ** 20))",
        "completes",
        result=20 * MiB,
        opts=_host,
        memory=256 * MiB,
        timeout=5,
        host_bytes=128 * MiB,
    ),
    Case(
        "huge-host-result-20mb",
        "export default huge().length",
        "completes",
        result=20 * MiB,
        opts=_host,
        memory=256 * MiB,
        timeout=5,
        host_bytes=128 * MiB,
    ),
    Case(
        "huge-host-result-into-small-guest-is-catchable",
        _wrap("huge().length"),
        "completes",
        result=lambda v: isinstance(v, list) and v[0] in ("InternalError", "RangeError"),
        opts=_host,
        memory=32 * MiB,
        timeout=5,
        host_bytes=64 * MiB,
    ),
    # ---- host functions misused
    Case(
        "wrong-types-to-typed-function",
        "typed(1, 'x')",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "too-many-arguments-never-reach-the-host",
        "let v; try { v = typed('a', 3, 4, 5) } catch (e) { v = e.name } export default v",
        "completes",
        result=lambda v: v in ("aaa", "TypeError"),
        opts=_host,
        check=lambda r, ctx: (
            None
            if ctx.calls in ([], [("typed", "a", 3)])
            else pytest.fail(f"the host saw {ctx.calls}")
        ),
    ),
    Case(
        "missing-arguments", "typed()", "js_error", error="TypeError", opts=_host, check=_not_called
    ),
    Case(
        "object-where-string-expected",
        "typed({ toString() { return 'a' } }, 2)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "array-where-string-expected",
        "typed(['a'], 2)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "nan-where-int-expected",
        "typed('a', NaN)",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "65536-arguments",
        "echo(...new Array(70000).fill(0))",
        "js_error",
        error="RangeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "host-function-as-constructor",
        "new echo()",
        "js_error",
        error="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "host-global-is-read-only",
        "globalThis.echo = () => 'mine'; export default 1",
        "js_error",
        error="TypeError",
        opts=_host,
    ),
    Case(
        "host-function-this-ignored",
        "export default echo.call({ secret: 1 }, 2)",
        "completes",
        result=[2],
        opts=_host,
    ),
    # ---- after the run, and re-entrancy
    Case(
        "host-call-stashed-in-never-resolved-promise",
        "let resolve; new Promise((r) => { resolve = r }).then(() => late('late'));\n"
        "globalThis.keep = resolve; export default 'done'",
        "completes",
        result="done",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "host-call-queued-as-microtask-after-result",
        "queueMicrotask(() => late('micro')); export default 'done'",
        "completes",
        result="done",
        opts=_host,
        check=lambda r, ctx: (
            None if ctx.calls in ([], [("late", "micro")]) else pytest.fail(str(ctx.calls))
        ),
    ),
    Case(
        "host-call-after-async-call-outlives-run",
        "slow().then(() => late('after-slow')); export default 'done'",
        "completes",
        result="done",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "host-call-after-entry-returned",
        "export default async function () { slow().then(() => late('after')); return 'done' }",
        "completes",
        result="done",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "reentrant-run-from-report-callback",
        "report(1); report(2); export default 'outer'",
        "completes",
        result="outer",
        opts=_reentrant_report,
        check=_two_nested_runs,
    ),
    Case(
        "reentrant-run-from-async-report-callback",
        "report(1); report(2); export default 'outer'",
        "completes",
        result="outer",
        opts=_reentrant_report_async,
        check=_two_nested_runs,
    ),
    Case(
        "reentrant-run-from-host-function",
        "export default nested_run()",
        "completes",
        result=["success", 42],
        opts=_host,
    ),
    Case(
        "reentrant-run-from-async-host-function",
        "export default await nested_run_async()",
        "completes",
        result=["success", 42],
        opts=_host,
    ),
    Case(
        "report-callback-raising-stays-on-host",
        "report(1); export default 'ok'",
        "completes",
        result="ok",
        opts=_report_cb_raises,
        check=_host_error_kept_on_host,
    ),
    # ---- host functions returning what cannot cross
    Case(
        "returns-opaque-object", _wrap("opaque()"), "completes", result=_js_type_error, opts=_host
    ),
    Case("returns-generator", _wrap("generator()"), "completes", result=_js_type_error, opts=_host),
    Case(
        "returns-python-function",
        _wrap("python_fn()"),
        "completes",
        result=_js_type_error,
        opts=_host,
    ),
    Case("returns-cycle", _wrap("cycle()"), "completes", result=_js_type_error, opts=_host),
    Case("returns-200-deep", _wrap("deep()"), "completes", result=_js_type_error, opts=_host),
    Case(
        "returned-callable-never-becomes-a-js-function",
        "let v; try { v = python_fn() } catch (e) { v = e }\nexport default typeof v",
        "completes",
        result="object",
        opts=_host,
    ),
    Case(
        "returns-reserved-marker-key",
        _wrap("typeof reserved_key()"),
        "completes",
        result=lambda v: v != "function",
        opts=_host,
    ),
    Case(
        "returns-dunder-proto-keys-as-own-data",
        "const v = dunder_proto();\n"
        "export default [Object.keys(v), v.polluted, ({}).polluted,"
        " Object.getPrototypeOf(v) === Object.prototype]",
        "completes",
        result=[["__proto__", "constructor"], UNDEFINED, UNDEFINED, True],
        opts=_host,
    ),
    Case(
        "tagged-result-of-48mib-decodes-without-stalling-the-host",
        "export default new Array(3e6).fill(undefined)",
        "completes",
        result=lambda v: len(v) == 3_000_000,
        memory=512 * MiB,
        timeout=6.0,
        host_bytes=512 * MiB,
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_bridge_attack_is_refused_cleanly(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx)


@pytest.mark.timeout(180)
def test_concurrent_runs_never_see_each_others_host_calls() -> None:
    """Host calls are routed to their own run, whatever the interleaving of sync and async."""
    seen: dict[int, list[int]] = {i: [] for i in range(8)}

    def make(i: int) -> dict[str, Any]:
        def sync_call(x: int) -> int:
            seen[i].append(x)
            return i

        async def async_call(x: int) -> int:
            await anyio.sleep(0.001 * (x % 3))
            seen[i].append(x)
            return i

        return {"s": sync_call, "a": async_call}

    src = (
        "const got = new Set();\n"
        "for (let x = 0; x < 200; x++) got.add(await (x % 2 ? s(x) : a(x)));\n"
        "export default [...got]"
    )

    async def main() -> list[CodeResult]:
        out: list[Any] = [None] * 8

        async def one(i: int) -> None:
            out[i] = await run_code(src, language="javascript", timeout=10, globals=make(i))

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one, i)
        return out

    for i, r in enumerate(anyio.run(main)):
        assert r.status == "success" and r.result == [i], r
        assert sorted(seen[i]) == list(range(200))
