"""TypeScript that needs code generation: `enum`, `const enum` and constructor parameter
properties run as Node's --experimental-transform-types runs them, on the lines they were
written on."""

from __future__ import annotations

import pytest

import quickjail
from quickjail.sandbox import _typescript
from quickjail.sandbox._typescript import TypeScriptError, strip_types

pytestmark = pytest.mark.timeout(120)


def _run(source: str, **kwargs: object) -> quickjail.CodeResult:
    return quickjail.run_code_sync(source, language="typescript", **kwargs)  # type: ignore[arg-type]


def test_a_numeric_enum_counts_on_and_maps_values_back_to_names() -> None:
    src = "enum E { A, B = 5, C }\nexport default [E.A, E.B, E.C, E[0], E[5], E[6], Object.keys(E)]"
    r = _run(src)
    assert r.status == "success", r.error
    assert r.result == [0, 5, 6, "A", "B", "C", ["0", "5", "6", "A", "B", "C"]]


def test_string_members_have_no_reverse_mapping() -> None:
    src = (
        'enum Dir {\n  Up = "UP",\n  Down = `DOWN`,\n  "left-ish" = "L",\n}\n'
        "export default [Dir.Up, Dir.Down, Dir['left-ish'], Object.keys(Dir)]"
    )
    r = _run(src)
    assert r.result == ["UP", "DOWN", "L", ["Up", "Down", "left-ish"]], r.error


def test_computed_initialisers_see_earlier_members_by_their_names() -> None:
    src = (
        "const A = 100;\n"
        "enum Flags { None = 0, A = 1 << 0, B = 1 << 1, AB = A | B, Len = 'abc'.length, Next }\n"
        "export default [Flags.AB, Flags.Len, Flags.Next, Flags[3], A]"
    )
    r = _run(src)
    assert r.result == [3, 3, 4, "Len", 100], r.error  # Len = 3 maps 3 back last, as in tsc


def test_members_with_non_ascii_names_are_named_by_later_initialisers() -> None:
    src = "enum Größe { Klein = 1, Groß = Klein * 10, $x = Groß + 1 }\nexport default Größe.$x"
    assert _run(src).result == 11


def test_initialisers_keep_their_types_stripped() -> None:
    src = "enum E { A = (1 as number), B = <number>(2) + 1, C = Math.max<number>(B, 7)! }\n"
    src = src.replace("Math.max<number>", "Math.max")
    r = _run(src + "export default [E.A, E.B, E.C]")
    assert r.result == [1, 3, 7], r.error


def test_const_enums_and_exported_enums_are_objects_and_declare_enum_is_erased() -> None:
    modules = {
        "./colors.ts": "export const enum Color { Red, Green = 'g' }\nexport enum N { X = 2 }"
    }
    src = (
        'import { Color, N } from "./colors.ts";\n'
        "declare enum Ambient { Q }\n"
        "export default [Color.Red, Color.Green, N.X, N[2], typeof Ambient]"
    )
    r = _run(src, modules=modules)
    assert r.result == [0, "g", 2, "X", "undefined"], r.error


def test_enum_declarations_of_one_name_merge() -> None:
    src = "enum E { A }\nenum E { B = 1 }\nexport default [E.A, E.B, E[1]]"
    assert _run(src).result == [0, 1, "B"]


def test_an_enum_in_a_function_and_in_auto_statements() -> None:
    src = "function f() {\n  enum Inner { X = 40 }\n  return Inner.X + 2\n}\nf()"
    assert _run(src, kind="auto").result == 42


def test_an_error_in_an_enum_initialiser_points_at_its_line() -> None:
    src = "const a = 1;\nenum E {\n  A = 1,\n  B = missing.x,\n}\nexport default E.A"
    r = _run(src, filename="main.ts")
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.line) == ("ReferenceError", 4)


