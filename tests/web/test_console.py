"""The rest of console follows the WHATWG Console standard (and Node's output where the
standard leaves the printing to the implementation), seen through ``CodeResult.logs``.

Each case is a program and the (level, args) of the logs it makes.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import quickjail

Logs = list[tuple[str, list[object]]]

CASES: list[tuple[str, str, Logs]] = [
    (
        "format_specifiers_are_substituted",
        """console.log("%s is %d (%i) years, %f m", "Ada", "36.6", 36.6, "1.5e0");
        console.log("%d|%i|%f", Symbol("s"), Symbol("s"), Symbol("s"));
        console.log("%c styled", "color: red");""",
        [
            ("log", ["Ada is 36 (36) years, 1.5 m"]),
            ("log", ["NaN|NaN|NaN"]),
            ("log", [" styled"]),
        ],
    ),
    (
        "extra_arguments_follow_and_missing_ones_leave_the_specifier",
        """console.log("%s!", "hi", 2, { a: 1 }); console.log("%s and %s", "one");""",
        [("log", ["hi!", 2, {"a": 1}]), ("log", ["one and %s"])],
    ),
    (
        "percent_percent_is_one_percent_only_when_formatting",
        """console.log("100%% of %d", 5); console.log("100%%"); console.log("50%", 1);""",
        [("log", ["100% of 5"]), ("log", ["100%%"]), ("log", ["50%", 1])],
    ),
    (
        "object_specifiers_keep_the_value_as_data",
        """console.log("user %o logged in", { id: 1 }); console.log("%O", [1, 2]);""",
        [("log", ["user", {"id": 1}, "logged in"]), ("log", [[1, 2]])],
    ),
    (
        "only_a_first_string_is_a_format",
        """console.log(1, "%s", 2); console.warn("%s", "w"); console.error("%d", "7");""",
        [("log", [1, "%s", 2]), ("warn", ["w"]), ("error", ["7"])],
    ),
    (
        "group_indents_later_lines_until_group_end",
        """console.group("outer"); console.log("a\\nb"); console.groupCollapsed();
        console.info({ x: 1 }); console.groupEnd(); console.groupEnd(); console.groupEnd();
        console.log("back");""",
        [
            ("log", ["outer"]),
            ("log", ["  a\n  b"]),
            ("info", ["   ", {"x": 1}]),
            ("log", ["back"]),
        ],
    ),
    (
        "count_and_count_reset",
        """console.count(); console.count(); console.count("x"); console.countReset();
        console.count(); console.countReset("nope");""",
        [
            ("log", ["default: 1"]),
            ("log", ["default: 2"]),
            ("log", ["x: 1"]),
            ("log", ["default: 1"]),
            ("warn", ["Count for 'nope' does not exist"]),
        ],
    ),
    (
        "time_time_log_and_time_end",
        """console.time(); console.time(); console.timeLog(undefined, "step", 1);
        console.timeEnd(); console.timeEnd(); console.timeLog("nope");""",
        [
            ("warn", ["Timer 'default' already exists"]),
            ("log", ["default: 1.000ms", "step", 1]),
            ("log", ["default: 2.000ms"]),
            ("warn", ["Timer 'default' does not exist"]),
            ("warn", ["Timer 'nope' does not exist"]),
        ],
    ),
    (
        "assert_logs_an_error_only_when_false",
        """console.assert(true, "never"); console.assert(0); console.assert(false, "bad %s", "x");
        console.assert(null, { o: 1 });""",
        [
            ("error", ["Assertion failed"]),
            ("error", ["Assertion failed: bad x"]),
            ("error", ["Assertion failed", {"o": 1}]),
        ],
    ),
    (
        "dir_and_dirxml_log_the_values",
        """console.dir({ d: [1] }, { depth: 0 }); console.dirxml(1, "two");""",
        [("log", [{"d": [1]}]), ("log", [1, "two"])],
    ),
    (
        "table_of_primitives_logs_the_value",
        """console.table(5); console.table("s");""",
        [("log", [5]), ("log", ["s"])],
    ),
]


@pytest.mark.parametrize(("body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_console_follows_the_console_standard(body: str, expected: Logs) -> None:
    r = quickjail.run_code_sync(body + "\nexport default 0", deterministic=True)
    assert r.status == "success", r.error
    assert [(e.level, e.args) for e in r.logs] == expected


def test_table_draws_rows_and_columns() -> None:
    r = quickjail.run_code_sync(
        """console.table([{ a: 1, b: "x" }, { a: 2, c: [1, 2] }, 7]);
        console.table({ r1: { c: 1, d: 2 }, r2: { c: 3 } }, ["c"]);
        export default 0"""
    )
    assert [e.args for e in r.logs] == [
        [
            "┌─────────┬───┬─────┬──────────┬────────┐\n"
            "│ (index) │ a │ b   │ c        │ Values │\n"
            "├─────────┼───┼─────┼──────────┼────────┤\n"
            "│ 0       │ 1 │ 'x' │          │        │\n"
            "│ 1       │ 2 │     │ [ 1, 2 ] │        │\n"
            "│ 2       │   │     │          │ 7      │\n"
            "└─────────┴───┴─────┴──────────┴────────┘"
        ],
        [
            "┌─────────┬───┐\n"
            "│ (index) │ c │\n"
            "├─────────┼───┤\n"
            "│ r1      │ 1 │\n"
            "│ r2      │ 3 │\n"
            "└─────────┴───┘"
        ],
    ]


def test_trace_shows_the_programs_frames_only() -> None:
    r = quickjail.run_code_sync(
        """function inner() { console.trace("here %d", 1); }
        function outer() { inner(); }
        outer();
        export default 0""",
        filename="main.js",
    )
    [entry] = r.logs
    assert entry.level == "debug"
    lines = entry.args[0].split("\n")
    assert lines[0] == "Trace: here 1"
    assert "at inner (main.js:1" in lines[1] and "at outer (main.js:2" in lines[2]
    assert not any("quickjail" in line for line in lines)


def test_the_new_methods_survive_a_program_replacing_the_old_ones() -> None:
    r = quickjail.run_code_sync(
        """const log = console.log;
        console.log = () => { throw new Error("replaced"); };
        console.count(); console.group("g"); log("kept");
        String.prototype.slice = Array.prototype.push = () => { throw new Error("hijacked"); };
        console.info("%s", "still formats"); console.groupEnd();
        export default 0"""
    )
    assert r.status == "success", r.error
    assert [e.args for e in r.logs] == [["default: 1"], ["g"], ["  kept"], ["  still formats"]]


def test_counters_timers_and_groups_start_empty_in_every_run() -> None:
    src = "console.count(); console.group(); console.time(); export default 0"
    for _ in range(2):
        r = quickjail.run_code_sync(src)
        assert [(e.level, e.args) for e in r.logs] == [("log", ["default: 1"])]


def test_the_cli_prints_formatted_and_grouped_lines() -> None:
    program = """console.log("%s=%d", "x", 1); console.group("g"); console.table([{ a: 1 }]);
    console.groupEnd(); console.log("user %o", { id: 1 }); export default 0"""
    done = subprocess.run(
        [sys.executable, "-m", "quickjail", "run", "-", "--language", "javascript"],
        input=program,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "x=1",
        "g",
        "  ┌─────────┬───┐",
        "  │ (index) │ a │",
        "  ├─────────┼───┤",
        "  │ 0       │ 1 │",
        "  └─────────┴───┘",
        'user {"id": 1}',
        "0",
    ]


def test_console_is_a_web_idl_namespace_with_the_whole_method_set() -> None:
    r = quickjail.run_code_sync(
        """const proto = Object.getPrototypeOf(console);
        const tag = Object.getOwnPropertyDescriptor(console, Symbol.toStringTag);
        const g = Object.getOwnPropertyDescriptor(globalThis, "console");
        const methods = {};
        for (const k of Object.keys(console)) {
          const d = Object.getOwnPropertyDescriptor(console, k);
          methods[k] = [typeof d.value, d.value.name, d.value.length, d.writable, d.configurable];
        }
        export default [Object.getOwnPropertyNames(proto).length,
          Object.getPrototypeOf(proto) === Object.prototype, proto !== Object.prototype,
          tag.value, tag.writable, tag.enumerable, tag.configurable,
          Object.prototype.toString.call(console), String(console),
          g.writable, g.enumerable, g.configurable, "Console" in globalThis, methods]"""
    )
    assert r.status == "success", r.error
    *shape, methods = r.result
    assert shape == [0, True, True, "console", False, False, True, "[object console]",
                     "[object console]", True, False, True, False]  # fmt: skip
    names = """log info warn error debug trace dir dirxml table assert count countReset group
    groupCollapsed groupEnd time timeLog timeEnd clear""".split()
    assert sorted(methods) == sorted(names)
    assert all(methods[n] == ["function", n, 0, True, True] for n in names), methods


def test_clear_ends_every_group() -> None:
    r = quickjail.run_code_sync(
        """console.group("a"); console.group("b"); console.log("in");
        console.clear(); console.log("out"); export default 0"""
    )
    assert [e.args for e in r.logs] == [["a"], ["  b"], ["    in"], ["out"]]


def test_labels_are_converted_with_their_to_string_and_its_errors_propagate() -> None:
    r = quickjail.run_code_sync(
        """const out = [];
        for (const m of ["count", "countReset", "time", "timeLog", "timeEnd"]) {
          let called = false;
          console[m]({ toString() { called = true; return "l"; } });
          try { console[m]({ toString() { throw new Error("conversion"); } }); out.push("none"); }
          catch (e) { out.push(called && e.message); }
        }
        export default out"""
    )
    assert r.status == "success", r.error
    assert r.result == ["conversion"] * 5
