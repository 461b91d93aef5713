"""Intl.DateTimeFormat with IANA time zones and the Date toLocale*String methods, through the
public API.

Expected values are Node 20's (full ICU), taken with ``node -e``. Where formatjs (its CLDR data)
differs from Node 20's ICU, the test gives formatjs's value and says what Node gives: before
AM/PM formatjs puts U+202F (NARROW NO-BREAK SPACE, as CLDR 42+ and current browsers do) where
Node 20 keeps a plain space, and a full date with a time joins them with ", " where ICU
writes " at ".
"""

from __future__ import annotations

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


# (expression, Node 20's value)
DATES: list[tuple[str, object]] = [
    ("new Intl.DateTimeFormat('de', {timeZone: 'Asia/Tokyo'}).format(0)", "1.1.1970"),
    ("new Date(Date.UTC(2024, 0, 15, 9, 5, 7)).toLocaleDateString('en-GB')", "15/01/2024"),
    (
        "new Date(Date.UTC(2024, 0, 15, 9, 5, 7)).toLocaleDateString('ja-JP', {year: 'numeric',"
        " month: 'long', day: 'numeric', weekday: 'long'})",
        "2024\u5e741\u670815\u65e5\u6708\u66dc\u65e5",
    ),
    (
        "new Date(Date.UTC(2024, 6, 1, 12)).toLocaleString('fr-FR', {timeZone: 'Europe/Paris'})",
        "01/07/2024 14:00:00",
    ),
    ("new Date(NaN).toLocaleString('en')", "Invalid Date"),
    ("new Intl.DateTimeFormat().resolvedOptions().timeZone", "UTC"),
    (
        "new Intl.DateTimeFormat('en-US', {month: 'short', day:"
        " 'numeric'}).formatRange(Date.UTC(2024,0,1), Date.UTC(2024,0,5))",
        "Jan 1\u2009\u2013\u20095",
    ),
    (
        "(() => { let e; try { new Intl.DateTimeFormat('en', {timeZone: 'Mars/Base'}) } catch"
        " (x) { e = x.constructor.name } return e })()",
        "RangeError",
    ),
    (
        "(() => { let e; try { new Date(0).toLocaleString('en', {timeZone: 'Mars/Base'}) } catch"
        " (x) { e = x.constructor.name } return e })()",
        "RangeError",
    ),
]

# (expression, formatjs's value, Node 20's value)
DATES_DIFFERING: list[tuple[str, str, str]] = [
    (
        "new Intl.DateTimeFormat('en-US', {timeZone: 'America/New_York', dateStyle: 'full',"
        " timeStyle: 'long'}).format(Date.UTC(2024, 6, 4, 16, 30))",
        "Thursday, July 4, 2024, 12:30:00\u202fPM EDT",
        "Thursday, July 4, 2024 at 12:30:00 PM EDT",
    ),
    (
        "new Date(Date.UTC(2024, 0, 15, 9, 5, 7)).toLocaleString('en-US')",
        "1/15/2024, 9:05:07\u202fAM",
        "1/15/2024, 9:05:07 AM",
    ),
    (
        "new Date(Date.UTC(2024, 0, 15, 9, 5, 7)).toLocaleString()",
        "1/15/2024, 9:05:07\u202fAM",
        "1/15/2024, 9:05:07 AM",
    ),
    (
        "new Date(Date.UTC(2024, 0, 15, 9, 5, 7)).toLocaleTimeString('en-US', {timeZone:"
        " 'Europe/Paris'})",
        "10:05:07\u202fAM",
        "10:05:07 AM",
    ),
    (
        "new Intl.DateTimeFormat('en', {timeZone: 'America/Los_Angeles', timeZoneName: 'short',"
        " hour: 'numeric'}).format(Date.UTC(2024, 6, 1, 12))",
        "5\u202fAM PDT",
        "5 AM PDT",
    ),
    (
        "new Date(0).toLocaleString('en-US', {timeZone: 'UTC'})",
        "1/1/1970, 12:00:00\u202fAM",
        "1/1/1970, 12:00:00 AM",
    ),
]


