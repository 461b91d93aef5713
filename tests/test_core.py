"""The sandbox core through the public API: results, entry semantics, logs, reports, statuses."""

from __future__ import annotations

import datetime as dt
import math
import sys
import threading
import time

import anyio
import anyio.lowlevel
import pytest

from quickjail import sandbox
from quickjail.bridge import run_code, run_code_sync, synchronous
from quickjail.sandbox import UNDEFINED, TypedArray, _stacks

pytestmark = pytest.mark.usefixtures("sync_path")


def ok(src: str, **kw: object) -> object:
    r = run_code_sync(src, **kw)
    assert r.status == "success", r.error
    return r.result


# ---------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("js", "expected"),
    [
        ("1 + 1", 2),
        ("1.5", 1.5),
        ("-0", -0.0),
        ("'héllo 😀'", "héllo 😀"),
        ("true", True),
        ("null", None),
        ("undefined", UNDEFINED),
        ("[1, 'a', null, undefined]", [1, "a", None, UNDEFINED]),
        ("({a: {b: [1, {c: 2}]}})", {"a": {"b": [1, {"c": 2}]}}),
        ("new Uint8Array([0, 1, 255])", b"\x00\x01\xff"),
        ("new Uint8Array([7, 8]).buffer", TypedArray("ArrayBuffer", b"\x07\x08")),
        ("new Int16Array([-2])", TypedArray("Int16Array", b"\xfe\xff")),
        ("2n ** 100n", 2**100),
        ("-5n", -5),
        ("new Date(86400000)", dt.datetime(1970, 1, 2, tzinfo=dt.UTC)),
        ("new Map([['k', 1], [2, 'v']])", {"k": 1, 2: "v"}),
        ("new Set([1, 'x'])", frozenset({1, "x"})),
        ("({'\\0weird': 1, '': 2})", {"\0weird": 1, "": 2}),
        ("Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("'\\ud800x'", "\ufffdx"),
        ("[,1]", [UNDEFINED, 1]),
    ],
    ids=lambda v: repr(v)[:30],
)
def test_every_transferable_type_arrives_as_its_python_value(js: str, expected: object) -> None:
    got = ok(f"export default {js}")
    assert got == expected
    assert type(got) is type(expected)
    if isinstance(expected, float) and expected == 0:
        assert math.copysign(1, got) == math.copysign(1, expected)  # type: ignore[arg-type]


def test_nan_arrives_as_nan() -> None:
    assert math.isnan(ok("export default NaN"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        1,
        -7,
        2**53 + 1,
        -(2**70),
        1.25,
        "text 😀",
        True,
        None,
        [1, [2, [3]]],
        {"a": 1, "\0k": 2},
        b"\x00\xfe",
        dt.datetime(2020, 5, 17, 12, 30, tzinfo=dt.UTC),
        {1: "a", 2: "b"},
        frozenset({1, 2}),
        UNDEFINED,
        math.inf,
    ],
    ids=repr,
)
def test_args_round_trip_through_the_guest_unchanged(value: object) -> None:
    got = ok("export function echo(v) { return v }", execute={"fn": "echo", "args": [value]})
    assert got == value
    assert type(got) is type(value)


def test_args_arrive_as_the_javascript_types() -> None:
    src = """export function types(...vals) {
      return vals.map((v) => v instanceof Uint8Array ? 'u8' : v instanceof Date ? 'date'
        : v instanceof Map ? 'map' : v instanceof Set ? 'set' : typeof v) }"""
    args = [1, 2**60, b"x", dt.datetime(2020, 1, 1, tzinfo=dt.UTC), {1: 2}, {1}, "s", UNDEFINED]
    assert ok(src, execute={"fn": "types", "args": args}) == [
        "number",
        "bigint",
        "u8",
        "date",
        "map",
        "set",
        "string",
        "undefined",
    ]


@pytest.mark.parametrize(
    ("js", "where"),
    [
        ("({fn: () => 1})", "a function at result.fn"),
        ("({f: Symbol('s')})", "a symbol at result.f"),
        ("(() => { const a = {}; a.self = a; return a })()", "a circular reference at result.self"),
        ("new Proxy({}, {})", "a Proxy"),
        ("[1, [2, () => 3]]", "a function at result[1][1]"),
        ("[Promise.resolve().then]", "a function at result[0]"),
    ],
)
def test_untransferable_results_are_a_type_error_naming_the_path(js: str, where: str) -> None:
    r = run_code_sync(f"export default {js}")
    assert r.status == "error"
    assert r.error is not None and r.error.name == "TypeError"
    assert where in r.error.message


