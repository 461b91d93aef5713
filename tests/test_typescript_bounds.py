"""Host work on untrusted TypeScript is bounded: linear stripping and its limits, and the places
where a line break ends a modifier or a type in TypeScript (issue 11)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

import pytest

from quickjail import run_code_sync
from quickjail.sandbox import (
    _typescript,
    _typescript_generate,
    _typescript_kinds,
    _typescript_walk,
)
from quickjail.sandbox._typescript import MAX_TYPESCRIPT_BYTES, TypeScriptError, strip_types


def _nested_as(n: int) -> str:
    return "x" + " as any" * n


def _parenthesized_as(n: int) -> str:
    return "(" * n + "x as T" + ")" * n


def _as_statements(n: int) -> str:
    return "a as T;\n" * n


def _refusals_after_a_syntax_error(n: int) -> str:
    return "let t = ;\n" + "import a = N.b;\n" * n


def _enums(n: int) -> str:
    return "enum E {\n" + "".join(f"  M{i} = M{i // 2} * 2 as number,\n" for i in range(n)) + "}\n"


def _parameter_properties(n: int) -> str:
    return (
        "class A extends B {\n  constructor("
        + "".join(f"private p{i}: T, " for i in range(n))
        + ") { super() }\n}\n"
    )


def _nested_enums_in_classes(n: int) -> str:
    inner = "enum E { A, B }\nclass K { constructor(public a = 1) {} }\n"
    return "function f() {\n" * n + inner + "}\n" * n


def _type_specifiers(n: int) -> str:
    return "import { " + ", ".join(f"type A{i}" for i in range(n)) + " } from 'm';"


def _this_parameters(n: int) -> str:
    return "function f(this: T, a) {}\n" * n


def _non_ascii_removed_statements(n: int) -> str:
    return "type Ä = 'é';" * n


def _nested_assertions(n: int) -> str:
    return "() => <T>(" * n + "x" + ")" * n


def _nested_returns(n: int) -> str:
    return "function f() { return <T>\n(" * n + "x" + ") }" * n


def _nested_namespaces(n: int) -> str:
    return "namespace A { " * n + "export type T = 1;" + " }" * n


def _nested_arrow_return_types(n: int) -> str:
    return "(): T\n=> " * n + "1"


def _nested_multiline_types(n: int) -> str:
    return "let x: " + "{ a:\n" * n + "T[]" + " }" * n + " = 1;"


def _fields(n: int) -> str:
    return "class A {\n" + "".join(f"  readonly x{i}?: number = 1;\n" for i in range(n)) + "}"


def _syntax_errors(n: int) -> str:
    return "let = ;\nx as T\n" * n


def _nested_exports_with_errors(n: int) -> str:
    return "export type " * n + "* from 'm';"


SHAPES: dict[str, Callable[[int], str]] = {
    f.__name__.lstrip("_"): f
    for f in (
        _nested_as,
        _parenthesized_as,
        _as_statements,
        _refusals_after_a_syntax_error,
        _type_specifiers,
        _this_parameters,
        _non_ascii_removed_statements,
        _nested_assertions,
        _nested_returns,
        _nested_namespaces,
        _nested_arrow_return_types,
        _nested_multiline_types,
        _fields,
        _syntax_errors,
        _nested_exports_with_errors,
        _enums,
        _parameter_properties,
        _nested_enums_in_classes,
    )
}


MODULES = (_typescript, _typescript_kinds, _typescript_walk, _typescript_generate)


def _work(source: str) -> int:
    return _typescript._strip(source, "<test>")[1]  # none of the shapes is refused


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
def test_stripping_work_doubles_when_the_source_doubles(shape: Callable[[int], str]) -> None:
    # Every loop of the stripper counts its steps; a quadratic step makes the ratio ~4.
    small, large = _work(shape(2000)), _work(shape(4000))
    assert large <= 2.2 * small + 100, (small, large)
    # And the count stays far below the budget that would stop the run.
    size = len(shape(4000).encode())
    assert large <= _typescript.WORK_PER_BYTE * size // 4


# The shapes above took quadratic time: tree-sitter answers `Node.parent` and
# `Node.next_sibling` by descending from the root (`x as any as any ...`, many `as` statements,
# many `type` specifiers), refusals after a syntax error rescanned the tree, and marks in a
# non-ASCII range were each decoded from the range's start. The counted-work test above and the
# structural one below guard them (no wall- or CPU-time assertion: the suite runs on busy CI).


def test_the_stripper_never_asks_tree_sitter_for_parents_or_siblings() -> None:
    # tree-sitter stores no parent links: `parent`, `next_sibling` and the like walk down from
    # the root on every call, so one call per node makes stripping quadratic. The stripper
    # walks with a cursor and looks only at a node's own children.
    code = "".join(inspect.getsource(m) for m in MODULES)
    found = re.findall(r"\.(?:parent|(?:next|prev)(?:_named)?_sibling|descendant_\w+)\b", code)
    assert found == []


def test_a_source_over_the_size_limit_is_refused_naming_the_limit() -> None:
    for source in ("x" * (MAX_TYPESCRIPT_BYTES + 1), "é" * (MAX_TYPESCRIPT_BYTES // 2 + 1)):
        with pytest.raises(TypeScriptError) as caught:
            strip_types(source, filename="big.ts")
        assert "MAX_TYPESCRIPT_BYTES" in caught.value.message
        assert (caught.value.line, caught.value.column) == (1, 1)
    assert strip_types("x" * MAX_TYPESCRIPT_BYTES) == "x" * MAX_TYPESCRIPT_BYTES


def test_a_run_of_too_much_typescript_ends_as_a_syntax_error_naming_the_limit() -> None:
    source = "export default 1;\n" + "//" + "x" * MAX_TYPESCRIPT_BYTES
    result = run_code_sync(source)
    assert result.status == "error" and result.error is not None
    assert result.error.name == "SyntaxError"
    assert "MAX_TYPESCRIPT_BYTES" in result.error.message


def test_the_work_budget_stops_stripping_with_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_typescript, "WORK_PER_BYTE", 1)
    with pytest.raises(TypeScriptError) as caught:
        strip_types("(" * 500 + "x as T" + ")" * 500)
    assert "WORK_PER_BYTE" in caught.value.message


# (source, line, column, words in the message) where TypeScript ends a modifier or a type at a
# line break and tree-sitter reads on: erasing tree-sitter's reading would drop code.
LINE_BREAK_REFUSALS = [
    ("class A {\n  abstract\n  x = f()\n}", 2, 3, "`abstract` followed by a line break"),
    ("class A { abstract\n foo(): void }", 1, 11, "`abstract` followed by a line break"),
    ("abstract\nclass A {}", 1, 1, "`abstract` followed by a line break"),
    ("o satisfies object\n[0]", 2, 1, "line break before `[`"),
    ("x as T\n[0]", 2, 1, "line break before `[`"),
    ("x as unknown as T[]\n[0]", 2, 1, "line break before `[`"),
    ("let a = o satisfies A | B\n  [0]", 2, 3, "line break before `[`"),
]


@pytest.mark.parametrize(
    ("source", "line", "column", "words"),
    LINE_BREAK_REFUSALS,
    ids=[r[0][:30] for r in LINE_BREAK_REFUSALS],
)
def test_a_line_break_that_ends_a_modifier_or_type_never_hides_code(
    source: str, line: int, column: int, words: str
) -> None:
    with pytest.raises(TypeScriptError) as caught:
        strip_types(source, filename="main.ts")
    assert (caught.value.line, caught.value.column) == (line, column)
    assert words in caught.value.message


# Where tree-sitter already reads the line break as TypeScript does, the code stays.
LINE_BREAK_KEPT = [
    ("class A { readonly\n x = 1 }", "class A { readonly\n x = 1 }"),
    ("class A { private\n x = 1 }", "class A { private\n x = 1 }"),
    ("class A { declare\n x: number }", "class A { declare\n x;        }"),
    ("declare\nlet x = f()", "declare\nlet x = f()"),
    ("type A = B\n[0]", ";         \n[0]"),
    ("let x: T\n[0]", "let x;  \n[0]"),
    ("let x: T[]\n= []", "let x     \n= []"),
    ("o satisfies object[]\n;[0]", "o                   \n;[0]"),
]


@pytest.mark.parametrize(
    ("source", "expected"), LINE_BREAK_KEPT, ids=[c[0] for c in LINE_BREAK_KEPT]
)
def test_code_after_a_line_break_that_ends_a_modifier_or_type_is_kept(
    source: str, expected: str
) -> None:
    assert strip_types(source) == expected


def test_a_run_refuses_a_modifier_that_a_line_break_ends() -> None:
    result = run_code_sync("class A {\n  abstract\n  x = 1\n}\nexport default new A().x")
    assert result.status == "error" and result.error is not None
    error = result.error
    assert error.name == "SyntaxError" and (error.line, error.column) == (2, 3)
    assert "`abstract`" in error.message
