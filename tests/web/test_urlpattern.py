"""URLPattern follows the WHATWG URL Pattern Standard, through the public API.

The corpus (``urlpattern_cases.json``) covers each section of the standard: the tokenizer, the
pattern parser, part lists to regular expressions and back to pattern strings, the
constructor-string parser, URLPatternInit processing with base URLs, each canonicalize callback,
``ignoreCase``, and the errors. Its expected values are what workerd gave
(``urlpattern_workerd.py`` records them); ``urlpattern_driver.js`` runs the cases in both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quickjail import run_code_sync

HERE = Path(__file__).resolve().parent
DATA = json.loads((HERE / "urlpattern_cases.json").read_text())
CASES: list[dict[str, Any]] = DATA["cases"]
DRIVER = (HERE / "urlpattern_driver.js").read_text()

# Where the standard and workerd disagree we follow the standard; each entry names the case (its
# constructor arguments) and the input, with what the standard gives.
STANDARD_OVER_WORKERD: dict[tuple[str, str], object] = {
    # "If url is failure, return null": a relative URL string without a base URL does not parse,
    # so it matches nothing; workerd matches it as if every component were the empty string
    # but the pathname
    (json.dumps([{"pathname": "/a/:b"}]), json.dumps(["/a/x"])): {"test": False, "exec": None},
}
# The same for the normalized pattern strings (the getters), by case: a group with a prefix
# other than "/" keeps its braces ("generate a pattern string": needs grouping); workerd drops
# them, which reads back as the same pattern
STANDARD_COMPONENTS: dict[str, list[str]] = {
    json.dumps([{"pathname": "([a-c]+){/b:y}"}]): [
        "*",
        "*",
        "*",
        "*",
        "*",
        "([a-c]+){/b:y}",
        "*",
        "*",
    ],
}


def js(src: str) -> Any:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


@pytest.fixture(scope="module")
def corpus_results() -> list[Any]:
    bare = [{"pattern": c["pattern"], "inputs": c["inputs"]} for c in CASES]
    results = js(f"({DRIVER})({json.dumps(bare)})")
    assert isinstance(results, list)
    return results


def expected_of(case: dict[str, Any]) -> Any:
    expected = json.loads(json.dumps(case["expected"]))
    expected["components"] = STANDARD_COMPONENTS.get(
        json.dumps(case["pattern"]), expected.get("components")
    )
    if expected["components"] is None:
        del expected["components"]
    for k, args in enumerate(case["inputs"]):
        key = (json.dumps(case["pattern"]), json.dumps(args))
        if key in STANDARD_OVER_WORKERD:
            expected["results"][k] = STANDARD_OVER_WORKERD[key]
    return expected


@pytest.mark.parametrize("index", range(len(CASES)))
def test_the_corpus_gives_what_workerd_gives(corpus_results: list[Any], index: int) -> None:
    assert corpus_results[index] == expected_of(CASES[index]), CASES[index]["pattern"]


def test_the_corpus_is_large_and_recorded_with_workerd() -> None:
    assert DATA["workerd"], "run tests/web/urlpattern_workerd.py to record the expected values"
    assert len(CASES) >= 150
    assert sum(len(c["inputs"]) for c in CASES) >= 300
    assert sum("error" in c["expected"] for c in CASES) >= 30
    listed = {(json.dumps(c["pattern"]), json.dumps(a)) for c in CASES for a in c["inputs"]}
    assert set(STANDARD_OVER_WORKERD) <= listed
    assert set(STANDARD_COMPONENTS) <= {json.dumps(c["pattern"]) for c in CASES}


def test_a_constructor_string_is_split_into_components() -> None:
    got = js(
        "const p = new URLPattern('https://:user@{:sub.}?example.com:8080/a/:id(\\\\d+)/?q=:v#h');"
        "const r = p.exec('https://me@x.example.com:8080/a/42/?q=1#h');"
        "[p.protocol, p.username, p.password, p.hostname, p.port, p.pathname, p.search, p.hash,"
        " p.hasRegExpGroups, r.username.groups, r.hostname.groups, r.pathname.groups,"
        " r.search.groups,"
        " new URLPattern('https://e.com/:id(\\\\d+)?q').pathname]"
    )
    assert got == [
        "https",
        ":user",
        "*",
        "{:sub.}?example.com",
        "8080",
        "/a/:id(\\d+)/",
        "q=:v",
        "h",
        True,
        {"user": "me"},
        {"sub": "x"},
        {"id": "42"},
        {"v": "1"},
        "/:id(\\d+)?q",  # "?" after a group is its modifier, not the search's start
    ]


def test_invalid_regexp_groups_and_bad_patterns_throw_type_errors() -> None:
    got = js(
        "const t = (f) => { try { f(); return 'no error'; } catch (e) {"
        " return Object.getPrototypeOf(e) === TypeError.prototype ? 'TypeError' : String(e); } };"
        "[ {pathname: '/(a[)'}, {pathname: '/([)'}, {pathname: '/(a{2,1})'}, {search: '(a|'},"
        "  {pathname: '/:a/:a'}, {pathname: '/{a'}, {pathname: '/:'}, {pathname: '/(é)'},"
        "  {hostname: 'a b'}, {port: '65536'}, {protocol: 'ht tp'}, {hostname: '[::x]'},"
        "  {pathname: '/((a))'}, {pathname: '/(?:a)'} ].map((p) => t(() => new URLPattern(p)))"
        ".concat([t(() => new URLPattern('/relative')), t(() => new URLPattern({}, 'https://a')),"
        "  t(() => new URLPattern('/x', 'not a url')), t(() => new URLPattern(Symbol())),"
        "  t(() => new URLPattern({}, 5)), t(() => new URLPattern({pathname: Symbol()})),"
        "  t(() => new URLPattern({}).test({}, 'https://a')), t(() => URLPattern())])"
    )
    assert got == ["TypeError"] * 22


def test_the_interface_has_web_idl_shape_and_brand_checks() -> None:
    got = js(
        "const t = (f) => { try { f(); return 'no error'; } catch (e) { return e.name; } };"
        "const P = URLPattern.prototype;"
        "const d = Object.getOwnPropertyDescriptor(globalThis, 'URLPattern');"
        "const get = (n) => Object.getOwnPropertyDescriptor(P, n).get;"
        "[URLPattern.name, URLPattern.length, P.test.length, P.exec.length,"
        " Object.prototype.toString.call(new URLPattern()),"
        " d.enumerable, d.writable, d.configurable,"
        " t(() => P.test.call({}, 'https://a/')), t(() => P.exec.call(new URL('https://a/'))),"
        " t(() => get('pathname').call({})), t(() => get('hasRegExpGroups').call(P)),"
        " t(() => P.protocol), Object.getOwnPropertyNames(new URLPattern()).length]"
    )
    assert got == [
        "URLPattern",
        0,
        0,
        0,
        "[object URLPattern]",
        False,
        True,
        True,
        "TypeError",
        "TypeError",
        "TypeError",
        "TypeError",
        "TypeError",
        0,
    ]


def test_group_names_are_own_data_properties_even_named_proto() -> None:
    got = js(
        "const p = new URLPattern({pathname: '/:__proto__/:constructor'});"
        "const r = p.exec({pathname: '/a/b'});"
        "const g = r.pathname.groups;"
        "[Object.getPrototypeOf(g) === Object.prototype, Object.keys(g),"
        " g.__proto__, g.constructor]"
    )
    assert got == [True, ["__proto__", "constructor"], "a", "b"]


TAMPER = """
const probe = () => {
  const p = new URLPattern('http{s}?://{:sub.}?example.com/:cat/:id(\\\\d+)/?q=:v#:h',
    {ignoreCase: true});
  const q = new URLPattern({pathname: '/Files/*', baseURL: 'https://files.example/'});
  return JSON.stringify([p.pathname, p.hostname, p.search, p.hasRegExpGroups,
    p.exec('https://www.EXAMPLE.com/Books/12/?q=x#top'), p.test({pathname: '/a/b'}),
    new URL('http://user:pw@0x7f.1:8080/a/./b/../c?q#f').href, p.test('http://[::1]/'),
    new URLPattern({hostname: '[\\\\:\\\\:1]'}).test('http://[0::1]/'),
    q.exec({pathname: '/Files/a/b', protocol: 'https', hostname: 'files.example'}),
    q.test('https://files.example/Files/x'), q.test('https://files.example/other')]);
};
const before = probe();
const noop = () => null;
RegExp.prototype.exec = noop;
RegExp.prototype.test = () => true;
for (const s of [Symbol.match, Symbol.replace, Symbol.split, Symbol.matchAll, Symbol.search])
  RegExp.prototype[s] = noop;
