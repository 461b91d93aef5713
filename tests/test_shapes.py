"""kind="auto": the code shapes models write run as they mean, with exact error positions."""

from __future__ import annotations

import re

import pytest

import quickjail

pytestmark = pytest.mark.timeout(120)

FENCES = [
    ("", ""),
    ("```js\n", "\n```"),
    ("```typescript\n", "\n```\n"),
    ("\n  ```\n", "\n```  \n\n"),
    ("```ts\r\n", "\r\n```"),
]

SHAPES = {
    "module default value": "const base = 40;\nexport default base + 2",
    "module default function": "export default async function main() {\n  return 42\n}",
    "async arrow": "async () => {\n  const v = await Promise.resolve(41);\n  return v + 1\n}",
    "plain arrow with semicolon": "() => 6 * 7;",
    "function expression": "(function () { return 42 })",
    "lone function declaration": "function main() {\n  return 42\n}",
    "lone async function declaration": "async function main() {\n  return 42\n}",
    "statements with top-level await": "const v = await Promise.resolve(21);\nv * 2",
    "statements with a final call": "async function main() { return 42 }\nmain()",
    "body with top-level return": "const v = 21;\nif (v) {\n  return v * 2\n}\nreturn 0",
    "body with return and await": "const v = await Promise.resolve(21);\nreturn v * 2",
    "bare expression": "6 * 7",
    "bare expression with await": "await Promise.resolve(42)",
    "object literal": "({ answer: 42 }).answer",
}


@pytest.mark.parametrize("fence", FENCES, ids=lambda f: repr(f[0]))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_code_shape_runs_fenced_or_not(shape: str, fence: tuple[str, str]) -> None:
    source = fence[0] + SHAPES[shape] + fence[1]
    r = quickjail.run_code_sync(source, kind="auto")
    assert r.status == "success", r.error
    assert r.result == 42


def test_a_typescript_shape_runs_and_a_fence_tag_does_not_override_language() -> None:
    ts = "```ts\nasync (): Promise<number> => {\n  const v: number = 42;\n  return v\n}\n```"
    assert quickjail.run_code_sync(ts, kind="auto").result == 42
    r = quickjail.run_code_sync(ts, kind="auto", language="javascript")
    assert r.status == "error" and r.error is not None and r.error.name == "SyntaxError"
    js = "```js\nconst a = 1;\nreturn a + 41\n```"
    assert quickjail.run_code_sync(js, kind="auto", language="javascript").result == 42


def test_an_object_literal_is_a_value_and_a_statement_list_gives_its_completion() -> None:
    assert quickjail.run_code_sync("{ a: 1, b: [2] }", kind="auto").result == {"a": 1, "b": [2]}
    r = quickjail.run_code_sync("let x = 1;\nx += 1;\nx", kind="auto")
    assert r.result == 2
    assert quickjail.run_code_sync("", kind="auto").result is quickjail.UNDEFINED


def test_auto_calls_a_function_shape_with_execute_args() -> None:
    r = quickjail.run_code_sync("(a, b) => a * b", kind="auto", execute={"args": [6, 7]})
    assert r.result == 42, r.error
    src = "export function main(x) { return x + 1 }"
    r = quickjail.run_code_sync(src, kind="auto", execute={"fn": "main", "args": [41]})
    assert r.result == 42, r.error


def test_an_import_using_program_runs_as_a_module_with_its_graph() -> None:
    src = 'import { v } from "./m.js";\nexport default v * 2'
    r = quickjail.run_code_sync(src, kind="auto", modules={"./m.js": "export const v = 21"})
    assert r.result == 42, r.error
    r = quickjail.run_code_sync('import { v } from "./nope.js";\nexport default v', kind="auto")
    assert r.status == "link_error" and r.error is not None and "nope.js" in r.error.message


def test_a_shape_runs_once_even_though_several_readings_are_tried() -> None:
    for src in ("report(1);\nreturn 2", "report(1)", "() => report(1)", "report(1);\nreport(2)"):
        r = quickjail.run_code_sync(src, kind="auto")
        assert r.status == "success", (src, r.error)
        assert r.reports[:1] == [1] and r.reports.count(1) == 1, src


# each shape with a throw on a line past the first, and that line
THROWING = [
    ("module", "const a = 1;\nexport default async function () {\n  throw new Error('x')\n}", 3),
    ("arrow", "async () => {\n  const a = 1;\n\n  throw new Error('x')\n}", 4),
    ("function", "function main() {\n  const a = 1;\n  throw new Error('x')\n}", 3),
    ("statements", "const a = await Promise.resolve(1);\n\n  throw new Error('x')", 3),
    ("body", "const a = 1;\nif (a) {\n  throw new Error('x')\n}\nreturn a", 3),
    ("expression", "[1, 2].map((x) => {\n  throw new Error('x')\n})", 2),
]


