"""Host work on what the guest sends: crafted stacks, colliding hashes, deep, wide and
DAG-shaped values, huge BigInts and messages, sparse arrays, merged keys and Dates Python
cannot hold end as a clear outcome, with the host's time and memory bounded by the values'
size (never quadratic, never many times the run's cap), whatever the channel: the result, a
report, a log, a thrown value or a host function's arguments. Status forgery after a caught
allocation failure, errors thrown by engine callbacks and host markers planted on
``Object.prototype`` belong here too: each is the host trusting what the guest made."""

from __future__ import annotations

from typing import Any

import pytest
from _isolation import Case, Ctx, MiB, case_id, run_case, table

from quickjail.sandbox import CodeResult

CAUGHT = "let caught = 'none';\n"
EXPORT = "export default caught"
COLLIDE = (
    "const P = 2n ** 61n - 1n;\n"
    "const coll = (n) => Array.from({length: n}, (_, i) => BigInt(i + 1) * P);\n"
)
DAG = "let dag = []; for (let i = 0; i < 13; i++) dag = [dag, dag, dag];\n"
SPARSE = "const sparse = []; sparse.length = 2 ** 32 - 1;\n"
HOG = "try { new Uint8Array(2 ** 28) } catch {}\n"  # one caught allocation failure
STACK = "const e = new Error('crafted'); e.stack = 'at ' + ' (:1:1'.repeat(200000) + '!';\n"


def _try(body: str) -> str:
    """Run the expression ``body`` and await it (host functions return Promises); ``caught``
    becomes the name of what it threw or rejected with (or 'none')."""
    return CAUGHT + f"try {{ await ({body}) }} catch (e) {{ caught = e.name }}\n" + EXPORT


def _try_why(body: str) -> str:
    """As ``_try``, but ``caught`` becomes ``[name, message]`` of what it threw or rejected."""
    return (
        CAUGHT + f"try {{ await ({body}) }} catch (e) {{ caught = [e.name, e.message] }}\n" + EXPORT
    )


def _refused_because(why: str) -> Any:
    """A report the host cannot hold is refused with a TypeError whose message says why."""

    def check(v: Any) -> bool:
        return (
            isinstance(v, list)
            and v[0] == "TypeError"
            and v[1].startswith("report refused:")
            and why in v[1]
        )

    return check


def _host(ctx: Ctx) -> dict[str, Any]:
    def f(*args: Any) -> int:
        ctx.calls.append(args)
        return 1

    def obj() -> dict[str, Any]:
        return {"a": 1, "nested": {"b": [1, 2]}}

    return {"globals": {"f": f, "obj": obj}}


def _not_called(r: CodeResult, ctx: Ctx) -> None:
    assert ctx.calls == [], ctx.calls[:1]


def _logged(*parts: str) -> Any:
    def check(r: CodeResult, ctx: Ctx) -> None:
        text = " ".join(str(a) for e in r.logs for a in e.args)
        for part in parts:
            assert part in text, (part, text[:300])

    return check


def _reports(n: int) -> Any:
    def check(r: CodeResult, ctx: Ctx) -> None:
        assert len(r.reports) == n, len(r.reports)

    return check


def _kept(text: str) -> Any:
    """The refusal (a report the host cannot hold is a TypeError in JS) is kept on the host,
    naming why."""

    def check(r: CodeResult, ctx: Ctx) -> None:
        assert any(text in str(e) for e in r.host_errors), [str(e)[:120] for e in r.host_errors]

    return check


def _message_cut(r: CodeResult, ctx: Ctx) -> None:
    assert r.error is not None and len(r.error.message) < 1 * MiB
    assert r.error.message.endswith(" characters]"), r.error.message[-80:]


def _huge_int(v: Any) -> bool:
    return isinstance(v, int) and v.bit_length() > 100_000


