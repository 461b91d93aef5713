"""Intl.RelativeTimeFormat, ListFormat, DisplayNames, Segmenter and supportedValuesOf, through
the public API.

Expected values are Node 20's (full ICU), taken with ``node -e``. DisplayNames in a language
that is not shipped (README "Intl") is English, of the language's main region where that
English is shipped (formatjs's best fit): ``new Intl.DisplayNames(['sw'], {type:
'language'}).of('de')`` is "Kijerumani" in Node and "German" here (resolved locale "en-TZ");
test_intl_english.py has the shipped ones.
"""

from __future__ import annotations

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


# (expression, Node 20's value)
OTHERS: list[tuple[str, object]] = [
    ("new Intl.RelativeTimeFormat('en', {numeric: 'auto'}).format(-1, 'day')", "yesterday"),
    ("new Intl.RelativeTimeFormat('de').format(3, 'hour')", "in 3 Stunden"),
    ("new Intl.ListFormat('en', {type: 'conjunction'}).format(['a', 'b', 'c'])", "a, b, and c"),
    ("new Intl.ListFormat('es', {type: 'disjunction'}).format(['a', 'b', 'c'])", "a, b o c"),
    ("new Intl.DisplayNames(['en'], {type: 'region'}).of('DE')", "Germany"),
    ("new Intl.DisplayNames(['en'], {type: 'currency'}).of('JPY')", "Japanese Yen"),
    (
        "[...new Intl.Segmenter('en', {granularity: 'grapheme'})"
        ".segment('e\\u0301\U0001f468\u200d\U0001f469\u200d\U0001f467!')].map(s => s.segment)",
        ["e\u0301", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "!"],
    ),
    (
        "[...new Intl.Segmenter('en', {granularity: 'word'}).segment('Hello, world!"
        " 42')].filter(s => s.isWordLike).map(s => s.segment)",
        ["Hello", "world", "42"],
    ),
    ("Intl.supportedValuesOf('currency').includes('EUR')", True),
]


@pytest.mark.parametrize(("expr", "want"), OTHERS)
def test_the_members_give_what_node_gives(expr: str, want: object) -> None:
    assert js(expr) == want


def test_display_names_in_a_language_without_data_are_english() -> None:
    assert js(
        "const d = (t) => new Intl.DisplayNames([t], {type: 'language'});"
        "[d('sw').of('de'), d('sw').resolvedOptions().locale, d('th').resolvedOptions().locale]"
    ) == ["German", "en-TZ", "en-US"]


def test_members_settle_into_data_properties_of_intl_on_first_read() -> None:
    assert js(
        "const before = Object.getOwnPropertyDescriptor(Intl, 'ListFormat');"
        "const LF = Intl.ListFormat;"
        "const after = Object.getOwnPropertyDescriptor(Intl, 'ListFormat');"
        "[typeof before.get, after.value === LF, after.writable, after.enumerable,"
        " new LF('en').format(['x', 'y'])]"
    ) == ["function", True, True, False, "x and y"]
