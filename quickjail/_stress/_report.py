"""What a stress run found: violations, per-case results, the report and progress events.

These are the values :func:`quickjail._stress.run_stress` returns and reports while it runs;
every phase builds them, so they sit apart from the phases. The report renders itself as a
plain-text summary table and as JUnit XML for CI.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "Phase",
    "PhaseSummary",
    "Progress",
    "StressReport",
    "TestCaseResult",
    "Violation",
    "ViolationKind",
]

Phase = Literal["corpus", "fuzz", "guest", "host"]
ViolationKind = Literal[
    "escape",
    "canary",
    "leak",
    "outcome",
    "host-exception",
    "time",
    "memory",
    "limits",
    "threads",
    "hang",
    "quota",
]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant.

    Attributes:
        phase: ``"corpus"``, ``"fuzz"``, ``"guest"`` or ``"host"``.
        case: The corpus case id, the fuzzed function (``imports.fs.readFile``), the
            compromised guest's move or ``"host-invariants"``.
        kind: What broke: ``escape``, ``canary``, ``leak``, ``outcome``, ``host-exception``,
            ``time``, ``memory``, ``limits``, ``threads``, ``hang`` or ``quota`` (a refused
            host call charged a counter or quota).
        message: What happened, in one or two sentences.
        example: The arguments of the fuzzed call that broke it (``repr``, truncated).
    """

    phase: Phase
    case: str
    kind: ViolationKind
    message: str
    example: str | None = None

    def __str__(self) -> str:
        text = f"[{self.phase}] {self.case}: {self.kind}: {self.message}"
        return f"{text}\n    arguments: {self.example}" if self.example else text


@dataclass(frozen=True, slots=True)
class TestCaseResult:
    """One corpus case, one fuzzed function, or the host check: its runs and violations."""

    __test__ = False  # not a pytest test class

    phase: Phase
    name: str
    group: str
    runs: int
    duration_s: float
    violations: tuple[Violation, ...] = ()
    skipped: str | None = None

    @property
    def passed(self) -> bool:
        """True when nothing broke and the case ran."""
        return not self.violations and self.skipped is None


@dataclass(frozen=True, slots=True)
class PhaseSummary:
    """One row of the summary table."""

    phase: Phase
    cases: int
    passed: int
    violations: int
    skipped: int


@dataclass(frozen=True, slots=True)
class StressReport:
    """Everything a stress run found.

    Attributes:
        cases: One entry per corpus case, per fuzzed function and for the host check.
        seed: The hypothesis seed (pass it again to repeat the fuzzing).
        examples: Generated examples per fuzzed function.
        timeout: The timeout each run had, in seconds.
        memory_limit_bytes: The guest memory limit of each run.
        functions: The bridged host functions that were fuzzed.
        roots: The :class:`bridge.ReadOnlyDir` roots found in the bridge.
        canary: Where the canary file was planted (``None`` if it could not be placed
            outside every root).
        duration_s: Wall time of the whole stress run.
    """

    cases: tuple[TestCaseResult, ...]
    seed: int
    examples: int
    timeout: float
    memory_limit_bytes: int
    functions: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    canary: str | None = None
    duration_s: float = 0.0

    @property
    def violations(self) -> list[Violation]:
        """Every violation, in the order found."""
        return [v for c in self.cases for v in c.violations]

    @property
    def ok(self) -> bool:
        """True when no invariant broke."""
        return not self.violations

    def summary(self) -> list[PhaseSummary]:
        """One row per phase: cases, passed, violations, skipped."""
        rows = []
        for phase in ("corpus", "fuzz", "guest", "host"):
            cases = [c for c in self.cases if c.phase == phase]
            rows.append(
                PhaseSummary(
                    phase,
                    len(cases),
                    sum(c.passed for c in cases),
                    sum(len(c.violations) for c in cases),
                    sum(c.skipped is not None for c in cases),
                )
            )
        return rows

    def format_table(self) -> str:
        """The summary as a plain-text table."""
        head = ("phase", "cases", "passed", "violations", "skipped")
        rows = [
            (r.phase, str(r.cases), str(r.passed), str(r.violations), str(r.skipped))
            for r in self.summary()
        ]
        widths = [max(len(x[i]) for x in (head, *rows)) for i in range(len(head))]
        lines = [
            "  ".join(
                h.ljust(w) if i == 0 else h.rjust(w)
                for i, (h, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in (head, *rows)
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise :class:`AssertionError` listing the violations, if there are any."""
        found = self.violations
        if found:
            listed = "\n".join(f"  {v}" for v in found)
            raise AssertionError(
                f"quickjail stress found {len(found)} violation(s) (seed {self.seed}):\n{listed}"
            )

    def to_junit_xml(self) -> bytes:
        """The report as JUnit XML: one testcase per corpus case and per fuzzed function."""
        root = ET.Element(
            "testsuites",
            name="quickjail stress",
            tests=str(len(self.cases)),
            failures=str(sum(not c.passed and c.skipped is None for c in self.cases)),
            time=f"{self.duration_s:.3f}",
        )
        for phase in ("corpus", "fuzz", "guest", "host"):
            cases = [c for c in self.cases if c.phase == phase]
            suite = ET.SubElement(
                root,
                "testsuite",
                name=f"quickjail.stress.{phase}",
                tests=str(len(cases)),
                failures=str(sum(bool(c.violations) for c in cases)),
                errors="0",
                skipped=str(sum(c.skipped is not None for c in cases)),
                time=f"{sum(c.duration_s for c in cases):.3f}",
            )
            if phase == "fuzz":
                props = ET.SubElement(suite, "properties")
                for name, value in (("seed", self.seed), ("examples", self.examples)):
                    ET.SubElement(props, "property", name=name, value=str(value))
            for case in cases:
                tc = ET.SubElement(
                    suite,
                    "testcase",
                    classname=case.group,
                    name=_xml_text(case.name),
                    time=f"{case.duration_s:.3f}",
                )
                if case.skipped is not None:
                    ET.SubElement(tc, "skipped", message=_xml_text(case.skipped))
                if case.violations:
                    kinds = sorted({v.kind for v in case.violations})
                    first = case.violations[0]
                    failure = ET.SubElement(
                        tc,
                        "failure",
                        type=",".join(kinds),
                        message=_xml_text(
                            f"{len(case.violations)} violation(s): {first.kind}: {first.message}"
                        ),
                    )
                    failure.text = _xml_text("\n".join(str(v) for v in case.violations))
        ET.indent(root)
        return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))

    def write_junit(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_junit_xml` to ``path``."""
        Path(path).write_bytes(self.to_junit_xml())


def _xml_text(text: str) -> str:
    """Keep only characters XML 1.0 allows; escape the others as ``\\uXXXX``."""
    out = []
    for ch in text:
        o = ord(ch)
        if (
            o in (0x9, 0xA, 0xD)
            or 0x20 <= o <= 0xD7FF
            or 0xE000 <= o <= 0xFFFD
            or 0x10000 <= o <= 0x10FFFF
        ):
            out.append(ch)
        else:
            out.append(f"\\u{o:04x}")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Progress:
    """A progress event: a phase starts (``done == 0``), a step ends, or a phase ends.

    Attributes:
        phase: The running phase.
        event: ``"start"``, ``"step"`` or ``"end"``.
        done: Steps finished in this phase (runs of the sandbox).
        total: Steps planned in this phase (an estimate for the fuzz phase).
        case: The case or function being run.
        violations: Violations found so far in the whole stress run.
    """

    phase: Phase
    event: Literal["start", "step", "end"]
    done: int
    total: int
    case: str = ""
    violations: int = 0
