"""Intl (ECMA-402) and the toLocaleString family, through the public API.

Expected values are Node 20's (full ICU), taken with ``node -e``; where the formatjs polyfills
(CLDR data of their own version) differ from ICU, the test says so.
"""

from __future__ import annotations

import json

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


# (expression, Node 20's value)
NUMBERS: list[tuple[str, str]] = [
    ("(48213).toLocaleString('en-US')", "48,213"),
    ("(48213.5678).toLocaleString()", "48,213.568"),
    (
        "new Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(1234.5)",
        "$1,234.50",
    ),
    ("new Intl.NumberFormat('en-US', {style: 'percent'}).format(0.256)", "26%"),
    ("new Intl.NumberFormat('en-US', {notation: 'compact'}).format(1234567)", "1.2M"),
    (
        "new Intl.NumberFormat('en', {notation:'compact', compactDisplay:'long'}).format(2500000)",
        "2.5 million",
    ),
    (
        "new Intl.NumberFormat('en-US', {style: 'unit', unit: 'kilometer-per-hour'}).format(50)",
        "50 km/h",
    ),
    (
        "new Intl.NumberFormat('en', {style:'unit', unit:'liter', unitDisplay:'long'}).format(16)",
        "16 liters",
    ),
    (
        "(12.5).toLocaleString('en', {style:'currency', currency:'EUR', currencyDisplay:'name'})",
        "12.50 euros",
    ),
    ("new Intl.NumberFormat('en', {maximumSignificantDigits: 3}).format(123456)", "123,000"),
    ("new Intl.NumberFormat('en', {notation: 'scientific'}).format(123456)", "1.235E5"),
    ("new Intl.NumberFormat('en', {signDisplay: 'always'}).format(5)", "+5"),
    ("(NaN).toLocaleString('en')", "NaN"),
    ("(-Infinity).toLocaleString('en')", "-∞"),
    ("(12345678901234567890n).toLocaleString('en-US')", "12,345,678,901,234,567,890"),
]


@pytest.mark.parametrize(("expr", "want"), NUMBERS)
def test_english_numbers_format_as_node_formats_them(expr: str, want: str) -> None:
    assert js(expr) == want


def test_number_format_to_parts_gives_the_parts() -> None:
    parts = js(
        "JSON.stringify(new Intl.NumberFormat('en-US', {maximumFractionDigits: 2})"
        ".formatToParts(-1234.567))"
    )
    assert json.loads(str(parts)) == [
        {"type": "minusSign", "value": "-"},
        {"type": "integer", "value": "1"},
        {"type": "group", "value": ","},
        {"type": "integer", "value": "234"},
        {"type": "decimal", "value": "."},
        {"type": "fraction", "value": "57"},
    ]


def test_intl_is_an_object_tagged_intl_whose_members_are_not_enumerable() -> None:
    assert js(
        "[Object.prototype.toString.call(Intl), Object.keys(Intl).length,"
        " typeof Intl.NumberFormat, Intl.NumberFormat.name, Intl.NumberFormat.length]"
    ) == ["[object Intl]", 0, "function", "NumberFormat", 0]


def test_the_default_locale_is_en_us_and_an_unknown_one_falls_back_to_it() -> None:
    assert js(
        "[new Intl.NumberFormat().resolvedOptions().locale,"
        " new Intl.NumberFormat('xx-YY').resolvedOptions().locale,"
        " new Intl.NumberFormat('en-US').resolvedOptions().locale]"
    ) == ["en-US", "en-US", "en-US"]


def test_get_canonical_locales_and_supported_locales_of() -> None:
    assert js(
        "[Intl.getCanonicalLocales(['EN-us', 'zh-hant-tw']),"
        " Intl.NumberFormat.supportedLocalesOf(['de-DE', 'xx', 'fr'])]"
    ) == [["en-US", "zh-Hant-TW"], ["de-DE", "fr"]]


def test_plural_rules_select_the_cldr_category() -> None:
    assert js(
        "[new Intl.PluralRules('en-US').select(1),"
        " new Intl.PluralRules('en-US', {type: 'ordinal'}).select(22),"
        " new Intl.PluralRules('en').select(2)]"
    ) == ["one", "two", "other"]