def test_a_value_nested_deeper_than_the_cap_is_refused() -> None:
    r = run_code_sync("let v = 1; for (let i = 0; i < 500; i++) v = [v]; export default v")
    assert r.status == "error" and r.error is not None
    assert "deeper than the depth cap" in r.error.message


def test_untransferable_args_are_refused_before_anything_runs() -> None:
    with pytest.raises(TypeError, match=r"execute\.args"):
        run_code_sync("export function f() {}", execute={"fn": "f", "args": [object()]})


# ---------------------------------------------------------------- entry semantics


def test_execute_calls_a_named_export_with_args() -> None:
    src = "export function add(a, b) { return a + b }\nexport default 0"
    assert ok(src, execute={"fn": "add", "args": [2, 3]}) == 5


def test_an_async_export_is_awaited() -> None:
    src = "export default async function () { await null; return 'later' }"
    assert ok(src) == "later"


def test_a_non_function_export_is_its_value_and_a_promise_is_awaited() -> None:
    assert ok("export const answer = 42", execute={"fn": "answer"}) == 42
    assert ok("export default Promise.resolve(7)") == 7


def test_args_given_to_a_non_function_export_are_an_error_naming_it() -> None:
    r = run_code_sync("export const answer = 42", execute={"fn": "answer", "args": [1]})
    assert r.status == "error" and r.error is not None
    assert "answer" in r.error.message and r.error.name == "TypeError"


def test_a_missing_export_is_an_error_naming_it() -> None:
    r = run_code_sync("export const a = 1", execute={"fn": "main"})
    assert r.status == "error" and r.error is not None
    assert "'main'" in r.error.message


def test_top_level_await_works_in_modules_and_scripts() -> None:
    assert ok("const v = await Promise.resolve(3); export default v * 2") == 6
    assert ok("const v = await Promise.resolve(3); v * 2", kind="script") == 6


def test_script_kind_returns_the_completion_value() -> None:
    assert ok("let x = 1; x + 41", kind="script") == 42
    assert ok("var a = [1, 2]; a.map((v) => v * 2)", kind="script") == [2, 4]


def test_a_promise_that_never_settles_is_an_error_not_a_hang() -> None:
    r = run_code_sync("export default new Promise(() => {})", timeout=5)
    assert r.status == "error" and r.error is not None
    assert "never settle" in r.error.message


# ---------------------------------------------------------------- logs and reports


def test_logs_and_reports_keep_their_order() -> None:
    src = """
      console.log('a', 1); report('r1'); console.warn({w: true});
      console.error('e'); report({n: 2}); console.info('i'); console.debug('d');
      export default 0"""
    r = run_code_sync(src)
    assert [(e.level, e.args) for e in r.logs] == [
        ("log", ["a", 1]),
        ("warn", [{"w": True}]),
        ("error", ["e"]),
        ("info", ["i"]),
        ("debug", ["d"]),
    ]
    assert r.reports == ["r1", {"n": 2}]
    assert all(isinstance(e.timestamp, float) for e in r.logs)


def test_console_describes_untransferable_values_instead_of_failing() -> None:
    r = run_code_sync(
        "const o = {}; o.o = o; console.log(() => 1, Symbol('x'), o); export default 1"
    )
    assert r.status == "success"
    assert r.logs[0].args == ["[Function]", "[Symbol]", {"o": "[Circular]"}]


def test_report_of_an_untransferable_value_throws_inside_js() -> None:
    src = "try { report(() => 1) } catch (e) { report(e.name) } export default 1"
    assert run_code_sync(src).reports == ["TypeError"]


def test_report_callback_sees_reports_while_the_run_is_still_going() -> None:
    seen: list[tuple[object, float]] = []
    r = run_code_sync(
        "report(1); const t = Date.now(); while (Date.now() - t < 150) {} report(2);"
        " export default 0",
        report=lambda v: seen.append((v, time.monotonic())),
    )
    assert r.status == "success"
    assert [v for v, _ in seen] == [1, 2]
    assert seen[1][1] - seen[0][1] >= 0.1  # the first arrived before the loop ended


@pytest.mark.anyio
async def test_reports_stream_live_to_an_async_iterator() -> None:
    run = run_code("for (let i = 0; i < 3; i++) { report(i); await null } export default 'done'")
    got: list[object] = []
    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            async for value in run.reports():
                got.append(value)

        tg.start_soon(consume)
        result = await run
    assert result.result == "done"
    assert got == [0, 1, 2]


@pytest.mark.anyio
async def test_an_async_report_callback_is_awaited_on_the_loop() -> None:
    seen: list[object] = []

    async def cb(value: object) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(value)

    result = await run_code("report('x'); report('y'); export default 1", report=cb)
    assert result.status == "success" and seen == ["x", "y"]


