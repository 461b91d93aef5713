"""Every regional English locale, and DisplayNames in the shipped base locales, through the
public API.

Expected values are Node 20's (full ICU), taken with ``node -e``. Regional English is stored as
diffs against ``en`` or one of its CLDR parents (``en-001``, ``en-150``); a tag must resolve
to its own data, not to a parent's.
"""

from __future__ import annotations

import pytest

from quickjail import run_code_sync

D = "new Date(Date.UTC(2024, 0, 5, 15, 4, 5))"

# (expression, Node 20's value): two or more regions per kind, besides the nine shipped before
# (en-001, en-150, en-AU, en-CA, en-GB, en-IE, en-IN, en-NZ, en-ZA). ListFormat and
# DisplayNames of the others are the same as one of en, en-001 and en-150 in Node 20 too, so
# for them the last row checks that each region resolves to itself.
ENGLISH: list[tuple[str, object]] = [
    ("new Intl.NumberFormat('en-CH').format(1234567.891)", "1'234'567.891"),
    ("new Intl.NumberFormat('en-DE').format(1234567.891)", "1.234.567,891"),
    ("new Intl.NumberFormat('en-SE').format(1234567.891)", "1\u00a0234\u00a0567,891"),
    (
        "new Intl.NumberFormat('en-KE', {style: 'currency', currency: 'KES'}).format(12.5)",
        "Ksh\u00a012.50",
    ),
    (
        "new Intl.NumberFormat('en-NG', {style: 'currency', currency: 'NGN'}).format(12.5)",
        "\u20a612.50",
    ),
    (
        f"[new Intl.DateTimeFormat('en-KE', {{timeZone: 'UTC', dateStyle: 'full'}}).format({D}),"
        f" {D}.toLocaleTimeString('en-KE', {{timeZone: 'UTC'}})]",
        ["Friday, 5 January 2024", "15:04:05"],
    ),
    (f"{D}.toLocaleDateString('en-SG', {{timeZone: 'UTC'}})", "05/01/2024"),
    (f"{D}.toLocaleDateString('en-HK', {{timeZone: 'UTC'}})", "5/1/2024"),
    (f"{D}.toLocaleString('en-DE', {{timeZone: 'UTC'}})", "05/01/2024, 15:04:05"),
    ("new Intl.RelativeTimeFormat('en-SG', {style: 'narrow'}).format(2, 'hour')", "in 2 hr"),
    ("new Intl.RelativeTimeFormat('en-SG', {style: 'short'}).format(-3, 'month')", "3 mth ago"),
    ("new Intl.ListFormat('en-KE').format(['a', 'b', 'c'])", "a, b and c"),
    ("new Intl.ListFormat('en-SG').format(['a', 'b', 'c'])", "a, b and c"),
    ("new Intl.DisplayNames('en-KE', {type: 'currency'}).of('USD')", "US Dollar"),
    ("new Intl.DisplayNames('en-SG', {type: 'region'}).of('US')", "United States"),
    (
        "['en-AU', 'en-KE', 'en-CH', 'en-ZW'].map((t) =>"
        " [new Intl.NumberFormat(t), new Intl.DateTimeFormat(t), new Intl.ListFormat(t),"
        "  new Intl.RelativeTimeFormat(t), new Intl.DisplayNames(t, {type: 'region'})]"
        " .map((f) => f.resolvedOptions().locale))",
        [[t] * 5 for t in ("en-AU", "en-KE", "en-CH", "en-ZW")],
    ),
]

# DisplayNames per base locale: (language 'de', region 'JP', currency 'EUR', script 'Latn')
DISPLAY_NAMES = {
    "de": ["Deutsch", "Japan", "Euro", "Lateinisch"],
    "fr": ["allemand", "Japon", "euro", "latin"],
    "es": ["alemán", "Japón", "euro", "latino"],
    "it": ["tedesco", "Giappone", "euro", "latino"],
    "pt": ["alemão", "Japão", "Euro", "latim"],
    "nl": ["Duits", "Japan", "Euro", "Latijns"],
    "ja": ["ドイツ語", "日本", "ユーロ", "ラテン文字"],
    "zh": ["德语", "日本", "欧元", "拉丁文"],
    "ko": ["독일어", "일본", "유로", "로마자"],
    "ru": ["немецкий", "Япония", "евро", "латиница"],
    "ar": ["الألمانية", "اليابان", "يورو", "اللاتينية"],
    "hi": ["जर्मन", "जापान", "यूरो", "लैटिन"],
    "tr": ["Almanca", "Japonya", "Euro", "Latin"],
    "pl": ["niemiecki", "Japonia", "euro", "łacińskie"],
}


@pytest.mark.parametrize(("expr", "want"), ENGLISH)
def test_every_regional_english_resolves_to_its_own_data(expr: str, want: object) -> None:
    r = run_code_sync(expr, kind="script")
    assert r.status == "success", r.error
    assert r.result == want


@pytest.mark.parametrize(("locale", "want"), sorted(DISPLAY_NAMES.items()))
def test_display_names_speak_each_shipped_base_locale(locale: str, want: list[str]) -> None:
    r = run_code_sync(
        "const dn = (type) => new Intl.DisplayNames(LOCALE, {type});"
        "[dn('language').of('de'), dn('region').of('JP'), dn('currency').of('EUR'),"
        " dn('script').of('Latn'), dn('language').resolvedOptions().locale]".replace(
            "LOCALE", repr(locale)
        ),
        kind="script",
    )
    assert r.status == "success", r.error
    assert r.result == [*want, locale]