def test_locale_parses_and_maximizes_tags() -> None:
    assert js(
        "const l = new Intl.Locale('en-Latn-US', {calendar: 'gregory'});"
        "[l.language, l.script, l.region, l.baseName, l.toString(),"
        " new Intl.Locale('en').maximize().toString()]"
    ) == ["en", "Latn", "US", "en-Latn-US", "en-Latn-US-u-ca-gregory", "en-Latn-US"]


def test_to_locale_string_methods_have_their_names_and_lengths_and_check_this() -> None:
    assert js(
        "const f = Number.prototype.toLocaleString;"
        "let e; try { f.call('1') } catch (x) { e = x.constructor.name }"
        "[f.name, f.length, BigInt.prototype.toLocaleString.length,"
        " Array.prototype.toLocaleString.length, e,"
        " Object.getOwnPropertyDescriptor(Number.prototype, 'toLocaleString').enumerable]"
    ) == ["toLocaleString", 0, 0, 0, "TypeError", False]


def test_array_to_locale_string_passes_locales_and_options_on() -> None:
    # Node: [1234.5, null, 7n].toLocaleString('de') is "1.234,5,,7"; with English data only the
    # arguments reaching the elements show: en-IN groups by lakhs
    assert js("[1234567.5, null, 7n].toLocaleString('en-IN')") == "12,34,567.5,,7"


def test_a_program_replacing_intrinsics_does_not_break_the_loader() -> None:
    # the loader, the data diffs and toLocaleString use intrinsics captured at build time
    # (formatjs's own code runs in the program's realm, as any polyfill: replacing what it uses
    # breaks it)
    assert js(
        "Reflect.apply = () => 'patched'; Object.hasOwn = () => false;"
        "Object.getOwnPropertyDescriptor = () => undefined; JSON.parse = () => ({});"
        "Number.prototype.valueOf = () => 7; BigInt.prototype.valueOf = () => 7n;"
        "[(48213).toLocaleString('en-US'), (1234567.5).toLocaleString('en-IN'),"
        " (5n).toLocaleString('en')]"
    ) == ["48,213", "12,34,567.5", "5"]


def test_replacing_intl_members_before_use_is_respected() -> None:
    assert js(
        "Intl.NumberFormat = function Fake() {};"
        "[Intl.NumberFormat.name, (5).toLocaleString('en'),"
        " Object.getOwnPropertyDescriptor(Intl, 'NumberFormat').writable]"
    ) == ["Fake", "5", True]


def test_a_run_that_never_touches_intl_loads_none_of_it() -> None:
    # a run that only looks at Intl grows its memory no more than one that does not; one that
    # formats a number loads the polyfills and their data: megabytes more
    plain = run_code_sync("1", kind="script").metrics.peak_memory_bytes
    looks = run_code_sync(
        "typeof Intl === 'object' && Object.keys(Intl).length === 0", kind="script"
    )
    uses = run_code_sync("(1).toLocaleString('en')", kind="script")
    assert looks.result is True and uses.result == "1"
    assert looks.metrics.peak_memory_bytes <= plain + 64 * 1024
    assert uses.metrics.peak_memory_bytes >= plain + 1024 * 1024


def test_a_run_tampering_with_formatjs_state_breaks_only_itself() -> None:
    # the loaded classes and their data are per run: the next run starts from the snapshot
    broken = run_code_sync(
        "const NF = Intl.NumberFormat;"
        "for (const k of Object.keys(NF.localeData)) NF.localeData[k] = {};"
        "NF.__addLocaleData = null; NF.availableLocales.clear();"
        "let e; try { (1234.5).toLocaleString('de') } catch (x) { e = x.constructor.name } e",
        kind="script",
    )
    assert broken.status == "success"
    assert js("(1234.5).toLocaleString('de')") == "1.234,5"


def test_a_huge_number_string_is_bounded_by_the_runs_own_limits() -> None:
    r = run_code_sync(
        "new Intl.NumberFormat('en').format('9'.repeat(2_000_000))",
        kind="script",
        memory_limit_bytes=32 * 2**20,
        timeout=20,
    )
    # (formatjs gives "NaN" for a string this long, Node the digits grouped: a difference of
    # the polyfill, not checked here; what is checked is that the run ends on its own terms)
    assert r.status in ("success", "memory", "error", "terminated")
    assert r.status != "success" or isinstance(r.result, str)