# ---------------------------------------------------------------- statuses


def test_a_syntax_error_is_status_error_with_its_line() -> None:
    r = run_code_sync("const a = 1;\nconst b = ;\nexport default a")
    assert r.status == "error" and r.error is not None
    assert r.error.name == "SyntaxError" and r.error.line == 2


def test_a_thrown_error_reports_its_line_and_column() -> None:
    src = "export default function main() {\n  const x = 1;\n  throw new RangeError('nope');\n}"
    r = run_code_sync(src, filename="main.js")
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.message) == ("RangeError", "nope")
    # QuickJS places a `new X()` error at the constructor's name
    assert (r.error.filename, r.error.line, r.error.column) == ("main.js", 3, 13)


def test_a_thrown_non_error_value_is_still_readable() -> None:
    r = run_code_sync("throw {code: 42}")
    assert r.status == "error" and r.error is not None
    assert "42" in r.error.message and r.error.value == {"code": 42}
    r = run_code_sync("throw 'plain'")
    assert r.error is not None and "plain" in r.error.message


def test_importing_an_unknown_module_is_a_link_error_naming_it() -> None:
    r = run_code_sync("import { x } from 'left-pad'; export default x")
    assert r.status == "link_error" and r.error is not None
    assert "left-pad" in r.error.message


def test_runaway_allocation_under_a_32_mib_cap_is_status_memory() -> None:
    r = run_code_sync(
        "const a = []; while (true) a.push(new Array(100000).fill(1.5));",
        memory_limit_bytes=32 * 2**20,
        timeout=20,
    )
    assert r.status == "memory"
    assert r.metrics.peak_memory_bytes <= 32 * 2**20


def test_a_script_throwing_out_of_memory_text_itself_is_status_error() -> None:
    r = run_code_sync("throw new InternalError('out of memory')")
    assert r.status == "error"


def test_timeout_stops_an_endless_loop_with_reason_timeout() -> None:
    t0 = time.monotonic()
    r = run_code_sync("while (true) {}", timeout=0.1)
    assert r.status == "terminated" and r.reason == "timeout"
    assert time.monotonic() - t0 < 5
    with pytest.raises(sandbox.errors.CodeTimeout):
        r.raise_for_status()


@pytest.mark.anyio
async def test_terminate_from_another_task_stops_a_busy_loop() -> None:
    run = run_code("while (true) {}")
    async with anyio.create_task_group() as tg:

        async def stop() -> None:
            await anyio.sleep(0.05)
            assert run.running
            run.terminate("user cancelled")

        tg.start_soon(stop)
        result = await run
    assert result.status == "terminated" and result.reason == "user cancelled"
    assert not run.running
    run.terminate("again")  # a no-op after the end
    assert run.result is result


@pytest.mark.anyio
async def test_cancelling_the_awaiting_task_terminates_the_run_and_propagates() -> None:
    run = run_code("while (true) {}")
    with anyio.move_on_after(0.1) as scope:
        await run
    assert scope.cancelled_caught
    assert run.result is not None and run.result.status == "terminated"
    assert run.result.reason == "cancelled"


def test_terminate_before_start_ends_the_run_without_running_it() -> None:
    run = run_code("report('ran'); export default 1")
    run.terminate("early")
    r = run.run_sync()
    assert r.status == "terminated" and r.reason == "early" and r.reports == []


def test_raise_for_status_maps_each_status_to_its_exception() -> None:
    assert run_code_sync("export default 1").raise_for_status().result == 1
    with pytest.raises(sandbox.errors.CodeError):
        run_code_sync("throw new Error('x')").raise_for_status()
    with pytest.raises(sandbox.errors.CodeLinkError):
        run_code_sync("import 'nope'").raise_for_status()
    with pytest.raises(MemoryError):
        run_code_sync(
            "const a = []; while (true) a.push('x'.repeat(1e5) + a.length);",
            memory_limit_bytes=16 * 2**20,
        ).raise_for_status()


# ---------------------------------------------------------------- isolation between runs


def test_two_runs_share_no_globals() -> None:
    ok("globalThis.leak = 1; Object.prototype.polluted = 1; export default 0")
    assert ok("export default [typeof leak, typeof ({}).polluted]") == ["undefined", "undefined"]


def test_two_runs_do_not_share_a_random_sequence() -> None:
    a = ok("export default [Math.random(), Math.random()]")
    b = ok("export default [Math.random(), Math.random()]")
    assert a != b


def test_a_seed_gives_a_repeatable_random_sequence() -> None:
    a = ok("export default [Math.random(), Math.random()]", seed=7)
    b = ok("export default [Math.random(), Math.random()]", seed=7)
    assert a == b and all(0 <= v < 1 for v in a)  # type: ignore[union-attr]