@pytest.mark.parametrize("fenced", [False, True])
@pytest.mark.parametrize(("shape", "source", "line"), THROWING, ids=[t[0] for t in THROWING])
def test_runtime_errors_point_into_the_users_own_text(
    shape: str, source: str, line: int, fenced: bool
) -> None:
    text = f"```js\n{source}\n```" if fenced else source
    r = quickjail.run_code_sync(text, kind="auto", filename="main.js")
    assert r.status == "error" and r.error is not None, shape
    want = line + 1 if fenced else line
    column = text.split("\n")[want - 1].index("Error(") + 1  # QuickJS points at the call
    assert (r.error.line, r.error.column, r.error.filename) == (want, column, "main.js")
    _frames_stay_inside(r.error.stack, text)


@pytest.mark.parametrize(("shape", "source", "line"), THROWING, ids=[t[0] for t in THROWING])
def test_typescript_shapes_keep_positions_after_type_erasure(
    shape: str, source: str, line: int
) -> None:
    # a type annotation on the first line, multi-byte text before the throw
    text = "```ts\n" + source.replace("const a = ", "const a: number = ").replace(
        "throw new", "/* é */ throw new"
    )
    text += "\n```"
    r = quickjail.run_code_sync(text, kind="auto", filename="main.ts")
    assert r.status == "error" and r.error is not None, (shape, r.result)
    column = text.split("\n")[line].index("Error(") + 1
    assert (r.error.line, r.error.column) == (line + 1, column)
    _frames_stay_inside(r.error.stack, text)


def _frames_stay_inside(stack: str, text: str) -> None:
    lines = text.split("\n")
    rows = [int(m.group(1)) for m in re.finditer(r"main\.[jt]s:(-?\d+):\d+", stack)]
    assert rows, stack
    assert all(1 <= row <= len(lines) for row in rows), stack


@pytest.mark.parametrize(
    ("source", "line", "reading"),
    [
        ("const a = 1;\nconst b = ;\nreturn a", 2, "statements"),
        ("import x from './m.js';\nexport default x +;\n", 2, "an ES module"),
        ("async () => {\n  const a = 1;\n  a +;\n}", 3, "an expression"),
        ("const a = 1;\n\nreturn a +;\n", 3, "the body of an async function"),
        ("const a = 1;\nreturn a;\n}", 2, "statements"),
    ],
)
def test_text_of_no_shape_names_the_shapes_and_the_nearest_readings_error(
    source: str, line: int, reading: str
) -> None:
    r = quickjail.run_code_sync(source, kind="auto", filename="main.js")
    assert r.status == "error" and r.error is not None
    assert r.error.name == "SyntaxError" and r.error.line == line
    message = r.error.message
    assert 'kind="auto"' in message and "ES module" in message and "statements" in message
    assert f"read as {reading}," in message
    assert f"main.js:{line}:" in str(r.error)


def test_a_syntax_error_in_an_imported_module_is_reported_as_it_is() -> None:
    src = 'import { v } from "./m.js";\nexport default v'
    r = quickjail.run_code_sync(src, kind="auto", modules={"./m.js": "export const v = ;"})
    assert r.status == "error" and r.error is not None
    assert r.error.filename == "m.js" and 'kind="auto"' not in r.error.message


def test_detection_is_a_small_constant_number_of_parses_of_a_large_text() -> None:
    # the body shape is the last reading: three full parses of the text (the expression
    # reading fails at the first semicolon); a script of the same size is one parse plus
    # running it. Fuel is counted by wasmtime, so the bound does not depend on the machine.
    n = 20_000
    body = "let x0 = 0;\n" + "x0 = x0 + 1;\n" * n
    auto = quickjail.run_code_sync(body + "return x0", kind="auto", fuel=10**11)
    script = quickjail.run_code_sync(body + "x0", kind="script", fuel=10**11)
    assert auto.result == script.result == n, (auto.error, script.error)
    assert auto.metrics.fuel_used is not None and script.metrics.fuel_used is not None
    assert auto.metrics.fuel_used < 5 * script.metrics.fuel_used


