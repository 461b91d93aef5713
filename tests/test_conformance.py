"""Conformance fixes found by an outside suite: JSON modules, built-in attributes under
dynamic_code, `await` as an identifier in scripts, the name of a thrown non-Error, and an entry
named with a leading "./"."""

from __future__ import annotations

import pytest

import quickjail

pytestmark = pytest.mark.timeout(60)

JSON_IMPORT = 'import data from "./x.json" with { type: "json" }; export default data'


def test_a_json_module_imported_with_type_json_is_parsed_as_json() -> None:
    r = quickjail.run_code_sync(JSON_IMPORT, modules={"./x.json": '{"a": [1, 2], "b": null}'})
    assert r.status == "success", r.error
    assert r.result == {"a": [1, 2], "b": None}


def test_a_json_module_holding_javascript_is_a_syntax_error_not_code() -> None:
    # valid JavaScript, invalid JSON: it must never run
    r = quickjail.run_code_sync(JSON_IMPORT, modules={"./x.json": "report(1) || {}"})
    assert r.status == "error" and r.error is not None
    assert r.error.name == "SyntaxError" and r.reports == []


def test_an_invalid_json_module_is_a_syntax_error_at_its_position() -> None:
    r = quickjail.run_code_sync(JSON_IMPORT, modules={"./x.json": '{"a": [1, 2'})
    assert r.status == "error" and r.error is not None
    assert r.error.name == "SyntaxError" and "JSON" in r.error.message


def test_json_modules_work_through_the_bytecode_cache_and_dynamic_import() -> None:
    # twice: the second run finds the entry's compiled form cached, if it was cached at all
    modules = {"./x.json": "[1, 2, 3]"}
    for _ in range(2):
        r = quickjail.run_code_sync(JSON_IMPORT, modules=modules, language="javascript")
        assert r.result == [1, 2, 3], r.error
    dyn = 'const m = await import("./x.json", { with: { type: "json" } }); export default m.default'
    r = quickjail.run_code_sync(dyn, modules=modules)
    assert r.result == [1, 2, 3], r.error


def test_a_json_module_is_one_mutable_value_shared_by_its_importers() -> None:
    modules = {
        "./x.json": '{"n": 1}',
        "./a.js": 'import d from "./x.json" with { type: "json" }; d.n += 1; export default d',
    }
    src = (
        'import a from "./a.js"; import d from "./x.json" with { type: "json" };'
        "export default [a === d, d.n]"
    )
    r = quickjail.run_code_sync(src, modules=modules)
    assert r.result == [True, 2], r.error


@pytest.mark.parametrize(
    ("clause", "name", "words"),
    [
        ('{ type: "text" }', "TypeError", "'text' is not supported"),
        ('{ type: "bytes" }', "TypeError", "'bytes' is not supported"),
        ('{ type: "json", other: "x" }', "SyntaxError", "'other' is not supported"),
    ],
)
def test_unsupported_import_attributes_are_refused(clause: str, name: str, words: str) -> None:
    src = f'import data from "./x.json" with {clause}; export default data'
    r = quickjail.run_code_sync(src, modules={"./x.json": "1"})
    assert r.status == "error" and r.error is not None
    assert (r.error.name, words in r.error.message) == (name, True)


_DESCRIPTORS = """
const protos = {
  Function: Function.prototype,
  AsyncFunction: Object.getPrototypeOf(async function () {}),
  GeneratorFunction: Object.getPrototypeOf(function* () {}),
  AsyncGeneratorFunction: Object.getPrototypeOf(async function* () {}),
};
const out = {};
for (const [k, p] of Object.entries(protos)) {
  const d = Object.getOwnPropertyDescriptor(p, "constructor");
  out[k] = [d.writable, d.enumerable, d.configurable];
}
for (const k of ["Function", "eval"]) {
  const d = Object.getOwnPropertyDescriptor(globalThis, k);
  out["global " + k] = [d.writable, d.enumerable, d.configurable];
}
export default out;
"""