def test_lines_after_generated_code_keep_their_positions() -> None:
    src = (
        "enum E {\n  A,\n  B,\n}\nclass P {\n  constructor(public x: number,\n"
        "    private y = 2) {}\n}\nconst p = new P(1);\nthrow new Error(String(p.x))"
    )
    r = _run(src, filename="main.ts")
    plain = _run("\n" * 8 + "const p = { x: 1 };\n" + src.splitlines()[9], filename="main.ts")
    assert r.status == "error" and r.error is not None and plain.error is not None
    assert (r.error.line, r.error.column) == (plain.error.line, plain.error.column) == (10, 24)
    out = strip_types(src)
    assert out.count("\n") == src.count("\n")
    assert out.splitlines()[9] == src.splitlines()[9]


def test_parameter_properties_are_assigned_first_in_the_constructor() -> None:
    src = (
        "class Point {\n"
        "  constructor(private x: number, public readonly y = 2, protected z?: number) {\n"
        "    this.sum = this.x + this.y;\n"
        "  }\n"
        "  sum: number;\n"
        "  get(): number[] { return [this.x, this.y, this.z, this.sum] }\n"
        "}\n"
        "export default new Point(1).get()"
    )
    r = _run(src)
    assert r.result == [1, 2, quickjail.UNDEFINED, 3], r.error


def test_parameter_properties_follow_super_in_a_derived_class() -> None:
    src = (
        "class Base { constructor(public tag: string) {} }\n"
        "class Child extends Base {\n"
        "  constructor(tag: string, override readonly n: number) {\n"
        "    const t = tag.toUpperCase();\n"
        "    super(t)\n"
        "    this.n2 = this.n * 2;\n"
        "  }\n"
        "  n2 = 0;\n"
        "}\n"
        "const c = new Child('a', 21);\n"
        "export default [c.tag, c.n, c.n2]"
    )
    r = _run(src)
    assert r.result == ["A", 21, 42], r.error


def test_parameter_properties_in_a_class_expression() -> None:
    src = "const K = class { constructor(readonly v: number) {} };\nexport default new K(42).v"
    assert _run(src).result == 42


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("class A { m(private x: number) {} }", "parameter properties"),
        ("function f(public x) {}", "parameter properties"),
        ("class A { constructor(private { a }: { a: number }) {} }", "parameter properties"),
        ("class A extends B { constructor(private x) { if (x) super() } }", "super("),
        ("enum E { [x] = 1 }", "`enum`"),
    ],
)
def test_what_typescript_itself_rejects_is_still_refused(source: str, words: str) -> None:
    with pytest.raises(TypeScriptError) as caught:
        strip_types(source)
    assert words in caught.value.message


def test_a_huge_enum_generates_code_in_linear_work_and_bounded_size() -> None:
    def enum(n: int) -> str:
        return "enum E {\n" + "".join(f"  M{i},\n" for i in range(n)) + "}\n"

    small, large = _typescript._strip(enum(2000), "<t>"), _typescript._strip(enum(4000), "<t>")
    assert large[1] <= 2.2 * small[1] + 100
    assert len(large[0].encode()) <= _typescript.max_output_bytes(len(enum(4000).encode()))
    r = _run(enum(4000) + "export default [E.M3999, E[3999]]")
    assert r.result == [3999, "M3999"], r.error


def test_deeply_nested_enums_and_classes_do_not_overflow_the_stack() -> None:
    n = 2000
    src = "function f() {\n" * n + "enum E { A = 1 }\nclass K { constructor(public a = 1) {} }\n"
    src += "}\n" * n
    out = _typescript._strip(src, "<t>")[0]
    assert out.count("\n") == src.count("\n") and "this.a=a" in out.replace(" ", "")


def test_large_generating_sources_go_through_the_helper_process() -> None:
    body = "".join(f"enum E{i} {{ A = {i}, B }}\n" for i in range(400))
    src = body + "export default [E0.B, E399.A, E399[400]]"
    assert len(src.encode()) > _typescript.IN_PROCESS_BYTES
    r = _run(src)
    assert r.result == [1, 399, "B"], r.error