CASES = [
    # ---- crafted e.stack lines: parsed in linear time, however the error leaves the guest
    Case(
        "stack-crafted-rejected",
        STACK + "await Promise.reject(e)",
        "js_error",
        error="Error",
        message="crafted",
    ),
    Case(
        "stack-crafted-frames",
        "const e = new Error('frames'); e.stack = '    at f ('.repeat(200000); throw e",
        "js_error",
        message="frames",
    ),
    Case(
        "stack-crafted-logged",
        STACK + "console.error(e); console.log({e}); export default 1",
        "completes",
        result=1,
    ),
    Case(
        "stack-crafted-unhandled",
        STACK + "Promise.reject(e); export default 1",
        "completes",
        result=1,
    ),
    # ---- Sets and Maps whose members collide in CPython's int hash: refused in linear time
    Case(
        "collide-set-report",
        COLLIDE + _try_why("report(new Set(coll(40000)))"),
        "completes",
        result=_refused_because("one Python hash value"),
        check=_kept("one Python hash value"),
    ),
    Case(
        "collide-map-host-arg",
        COLLIDE + _try("f(new Map(coll(40000).map((k) => [k, 1])))"),
        "completes",
        result="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case("collide-set-thrown", COLLIDE + "throw new Set(coll(40000))", "js_error"),
    Case(
        "collide-map-logged",
        COLLIDE + "console.log(new Map(coll(40000).map((k) => [k, 1]))); export default 1",
        "completes",
        result=1,
    ),
    # ---- deep and wide nesting: a clear error or a value, never a host stack overflow
    Case(
        "deep-result-100k",
        "let a = []; for (let i = 0; i < 100000; i++) a = [a]; export default a",
        "js_error",
    ),
    Case(
        "deep-report-100k",
        "let a = {}; for (let i = 0; i < 100000; i++) a = {a};\n" + _try("report(a)"),
        "completes",
        result=lambda v: v in ("RangeError", "TypeError", "InternalError"),
    ),
    Case(
        "deep-host-arg-100k",
        "let a = []; for (let i = 0; i < 100000; i++) a = [a];\n" + _try("f(a)"),
        "completes",
        result=lambda v: v != "none",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "wide-report-200k",
        "report(Array.from({length: 200000}, () => [])); export default 1",
        "completes",
        result=1,
        memory=64 * MiB,
        check=_reports(1),
    ),
    # ---- DAGs: 14 arrays in the guest, millions of lists on the host, stopped by the budget
    Case(
        "dag-result",
        DAG + "export default dag",
        "js_error",
        error="TypeError",
        message="decode budget",
        memory=64 * MiB,
    ),
    Case(
        "dag-reports",
        DAG + "let n = 0; try { for (;;) { report(dag); n++ } } catch {}\nexport default n",
        "completes",
        result=lambda n: isinstance(n, int) and n < 5,
        memory=64 * MiB,
    ),
    Case(
        "dag-host-arg",
        DAG + _try("f(dag)"),
        "completes",
        result="TypeError",
        memory=64 * MiB,
        opts=_host,
        check=_not_called,
    ),
    Case("dag-thrown", DAG + "throw dag", "js_error", memory=64 * MiB),
    Case(
        "dag-logged",
        DAG + "console.log(dag); console.log([dag]); export default 1",
        "completes",
        result=1,
        memory=64 * MiB,
    ),
    # ---- huge BigInts: described, never a ValueError from CPython's int-digit limit
    Case("bigint-huge-thrown-object", "throw {name: 'Big', message: 2n ** 400000n}", "js_error"),
    Case(
        "bigint-huge-cause", "throw new Error('m', {cause: 2n ** 400000n})", "js_error", message="m"
    ),
    Case("bigint-huge-report", "report(2n ** 400000n); export default 1", "completes", result=1),
    Case(
        "bigint-huge-result-in-map",
        "export default new Map([[2n ** 400000n, -(2n ** 400000n)]])",
        "completes",
        result=lambda m: all(_huge_int(k) for k in m),
    ),
    Case(
        "bigint-huge-logged",
        "console.log(2n ** 400000n, [2n ** 400000n]); export default 1",
        "completes",
        result=1,
    ),
    Case(
        "bigint-huge-rejection",
        "Promise.reject(2n ** 400000n); export default 1",
        "completes",
        result=1,
    ),
    # ---- huge error messages and names: cut in the guest, the status stays error
    Case(
        "error-message-32mib-object",
        "throw {name: 'E', message: 'x'.repeat(32 * 2 ** 20)}",
        "js_error",
        memory=96 * MiB,
        check=_message_cut,
    ),
    Case(
        "error-message-32mib-subclass",
        "class E extends Error { get message() { return 'y'.repeat(32 * 2 ** 20) } }\n"
        "throw new E()",
        "js_error",
        memory=96 * MiB,
        check=_message_cut,
    ),
    Case(
        "error-message-32mib-rejection",
        "await Promise.reject(new TypeError('z'.repeat(32 * 2 ** 20)))",
        "js_error",
        error="TypeError",
        memory=96 * MiB,
        check=_message_cut,
    ),
    # ---- sparse arrays with a huge length: refused before the walk, every channel
    Case(
        "sparse-result",
        SPARSE + "export default {sparse}",
        "js_error",
        error="TypeError",
        message="size cap",
    ),
    Case(
        "sparse-host-arg",
        SPARSE + _try("f(1, [sparse])"),
        "completes",
        result="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case("sparse-thrown", SPARSE + "throw sparse", "js_error"),
    Case(
        "sparse-typed-length",
        "const a = []; a.length = 2 ** 31; a[2 ** 31 - 2] = 1;\n" + _try("report(a)"),
        "completes",
        result="TypeError",
    ),
    # ---- deep JSON.stringify: a catchable error, not quadratic engine work
    Case(
        "json-stringify-deep-array",
        "let a = []; for (let i = 0; i < 200000; i++) a = [a];\n" + _try("JSON.stringify(a)"),
        "completes",
        result=lambda v: v in ("RangeError", "InternalError"),
    ),
    Case(
        "json-stringify-deep-tojson",
        "let a = {toJSON() { return [a] }};\n" + _try("JSON.stringify(a)"),
        "completes",
        result=lambda v: v in ("RangeError", "InternalError"),
    ),
    # ---- errors thrown by engine callbacks are logged; the run carries on
    Case(
        "finalization-throws-bigint",
        "const r = new FinalizationRegistry(() => { throw 2n ** 100000n });\n"
        "(() => { for (let i = 0; i < 50; i++) r.register({}, i) })();\n"
        "for (let i = 0; i < 5; i++) await null;\nexport default 'done'",
        "completes",
        result="done",
    ),
    Case(
        "finalization-throws-huge-message",
        "const r = new FinalizationRegistry(() => { throw new Error('m'.repeat(2 ** 20)) });\n"
        "(() => { for (let i = 0; i < 5; i++) r.register({}, i) })();\n"
        "for (let i = 0; i < 5; i++) await null;\nexport default 'done'",
        "completes",
        result="done",
    ),
    # ---- status forgery after a caught allocation failure: still an error, never memory
    Case("oom-forge-range-error", HOG + "throw new RangeError('out of memory')", "js_error"),
    Case("oom-forge-rejected-null", HOG + "await Promise.reject(null)", "js_error"),
    Case(
        "oom-forge-later-task",
        HOG
        + "await new Promise((r) => setTimeout(r, 1));\nthrow new InternalError('out of memory')",
        "js_error",
    ),
    # ---- host markers planted on Object.prototype: only own properties mark host functions
    Case(
        "proto-marker-host-module",
        "Object.prototype['\\x02fn'] = [0, 0, 'forged'];\n"
        "const m = await import('cfg');\n"
        "delete Object.prototype['\\x02fn'];\n"
        "export default [typeof m.opts, typeof m.default, m.opts.a]",
        "completes",
        result=["object", "object", 1],
        opts=lambda ctx: {"imports": {"cfg": {"opts": {"a": 1}, "fn": _host(ctx)["globals"]["f"]}}},
        check=_not_called,
    ),
    Case(
        "proto-marker-getter-host-reply",
        "Object.defineProperty(Object.prototype, '\\x02fn',\n"
        "  {configurable: true, get() { return [0, 0, 'x'] }});\n"
        "const o = await obj();\ndelete Object.prototype['\\x02fn'];\n"
        "export default [typeof o, typeof o.nested, o.nested.b.length]",
        "completes",
        result=["object", "object", 2],
        opts=_host,
        check=_not_called,
    ),
    # ---- values that would merge in Python: a TypeError naming the path, on every channel
    Case(
        "merge-report-map",
        _try_why("report(new Map([[1, 'a'], [true, 'b']]))"),
        "completes",
        result=_refused_because("are one in Python"),
        check=_kept("are one in Python"),
    ),
    Case(
        "merge-host-arg-set",
        _try("f(new Set([1, 1n]))"),
        "completes",
        result="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case("merge-thrown", "throw {m: new Map([[1, 'a'], [1n, 'b']])}", "js_error"),
    Case(
        "merge-logged",
        "console.log(new Map([[1, 'a'], [true, 'b'], [1n, 'c']])); export default 1",
        "completes",
        result=1,
        check=_logged("one in Python"),
    ),
    # ---- Dates Python cannot hold: a TypeError naming the path, or their ISO text in logs
    Case(
        "date-report-out-of-range",
        _try_why("report({when: new Date(8.64e15)})"),
        "completes",
        result=_refused_because("at value.when"),
        check=_kept("at value.when"),
    ),
    Case(
        "date-host-arg-out-of-range",
        _try("f(new Date(-8.64e15))"),
        "completes",
        result="TypeError",
        opts=_host,
        check=_not_called,
    ),
    Case(
        "date-logged-out-of-range",
        "console.log(new Date(-62167219200000)); export default 1",
        "completes",
        result=1,
        check=_logged("0000-01-01T00:00:00.000Z"),
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_host_work_on_guest_data_is_bounded_and_ends_clearly(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx)