def test_detection_runs_under_the_runs_deadline_and_memory_limit() -> None:
    huge = "x = x + 1;\n" * 400_000 + "return x"
    r = quickjail.run_code_sync(huge, kind="auto", language="javascript", fuel=1000)
    assert (r.status, r.reason) == ("terminated", "fuel")
    r = quickjail.run_code_sync(
        huge, kind="auto", language="javascript", memory_limit_bytes=8 * 2**20
    )
    assert r.status in ("memory", "error")


@pytest.mark.parametrize("kind", ["module", "script"])
def test_the_other_kinds_do_not_strip_fences(kind: str) -> None:
    # (as JavaScript, a fence is a tagged template: the run fails one way or another)
    r = quickjail.run_code_sync("```js\nexport default 1\n```", kind=kind)
    assert r.status == "error" and r.result is None


def test_only_code_fence_tags_are_stripped() -> None:
    r = quickjail.run_code_sync("```python\nprint(1)\n```", kind="auto")
    assert r.status == "error" and r.error is not None and r.error.line == 1


@pytest.mark.parametrize(
    ("source", "execute"),
    [
        ("const a = 1;\na", {"fn": "main"}),
        ("const a = 1;\na", {"args": [1]}),
        ("() => 1", {"fn": "main"}),
        ("return 1", {"fn": "main", "args": [1]}),
    ],
)
def test_execute_that_the_shape_cannot_honour_is_an_error_not_ignored(
    source: str, execute: dict[str, object]
) -> None:
    r = quickjail.run_code_sync(source, kind="auto", execute=execute)
    assert r.status == "error" and r.error is not None
    assert r.error.name == "TypeError" and "reads as" in r.error.message


@pytest.mark.parametrize(
    "source",
    [
        "export const x = 1;\nexport function f() {\n  return 2\n}",
        'import { v } from "./m.js";\nreport(v);\nexport const y = v',
        'import { v } from "./m.js";\nreport(v)',
    ],
)
def test_a_module_without_a_default_export_runs_and_gives_undefined(source: str) -> None:
    r = quickjail.run_code_sync(source, kind="auto", modules={"./m.js": "export const v = 21"})
    assert r.status == "success", r.error
    assert r.result is quickjail.UNDEFINED
    assert r.reports == ([21] if "report" in source else [])


def test_a_named_export_asked_for_and_missing_is_still_an_error() -> None:
    r = quickjail.run_code_sync("export const x = 1", kind="auto", execute={"fn": "main"})
    assert r.status == "error" and r.error is not None and r.error.name == "ReferenceError"


@pytest.mark.parametrize(
    "source",
    [
        "async () => 42; // the answer",
        "async () => 42;   /* the answer */  \n",
        "() => 42; // one\n/* two */\n// three\n",
        "async () => {\n  return 42\n}; // done",
    ],
)
def test_a_final_arrow_followed_by_comments_is_called(source: str) -> None:
    r = quickjail.run_code_sync(source, kind="auto")
    assert r.status == "success", r.error
    assert r.result == 42


def test_an_arrow_with_args_followed_by_a_comment_takes_them() -> None:
    r = quickjail.run_code_sync(
        "(a, b) => a * b; // product", kind="auto", execute={"args": [6, 7]}
    )
    assert r.result == 42, r.error


@pytest.mark.parametrize(
    "source",
    [
        'g("a;//x")',  # a `;` and `//` inside a string are no trailing comment
        "`a;//x`",
        "1 // a; // b",
    ],
)
def test_text_inside_literals_is_not_taken_for_a_trailing_comment(source: str) -> None:
    src = "function g(s) { return s }\n" + source if source.startswith("g(") else source
    r = quickjail.run_code_sync(src, kind="auto")
    want = 1 if source.startswith("1") else "a;//x"
    assert r.status == "success", r.error
    assert r.result == want


@pytest.mark.parametrize(
    "source",
    [
        "function helper(x) {\n  return x * 2\n}\nasync () => helper(21)",
        "const base = 21;\nconst twice = (x) => x * 2;\n\nasync () => {\n  return twice(base)\n};",
        "const h = 21;\n(function () { return h * 2 }); // main",
        "function main() {\n  return 42\n}\nmain",
    ],
)
def test_helpers_followed_by_a_final_function_expression_call_it(source: str) -> None:
    r = quickjail.run_code_sync(source, kind="auto")
    assert r.status == "success", r.error
    assert r.result == 42


def test_a_final_function_throwing_points_at_its_line() -> None:
    src = "const a = 1;\n() => {\n  throw new Error('x')\n}"
    r = quickjail.run_code_sync(src, kind="auto", filename="main.js")
    assert r.status == "error" and r.error is not None
    assert (r.error.line, r.error.filename) == (3, "main.js")