def test_the_sandbox_has_ecmascript_and_nothing_else() -> None:
    names = [
        "process",
        "require",
        "WebAssembly",
        "std",
        "os",
        "scriptArgs",
        "print",
        "__loadScript",
    ]
    src = f"export default {names!r}.filter((n) => typeof globalThis[n] !== 'undefined')"
    assert ok(src) == []
    # fetch is a global, and without a bridge.Fetch it reaches nothing
    src = "export default await fetch('https://example.com/').then(() => 'reached', (e) => e.name)"
    assert ok(src) == "TypeError"


@pytest.mark.parametrize(
    "src",
    [
        "eval('1')",
        "Function('return 1')()",
        "(function(){}).constructor('return 1')()",
        "Object.getPrototypeOf(async function(){}).constructor('return 1')",
        "Object.getPrototypeOf(function*(){}).constructor('yield 1')",
        "Object.getPrototypeOf(async function*(){}).constructor('yield 1')",
    ],
)
def test_dynamic_code_is_off_by_default_and_can_be_enabled(src: str) -> None:
    r = run_code_sync(f"export default {src}")
    assert r.status == "error" and r.error is not None and "disabled" in r.error.message
    assert run_code_sync(f"export default typeof ({src})", dynamic_code=True).status == "success"


def test_fifty_concurrent_runs_all_get_their_own_answer() -> None:
    async def main() -> list[object]:
        results: list[object] = [None] * 50

        async def one(i: int) -> None:
            r = await run_code(
                "export default async function (i) { let s = 0;"
                " for (let k = 0; k < 20000; k++) s += k % 7; await null; return [i, s] }",
                execute={"args": [i]},
            )
            results[i] = r.result

        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(one, i)
        return results

    results = anyio.run(main)
    expected_sum = sum(k % 7 for k in range(20000))
    assert results == [[i, expected_sum] for i in range(50)]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        ({"source": 42}, TypeError),
        ({"source": "1", "bogus": 1}, TypeError),
        ({"source": "1", "timeout": -1}, ValueError),
        ({"source": "1", "timeout": "1"}, TypeError),
        ({"source": "1", "memory_limit_bytes": 10}, ValueError),
        ({"source": "1", "memory_limit_bytes": 1.5}, TypeError),
        ({"source": "1", "kind": "repl"}, ValueError),
        ({"source": "1", "execute": ["main"]}, TypeError),
        ({"source": "1", "execute": {"fn": ""}}, TypeError),
        ({"source": "1", "execute": {"fn": "f", "args": "x"}}, TypeError),
        ({"source": "1", "execute": {"fn": "f", "extra": 1}}, TypeError),
        ({"source": "1", "report": 5}, TypeError),
        ({"source": "1", "dynamic_code": 1}, TypeError),
        ({"source": "1", "language": "python"}, ValueError),
        ({"source": "1", "filename": ""}, TypeError),
    ],
    ids=lambda v: repr(v)[:40],
)
def test_bad_arguments_raise_before_anything_runs(
    kwargs: dict[str, object], exc: type[Exception]
) -> None:
    kwargs = dict(kwargs)  # the parameter is shared by every run of this test
    source = kwargs.pop("source")
    with pytest.raises(exc):
        run_code(source, **kwargs)  # type: ignore[arg-type]


def test_result_metrics_are_filled_from_host_facts() -> None:
    r = run_code_sync("report(1); console.log('x'); export default 'y'.repeat(1000)")
    m = r.metrics
    assert m.wall_ms > 0 and m.guest_cpu_ms > 0 and m.peak_memory_bytes > 0
    assert m.reports == 1 and m.logs == 1 and m.bytes_out >= 1000 and m.bytes_in > 0


def test_error_columns_count_characters_not_bytes() -> None:
    r = run_code_sync('const s = "héllo 😀"; throw new Error(s)', language="javascript")
    ascii = run_code_sync('const s = "hello X"; throw new Error(s)', language="javascript")
    assert r.error is not None and ascii.error is not None and r.error.line == 1
    # QuickJS reports UTF-8 byte offsets; the same number of ASCII characters gives the
    # character column directly
    assert r.error.column == ascii.error.column


def test_a_sync_run_executes_its_guest_where_its_path_says(sync_path: str) -> None:
    seen: list[int] = []

    def where() -> int:
        seen.append(threading.get_ident())
        return 1

    r = run_code_sync("export default where()", globals={"where": synchronous(where)})
    assert (r.status, r.result) == ("success", 1), r.error
    here = sync_path == "caller" and _stacks._SUPPORTED and "greenlet" not in sys.modules
    assert (seen == [threading.get_ident()]) is here
