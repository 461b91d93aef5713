"""Module graphs and TypeScript through run_code."""

from __future__ import annotations

import pytest

from quickjail.bridge import run_code_sync

pytestmark = pytest.mark.timeout(60)


def test_relative_modules_resolve_from_the_importing_module() -> None:
    modules = {
        "./util.js": "export const twice = (x) => x * 2",
        "./lib/math.ts": "import { twice } from '../util.js';\n"
        "export function quad(x: number): number { return twice(twice(x)) }",
        "./lib/index.ts": "export { quad } from './math.ts'",
    }
    src = "import { quad } from './lib/index.ts'; export default quad(3)"
    r = run_code_sync(src, modules=modules)
    assert r.status == "success", r.error
    assert r.result == 12


def test_dynamic_import_of_a_graph_module_works() -> None:
    r = run_code_sync(
        "const m = await import('./m.js'); export default m.v",
        modules={"./m.js": "export const v = 'dyn'"},
    )
    assert r.result == "dyn"


def test_an_unknown_relative_specifier_is_a_link_error_naming_it() -> None:
    r = run_code_sync("import { v } from './missing.js'; export default v")
    assert r.status == "link_error" and r.error is not None
    assert "missing.js" in r.error.message


def test_a_missing_export_is_a_link_error_naming_it() -> None:
    r = run_code_sync(
        "import { nope } from './m.js'; export default nope",
        modules={"./m.js": "export const v = 1"},
    )
    assert r.status == "link_error" and r.error is not None and "nope" in r.error.message


def test_a_specifier_escaping_the_graph_is_refused() -> None:
    r = run_code_sync("import { v } from '../outside.js'; export default v")
    assert r.status == "link_error" and r.error is not None
    assert "outside the module graph" in r.error.message
    with pytest.raises(ValueError, match="escapes"):
        run_code_sync("1", modules={"./../x.js": "export const v = 1"})


LIB = {"lib": {"v": "host"}}


@pytest.mark.parametrize(
    "src",
    [
        pytest.param("import { v } from './lib'; export default v", id="relative"),
        pytest.param("export default (await import('./lib')).v", id="dynamic-relative"),
        pytest.param(
            "import { v as h } from 'lib'; import { v } from './lib'; export default v",
            id="relative-after-bare",
        ),
        pytest.param(
            "import { v } from './lib'; import { v as h } from 'lib'; export default v",
            id="relative-before-bare",
        ),
    ],
)
def test_a_relative_specifier_never_resolves_to_a_host_module(src: str) -> None:
    # "./lib" and the import "lib" both became the module name "lib" (issue 28, item 14)
    r = run_code_sync(src, imports=LIB, language="javascript")
    assert r.status in ("link_error", "error"), (r.status, r.result)  # import() rejects
    assert r.error is not None and r.error.name == "ReferenceError"
    assert "lib' in the module graph" in r.error.message


@pytest.mark.parametrize(
    "src",
    [
        pytest.param("import { v } from 'util.js'; export default v", id="bare"),
        pytest.param(
            "import { v as g } from './util.js'; import { v } from 'util.js'; export default v",
            id="bare-after-relative",
        ),
    ],
)
def test_a_bare_specifier_never_resolves_to_a_graph_module(src: str) -> None:
    r = run_code_sync(src, modules={"./util.js": "export const v = 'graph'"})
    assert r.status == "link_error", (r.status, r.result)
    assert r.error is not None and "'util.js' among the imports" in r.error.message


def test_bare_and_relative_specifiers_each_reach_their_own_namespace() -> None:
    src = "import { v as h } from 'lib'; import { v } from './lib.js'; export default [h, v]"
    r = run_code_sync(src, imports=LIB, modules={"./lib.js": "export const v = 'graph'"})
    assert r.status == "success", r.error
    assert r.result == ["host", "graph"]
    with pytest.raises(ValueError, match="both name the module 'lib'"):
        run_code_sync("1", imports=LIB, modules={"./lib": "export const v = 1"})


