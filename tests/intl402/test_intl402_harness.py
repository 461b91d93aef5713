"""The test262 runner itself, on files of our own under the pinned import's root ``shell.js``:
what passes, what fails and why, and that frontmatter (strictness, negative, async, raw,
features, includes) is honoured. No ``intl402`` file runs here (``test_intl402.py`` runs them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import t262_expected
import t262_harness
import t262_source
from t262_harness import FileResult, discover, locale_literals, parse_file, run_file

_FILES = {
    "intl402/d/shell.js": "// GENERATED\n// file: helper.js\nfunction helped() { return 1; }\n",
    "intl402/d/passes.js": "/*---\nincludes: [helper.js]\n---*/\n"
    "assert.sameValue(helped(), 1);\nreportCompare(0, 0);\n",
    "intl402/d/fails.js": "assert.sameValue(1, 2, 'one is two');\nreportCompare(0, 0);\n",
    "intl402/d/stops-early.js": "assert.sameValue(1, 1);\n",
    "intl402/d/reports-failure.js": "reportFailure('told');\nreportCompare(0, 0);\n",
    "intl402/d/strict.js": "/*---\nflags: [onlyStrict]\n---*/\n"
    "assert.sameValue((function () { return this; })(), undefined);\nreportCompare(0, 0);\n",
    "intl402/d/sloppy.js": "/*---\nflags: [noStrict]\n---*/\n"
    "assert.sameValue((function () { return this; })(), globalThis);\nreportCompare(0, 0);\n",
    "intl402/d/default-sloppy.js": "with ({}) {}\nreportCompare(0, 0);\n",
    "intl402/d/strict-variant.js": "// |reftest| skip-if(!this.Intl)\n'use strict';\n"
    "assert.sameValue((function () { return this; })(), undefined);\nreportCompare(0, 0);\n",
    "intl402/d/negative-parse.js": "/*---\nnegative:\n  phase: parse\n  type: SyntaxError\n"
    "---*/\n$DONOTEVALUATE();\nvar x = ;\n",
    "intl402/d/negative-runtime.js": "/*---\nnegative:\n  phase: runtime\n"
    "  type: Test262Error\n---*/\nthrow new Test262Error('expected');\n",
    "intl402/d/negative-wrong-type.js": "/*---\nnegative:\n  phase: runtime\n"
    "  type: SyntaxError\n---*/\nnull.x;\n",
    "intl402/d/negative-nothing.js": "/*---\nnegative:\n  phase: runtime\n"
    "  type: TypeError\n---*/\nvar fine = 1;\n",
    "intl402/d/async-ok.js": "/*---\nflags: [async]\n---*/\n"
    "Promise.resolve().then(() => assert.sameValue(helped(), 1)).then($DONE, $DONE);\n",
    "intl402/d/async-fails.js": "/*---\nflags: [async]\n---*/\n"
    "Promise.resolve().then(() => { throw new Test262Error('late'); }).then($DONE, $DONE);\n",
    "intl402/d/async-never.js": "/*---\nflags: [async]\n---*/\nnew Promise(() => {});\n",
    "intl402/d/raw.js": "/*---\nflags: [raw]\n---*/\n"
    "if (typeof assert !== 'undefined') throw new Error('the harness ran');\n",
    "intl402/d/spins.js": "for (;;) {}\nreportCompare(0, 0);\n",
    "intl402/d/html-dda.js": "$262.IsHTMLDDA;\nreportCompare(0, 0);\n",
    "intl402/d/temporal.js": "/*---\nfeatures: [Temporal, BigInt]\n---*/\nreportCompare(0, 0);\n",
    "intl402/d/module.js": "/*---\nflags: [module]\n---*/\nexport {};\n",
    "intl402/d/missing-include.js": "/*---\nincludes: [nowhere.js]\n---*/\nreportCompare(0, 0);\n",
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree of our own files under the pinned import's root shell.js (test262's assert.js,
    sta.js and SpiderMonkey's test262-host.js)."""
    root = tmp_path_factory.mktemp("test262")
    shutil.copy(t262_source.t262_root() / "shell.js", root / "shell.js")
    for name, text in _FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _run(root: Path, name: str) -> FileResult:
    return run_file(root, parse_file(root, f"intl402/d/{name}"))


