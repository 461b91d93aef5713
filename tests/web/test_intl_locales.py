"""Intl in the shipped locales besides English, through the public API.

Expected values are Node 20's (full ICU), taken with ``node -e``; the formatjs polyfills give
the same for each (with their own CLDR data). One known difference: a regional locale that is
not shipped resolves to its language (``de-AT`` gives ``resolvedOptions().locale == "de"``,
Node ``"de-AT"``), with the language's formats.
"""

from __future__ import annotations

import pytest

from quickjail import run_code_sync

# (expression, Node 20's value)
LOCALES: list[tuple[str, str]] = [
    ("(1234567.891).toLocaleString('de-DE')", "1.234.567,891"),
    ("(1234567.891).toLocaleString('fr-FR')", "1\u202f234\u202f567,891"),
    (
        "new Intl.NumberFormat('ja-JP', {style: 'currency', currency: 'JPY'}).format(5000)",
        "\uffe55,000",
    ),
    ("(1234567.891).toLocaleString('ar')", "1,234,567.891"),
    (
        "new Intl.NumberFormat('en-GB', {style: 'currency', currency: 'GBP'}).format(99.5)",
        "\u00a399.50",
    ),
    ("(1234.5).toLocaleString('ko-KR', {style: 'currency', currency: 'KRW'})", "\u20a91,235"),
    ("new Intl.NumberFormat('zh-CN', {notation: 'compact'}).format(123456789)", "1.2\u4ebf"),
    ("(1234567.5).toLocaleString('hi-IN')", "12,34,567.5"),
    ("(1234567.5).toLocaleString('ru')", "1\u00a0234\u00a0567,5"),
    ("(1234.5).toLocaleString('es')", "1234,5"),
    ("(12345.5).toLocaleString('es')", "12.345,5"),
    ("(1234.5).toLocaleString('tr', {style: 'percent'})", "%123.450"),
    ("(1234.5).toLocaleString('nl', {style: 'currency', currency: 'EUR'})", "\u20ac\u00a01.234,50"),
    ("(1234.5).toLocaleString('it')", "1234,5"),
    ("(1234.5).toLocaleString('pt-BR', {style: 'currency', currency: 'BRL'})", "R$\u00a01.234,50"),
    ("(0.5).toLocaleString('pl', {style: 'percent'})", "50%"),
    (
        "new Intl.PluralRules('ar').select(3) + new Intl.PluralRules('ru').select(5)"
        " + new Intl.PluralRules('pl').select(22)",
        "fewmanyfew",
    ),
    ("[1234.5, null, 7n].toLocaleString('de')", "1.234,5,,7"),
    (
        "(1234567.891).toLocaleString('en-AU', {style: 'currency', currency: 'AUD'})",
        "$1,234,567.89",
    ),
    (
        "(1234567.891).toLocaleString('en-CA', {style: 'currency', currency: 'USD'})",
        "US$1,234,567.89",
    ),
]


@pytest.mark.parametrize(("expr", "want"), LOCALES)
def test_shipped_locales_format_as_node_formats_them(expr: str, want: str) -> None:
    r = run_code_sync(expr, kind="script")
    assert r.status == "success", r.error
    assert r.result == want


def test_a_regional_locale_that_is_not_shipped_uses_its_language() -> None:
    r = run_code_sync(
        "const nf = new Intl.NumberFormat('de-AT');"
        "[nf.resolvedOptions().locale, nf.format(1234.5),"
        " Intl.NumberFormat.supportedLocalesOf(['de-AT', 'sw'])]",
        kind="script",
    )
    assert r.status == "success", r.error
    assert r.result == ["de", "1.234,5", ["de-AT"]]