# ECMA-262: %Function.prototype%.constructor is a normal method property; the prototypes of
# AsyncFunction, GeneratorFunction and AsyncGeneratorFunction have a `constructor` that is
# { [[Writable]]: false, [[Enumerable]]: false, [[Configurable]]: true }; globals
# `Function` and `eval` are writable, not enumerable, configurable.
SPEC_ATTRIBUTES = {
    "Function": [True, False, True],
    "AsyncFunction": [False, False, True],
    "GeneratorFunction": [False, False, True],
    "AsyncGeneratorFunction": [False, False, True],
    "global Function": [True, False, True],
    "global eval": [True, False, True],
}


@pytest.mark.parametrize("dynamic", [False, True])
def test_dynamic_code_leaves_builtin_property_attributes_as_the_spec_says(dynamic: bool) -> None:
    r = quickjail.run_code_sync(_DESCRIPTORS, dynamic_code=dynamic)
    assert r.status == "success", r.error
    assert r.result == SPEC_ATTRIBUTES


def test_dynamic_code_restores_the_constructors_themselves() -> None:
    src = """
    const AF = Object.getPrototypeOf(async function () {}).constructor;
    const GF = Object.getPrototypeOf(function* () {}).constructor;
    export default [await new AF("return 6 * 7")(), new GF("yield 1")().next().value,
                    AF === Function ? "same" : AF.name];
    """
    r = quickjail.run_code_sync(src, dynamic_code=True)
    assert r.result == [42, 1, "AsyncFunction"], r.error


def test_await_is_an_identifier_in_a_script_without_top_level_await() -> None:
    r = quickjail.run_code_sync(
        "var await = 20; function f(await) { return await } f(await + 1)", kind="script"
    )
    assert r.status == "success", r.error
    assert r.result == 21


def test_a_script_with_top_level_await_still_awaits() -> None:
    r = quickjail.run_code_sync("const v = await Promise.resolve(5); v * 2", kind="script")
    assert r.result == 10, r.error


def test_a_plain_script_result_that_is_a_promise_is_awaited_and_errors_keep_positions() -> None:
    r = quickjail.run_code_sync("var await = 1;\nPromise.resolve(await + 1)", kind="script")
    assert r.result == 2, r.error
    r = quickjail.run_code_sync("var await = 1;\n\n  null.x", kind="script")
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.line, r.error.column) == ("TypeError", 3, 3)


def test_a_script_that_parses_neither_way_reports_the_error_further_in() -> None:
    r = quickjail.run_code_sync("var await = 1;\nlet x = ;", kind="script")
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.line) == ("SyntaxError", 2)


def test_a_thrown_non_error_object_keeps_its_constructor_name() -> None:
    r = quickjail.run_code_sync("class MyError {}\nthrow new MyError()")
    assert r.status == "error" and r.error is not None
    assert r.error.name == "MyError"
    r = quickjail.run_code_sync("throw { code: 1 }")
    assert r.error is not None and r.error.name == "Object"
    r = quickjail.run_code_sync("throw 'text'")
    assert r.error is not None and r.error.name == ""


def test_the_name_of_a_thrown_object_is_read_without_running_its_code() -> None:
    # a getter on the constructor's name, or a proxy, is never run to name the error
    src = """
    class Sneaky { static get name() { report("getter ran"); return "Forged" } }
    const p = new Proxy({}, { getPrototypeOf() { report("trap ran"); return null } });
    if (globalThis.which === undefined) throw new Sneaky();
    throw p;
    """
    r = quickjail.run_code_sync(src)
    assert r.error is not None and r.error.name == "" and r.reports == []
    r = quickjail.run_code_sync(src, globals={"which": 1})
    assert r.error is not None and r.error.name == "" and r.reports == []


@pytest.mark.parametrize("filename", ["main.js", "./main.js", "src/main.js", "./src/./main.js"])
def test_an_entry_name_with_a_leading_dot_slash_resolves_relative_imports(filename: str) -> None:
    modules = {"./util.js": "export default 5", "./lib/two.js": "export default 2"}
    src = 'import u from "./util.js"; import t from "./lib/two.js"; export default u + t'
    r = quickjail.run_code_sync(src, filename=filename, modules=modules)
    assert r.status == "success", r.error
    assert r.result == 7
