"""The corpus phase: every hostile program of :data:`quickjail._corpus.CORPUS`, run once.

The programs themselves live in :mod:`quickjail._corpus`; this module gives each one a
prelude naming the bridge's modules, globals, functions and the canary, runs it, and adds
the corpus's own checks to the runner's: the status must be one the case expects, and the
escape marker must never come out.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from quickjail._corpus import CORPUS, ESCAPE_MARKER, CorpusCase
from quickjail._stress._bridge import Bridge
from quickjail._stress._canary import Canary
from quickjail._stress._report import Progress, TestCaseResult, Violation
from quickjail._stress._runner import Runner
from quickjail._stress._texts import result_texts, show

__all__ = ["run_corpus"]


def _prelude(case: CorpusCase, b: Bridge, canary: Canary) -> str:
    """The ``__QJ_*`` constants a corpus program may use to find the bridge and the canary."""
    lines = [
        f"const __QJ_MODULES = {json.dumps(sorted(b.imports))};",
        f"const __QJ_GLOBALS = {json.dumps(sorted(b.globals))};",
        f"const __QJ_CANARY = {json.dumps(canary.file or '/nonexistent/CANARY')};",
    ]
    if case.uses_bridge:
        modules = sorted({t.module for t in b.targets if t.module is not None})
        alias = {m: f"__qj_m{i}" for i, m in enumerate(modules)}
        lines += [f"import * as {alias[m]} from {json.dumps(m)};" for m in modules]
        entries = []
        for t in b.targets:
            props = "".join(f"[{json.dumps(k)}]" for k in t.keys)
            base = "globalThis" if t.module is None else alias[t.module]
            entries.append(f"[{json.dumps(t.label)}, {base}{props}]")
        lines.append(f"const __QJ_FNS = [{', '.join(entries)}];")
    return "\n".join(lines) + "\n"


def run_corpus(
    runner: Runner, notify: Callable[[Progress], None], count: Callable[[], int]
) -> list[TestCaseResult]:
    """Run every corpus program once; one result per case.

    Args:
        runner: Runs the programs and checks the shared invariants.
        notify: Receives the phase's progress events.
        count: Violations found so far in the whole stress run (for the events).

    Returns:
        One :class:`TestCaseResult` per corpus case, in corpus order.
    """
    results: list[TestCaseResult] = []
    total = len(CORPUS)
    notify(Progress("corpus", "start", 0, total, violations=count()))
    for i, case in enumerate(CORPUS):
        group = f"quickjail.stress.corpus.{case.category}"
        if runner.hung:
            results.append(
                TestCaseResult("corpus", case.id, group, 0, 0.0, skipped="a previous run hung")
            )
            continue
        source = _prelude(case, runner.bridge, runner.canary) + case.source
        outcome = runner.run(source)
        runner.sample_rss(f"corpus {case.id}")
        violations = runner.check("corpus", case.id, outcome, source)
        r = outcome.result
        if outcome.refused is not None:
            violations.append(
                Violation(
                    "corpus", case.id, "outcome", f"run_code refused the program: {outcome.refused}"
                )
            )
        if r is not None:
            if r.status not in case.expect:
                detail = r.reason if r.status == "terminated" else (str(r.error) if r.error else "")
                violations.append(
                    Violation(
                        "corpus",
                        case.id,
                        "outcome",
                        f"ended with status {r.status!r} ({show(detail)}), expected "
                        f"{' or '.join(sorted(case.expect))}",
                    )
                )
            marks = sorted({t for t in result_texts(r) if ESCAPE_MARKER in t})
            if marks:
                violations.append(
                    Violation("corpus", case.id, "escape", f"the program escaped: {show(marks[0])}")
                )
        results.append(TestCaseResult("corpus", case.id, group, 1, outcome.wall, tuple(violations)))
        notify(Progress("corpus", "step", i + 1, total, case.id, count()))
    notify(Progress("corpus", "end", total, total, violations=count()))
    return results