def test_execute_calls_a_named_export_of_a_module_graph_entry() -> None:
    src = "import { base } from './b.js'; export function main(x) { return base + x }"
    r = run_code_sync(
        src, modules={"./b.js": "export const base = 40"}, execute={"fn": "main", "args": [2]}
    )
    assert r.result == 42


def test_typescript_is_the_default_and_types_are_stripped() -> None:
    src = """interface User { id: number; name: string }
const users: User[] = [{ id: 1, name: "ada" }];
export default function main(prefix: string): string[] {
  return users.map((u: User) => `${prefix}${u.name}` as string);
}"""
    r = run_code_sync(src, execute={"args": ["@"]})
    assert r.status == "success", r.error
    assert r.result == ["@ada"]


def test_a_typescript_error_is_reported_at_the_users_line_and_column() -> None:
    src = """type Pair<T> = [T, T];
interface Shape { area(): number }
function make<T>(a: T, b: T): Pair<T> { return [a, b] }
const p: Pair<number> = make<number>(1, 2);
export default function main(): number {
  let v: number = (p as any).nope.deep;
  return v;
}"""
    r = run_code_sync(src)
    assert r.status == "error" and r.error is not None
    assert r.error.name == "TypeError"
    # the same program with its types blanked by hand, run as plain JavaScript
    by_hand = "\n".join(
        [
            "",
            "",
            "function make   (a   , b   )          { return [a, b] }",
            "const p               = make        (1, 2);",
            "export default function main()         {",
            "  let v         = (p       ).nope.deep;",
            "  return v;",
            "}",
        ]
    )
    js = run_code_sync(by_hand, language="javascript")
    assert js.error is not None
    assert (r.error.line, r.error.column) == (js.error.line, js.error.column) == (6, 20)


def test_a_namespace_with_values_is_refused_with_a_clear_error_at_its_position() -> None:
    # enums are transformed now (issue 27, item 5); a namespace with values still needs code
    # generation the stripper does not do
    r = run_code_sync("const x = 1;\nnamespace N { export const a = 1; }\nexport default x")
    assert r.status == "error" and r.error is not None
    assert "namespace" in r.error.message and (r.error.line, r.error.column) == (2, 1)


def test_javascript_language_skips_the_strip_step() -> None:
    r = run_code_sync("const x: number = 1; export default x", language="javascript")
    assert r.status == "error" and r.error is not None and r.error.name == "SyntaxError"


def test_the_content_id_is_stable_and_changes_with_the_source_and_options() -> None:
    from quickjail.sandbox import run_code

    a = run_code("export default 1").content_id
    assert a == run_code("export default 1").content_id
    assert a != run_code("export default 2").content_id
    assert a != run_code("export default 1", language="javascript").content_id
    assert a != run_code("export default 1", modules={"./m.js": ""}).content_id
    assert len(a) == 64


def test_a_repeated_graph_loads_every_module_from_cached_bytecode() -> None:
    import uuid

    tag = uuid.uuid4().hex  # a graph no earlier test compiled
    modules = {
        "./a.ts": f"export const tag: string = '{tag}'",
        "./b.js": "export { tag } from './a.ts'; export * from './c.js'",
        "./c.js": "export const c = 3",
    }
    src = "import { tag, c } from './b.js'; export default [tag, c]"
    first = run_code_sync(src, modules=modules)
    second = run_code_sync(src, modules=modules)
    assert first.result == second.result == [tag, 3]
    assert first.metrics.bytecode_hits == 0
    assert second.metrics.bytecode_hits == 4  # the entry and its three modules


def test_cached_bytecode_keeps_error_positions() -> None:
    src = "const x = 1;\nexport default function main() {\n  throw new Error('here');\n}"
    a = run_code_sync(src, filename="pos.js")
    b = run_code_sync(src, filename="pos.js")
    assert b.metrics.bytecode_hits == 1
    assert a.error is not None and b.error is not None
    assert (a.error.line, a.error.column) == (b.error.line, b.error.column) == (3, 13)