@pytest.mark.parametrize(
    "name",
    [
        "passes.js",
        "strict.js",
        "sloppy.js",
        "default-sloppy.js",
        "strict-variant.js",
        "negative-parse.js",
        "negative-runtime.js",
        "async-ok.js",
        "raw.js",
    ],
)
def test_a_file_that_meets_its_frontmatter_passes(root: Path, name: str) -> None:
    result = _run(root, name)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("fails.js", "one is two Expected SameValue(«1», «2»)"),
        ("stops-early.js", "the closing reportCompare was not reached"),
        ("reports-failure.js", "told"),
        ("negative-wrong-type.js", "expected SyntaxError, got TypeError"),
        ("negative-nothing.js", "expected TypeError, nothing was thrown"),
        ("async-fails.js", "late"),
        ("html-dda.js", "no [[IsHTMLDDA]] object in quickjail"),
    ],
)
def test_a_file_that_does_not_fails_saying_why(root: Path, name: str, why: str) -> None:
    result = _run(root, name)
    assert not result.passed
    assert why in result.message, result.message


def test_an_async_file_that_never_calls_done_fails_within_its_budget(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(t262_harness, "ASYNC_BUDGET_S", 0.5)
    result = _run(root, "async-never.js")
    assert not result.passed and "$DONE called 0 times" in result.message, result.message


def test_a_file_that_spins_fails_when_its_fuel_runs_out(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(t262_harness, "FUEL", 50_000_000)
    result = _run(root, "spins.js")
    assert not result.passed and "fuel" in result.message, result.message


def test_files_not_run_are_named_with_the_reason(root: Path) -> None:
    runs, not_run = discover(root)
    assert {"temporal.js", "module.js", "missing-include.js"} == {
        p.rsplit("/", 1)[1] for p in not_run
    }
    assert not_run["intl402/d/temporal.js"].startswith("Temporal: QuickJS-ng has no Temporal")
    assert "nowhere.js" in not_run["intl402/d/missing-include.js"]
    assert "passes.js" in {f.path.rsplit("/", 1)[1] for f in runs}


def test_the_locales_a_file_names_are_its_tag_shaped_literals() -> None:
    source = """/*---
description: "fr-CA" in the frontmatter does not count
---*/
new Intl.NumberFormat(["de-DE", 'ja', "zh_Hant"], {style: "unit", unit: "day"});
new Intl.Locale("en", {nu: "latn", "ca": "gregory", currency: "USD"});
Intl.getCanonicalLocales("th-u-nu-thai");
"""
    assert locale_literals(source) == ("de-DE", "ja", "zh-Hant", "en", "th-u-nu-thai")


def test_a_file_is_shipped_only_when_every_locale_it_names_is_shipped(root: Path) -> None:
    file = parse_file(root, "intl402/d/passes.js")
    assert file.locales == () and file.shipped_only
    shipped = t262_harness.Test262File(
        "intl402/x.js", frozenset(), (), (), None, False, ("de-DE", "zh-Hant-TW", "und", "EN")
    )
    assert shipped.shipped_only
    assert not shipped.__class__(**{**shipped.__dict__, "locales": ("en", "th")}).shipped_only


def test_the_expected_failures_check_fails_both_ways(root: Path) -> None:
    def result(name: str, passed: bool) -> FileResult:
        return FileResult(parse_file(root, f"intl402/d/{name}"), passed, "" if passed else "x")

    results = [result("passes.js", True), result("fails.js", False), result("raw.js", True)]
    expected = {"intl402/d/fails.js": "x", "intl402/d/raw.js": "was failing"}
    assert t262_expected.check(results, expected) == [
        f"intl402/d/raw.js: passes now: delete its line in {t262_expected.EXPECTED.name}"
    ]
    problems = t262_expected.check([result("passes.js", False)], {})
    assert problems == ["intl402/d/passes.js: fails, not expected: x"]
    stale = t262_expected.stale({"intl402/d/fails.js"}, {"intl402/d/gone.js": "x"}, "intl402/d")
    assert stale and "gone.js: no such file is run any more" in stale[0]