for (const name of ['slice', 'indexOf', 'lastIndexOf', 'toLowerCase', 'codePointAt',
    'toWellFormed', 'split', 'replace', 'replaceAll', 'startsWith', 'includes', 'at', 'charAt',
    'substring', 'padStart', 'repeat', 'trim', 'normalize'])
  String.prototype[name] = noop;
String.prototype[Symbol.iterator] = function* () { yield 'x'; };
for (const name of ['push', 'join', 'slice', 'map', 'filter', 'some', 'forEach', 'includes',
    'indexOf', 'at', 'pop', 'shift', 'concat', 'reduce', 'find'])
  Array.prototype[name] = noop;
Array.prototype[Symbol.iterator] = function* () {};
Function.prototype.call = noop;
Function.prototype.apply = noop;
Function.prototype.bind = noop;
Object.defineProperty(Object.prototype, 'protocol',
  {set() { throw new Error('setter'); }, configurable: true});
const after = probe();
export default [before === after, JSON.parse(before)];
"""


def test_patched_regexp_string_and_array_methods_change_no_result() -> None:
    r = run_code_sync(TAMPER)
    assert r.status == "success", r.error
    same, before = r.result
    assert same, before
    assert before[4]["pathname"]["groups"] == {"cat": "Books", "id": "12"}
    assert before[5:9] == [False, "http://user:pw@127.0.0.1:8080/a/c?q#f", False, True]
    assert before[9]["pathname"]["groups"] == {"0": "a/b"}
    assert before[10:] == [True, False]


def test_a_pathological_pattern_ends_as_a_fuel_limit_not_a_hang() -> None:
    r = run_code_sync(
        "const p = new URLPattern({pathname: '/((?:a+)+b)'});"
        "export default p.test({pathname: '/' + 'a'.repeat(64) + 'c'})",
        fuel=200_000_000,
    )
    assert r.status == "terminated" and r.reason == "fuel"


def test_a_pathological_pattern_ends_at_the_timeout_when_fuel_is_unlimited() -> None:
    r = run_code_sync(
        "const p = new URLPattern({pathname: '/((?:a+)+b)'});"
        "export default p.test({pathname: '/' + 'a'.repeat(64) + 'c'})",
        timeout=0.5,
    )
    assert r.status == "terminated" and r.reason == "timeout"


def test_a_long_pattern_costs_fuel_in_proportion_to_its_length() -> None:
    def fuel(n: int) -> int:
        r = run_code_sync(
            f"const s = '/:x(\\\\d+)/' + 'a/{{b}}?/c\\\\:d/'.repeat({n}) + '*';"
            "export default new URLPattern({pathname: s}).pathname.length",
            fuel=10**10,
        )
        assert r.status == "success", r.error
        return r.metrics.fuel_used

    small, large = fuel(200), fuel(2000)
    assert large < 20 * small  # 10x the text: linear, with room for the run's fixed cost


def test_v_flag_regexps_take_a_dash_or_a_double_colon_outside_a_class() -> None:
    # libregexp held a pattern character to a class's v-flag rules (our patch 0011)
    got = js(
        "const t = (f) => { try { f(); return 'no error'; } catch (e) { return e.name; } };"
        "[/^a-b$/v.test('a-b'), /^a::b$/v.test('a::b'),"
        " new RegExp('^[\\\\w--a]+$', 'v').test('bc'), t(() => new RegExp('[a-b-]', 'v'))]"
    )
    assert got == [True, True, True, "SyntaxError"]