@pytest.mark.parametrize(("expr", "want"), DATES)
def test_dates_format_as_node_formats_them(expr: str, want: object) -> None:
    assert js(expr) == want


@pytest.mark.parametrize(("expr", "formatjs", "node"), DATES_DIFFERING)
def test_dates_where_cldr_differs_from_node_icu_differ_only_in_spacing(
    expr: str, formatjs: str, node: str
) -> None:
    got = js(expr)
    assert got == formatjs
    assert str(got).replace("\u202f", " ").replace(", 12:30", " at 12:30") == node


def test_date_methods_have_their_names_and_lengths_and_check_this() -> None:
    assert js(
        "const names = ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString'];"
        "const out = names.map((n) => [Date.prototype[n].name, Date.prototype[n].length]);"
        "try { Date.prototype.toLocaleString.call({}) } catch (e) { out.push(e.constructor.name) }"
        "out"
    ) == [
        ["toLocaleString", 0],
        ["toLocaleDateString", 0],
        ["toLocaleTimeString", 0],
        "TypeError",
    ]


def test_time_zones_validate_case_insensitively_and_resolve_to_their_iana_name() -> None:
    # every 16th of the zones supportedValuesOf lists (each validation lists all zone names)
    assert js(
        "const zones = Intl.supportedValuesOf('timeZone').filter((_, i) => i % 16 === 0);"
        "const ok = zones.filter((z) => { try {"
        " new Intl.DateTimeFormat('en', {timeZone: z}); return true } catch { return false } });"
        "[zones.length > 15, ok.length === zones.length,"
        " new Intl.DateTimeFormat('en', {timeZone: 'asia/kolkata'}).resolvedOptions().timeZone]"
    ) == [True, True, "Asia/Kolkata"]


def test_only_the_zones_a_run_formats_are_unpacked() -> None:
    # a zone's entry in tzData is an accessor until read, then its transitions
    assert js(
        "const D = Intl.DateTimeFormat;"
        "new D('en', {timeZone: 'Europe/Paris', hour: 'numeric'}).format(0);"
        "const d = (z) => typeof Object.getOwnPropertyDescriptor(D.tzData, z).get;"
        "[d('Europe/Paris'), d('America/Lima')]"
    ) == ["undefined", "function"]


def test_a_locales_first_date_format_leaves_the_range_patterns_it_does_not_use_unparsed() -> None:
    """formatRange's patterns of a locale's 640 skeletons are parsed on their first read
    (``SOURCE_PATCHES`` in sandbox/_intl_data.py): a first ``fr`` format took 2.67 G fuel when
    all of them were parsed with it, 1.03 G since."""
    r = run_code_sync("new Intl.DateTimeFormat('fr').format(0)", kind="script", fuel=10**11)
    assert r.status == "success", r.error
    assert r.result == "01/01/1970"
    assert r.metrics.fuel_used < 1_800_000_000


def test_a_format_made_after_object_prototype_gained_properties_is_the_packages() -> None:
    """The deferred parse walks a skeleton's interval formats with for-in: properties a program
    added to Object.prototype after a locale's first format are not among them (it threw
    "Invalid range pattern token" for ``Object.prototype.year``, as test262's
    ``default-options-object-prototype.js`` found)."""
    src = """
    new Intl.DateTimeFormat('fr').format(0);
    Object.prototype.year = '2-digit';
    let out;
    try {
      out = [new Date(0).toLocaleString('fr', {timeZone: 'UTC'}),
             new Intl.DateTimeFormat('fr', {month: 'short', day: 'numeric', timeZone: 'UTC'})
               .formatRange(0, 86400000 * 40)];
    } finally { delete Object.prototype.year; }
    out
    """
    # Node 20: ["70", "1 janv. – 10 févr. 70"] (the options inherit year: "2-digit"; ICU puts
    # plain spaces around the dash where CLDR's data has thin ones)
    assert js(src) == ["70", "1 janv.\u2009\u2013\u200910 f\u00e9vr. 70"]
