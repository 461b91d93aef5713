"""Fixtures of the isolation suite and the summary of its case tables.

The summary (printed at the end of any pytest run that collected isolation cases) counts the
cases per category (the test module) and per expected outcome class (``refused``: the API or
the host-call handler refused what it was given), and how many are strict xfails documenting a
library bug.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _isolation import KINDS, Attack, Case, Ctx

from quickjail.bridge import run_code_sync

_COUNTS: Counter[tuple[str, str]] = Counter()
_BUGS: Counter[str] = Counter()
_CATEGORIES: list[str] = []


@pytest.fixture(scope="session", autouse=True)
def _warm_engine() -> None:
    """Load the engine once, so the first case's RSS and wall time measure the case only."""
    r = run_code_sync("export default 1", language="javascript")
    assert r.status == "success"


@pytest.fixture(scope="session")
def capability_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for ``bridge.ReadOnlyDir`` with a file, a subdirectory and an escape link."""
    root = tmp_path_factory.mktemp("isolation-root")
    (root / "notes.txt").write_text("hello\n")
    (root / "sub").mkdir()
    (root / "sub" / "inner.txt").write_text("inner\n")
    (root / "escape").symlink_to("/etc/passwd")
    return root


@pytest.fixture
def ctx(capability_root: Path) -> Iterator[Ctx]:
    yield Ctx(root=capability_root)


def _category(item: pytest.Item) -> str:
    name = item.path.stem
    return name.removeprefix("test_")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if item.path.resolve().parent != here:
            continue
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        case = params.get("case", params.get("attack"))
        if not isinstance(case, Case | Attack):
            continue
        cat = _category(item)
        if cat not in _CATEGORIES:
            _CATEGORIES.append(cat)
        _COUNTS[(cat, case.expect)] += 1
        if isinstance(case, Case) and case.bug is not None:
            _BUGS[cat] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _COUNTS:
        return
    kinds = list(KINDS)
    tr = terminalreporter
    tr.section("isolation cases per category and expected outcome")
    head = f"{'category':<18}" + "".join(f"{k:>11}" for k in kinds) + f"{'total':>8}{'xfail':>7}"
    tr.write_line(head)
    totals: Counter[str] = Counter()
    for cat in _CATEGORIES:
        row = [_COUNTS[(cat, k)] for k in kinds]
        for k, n in zip(kinds, row, strict=True):
            totals[k] += n
        tr.write_line(
            f"{cat:<18}" + "".join(f"{n:>11}" for n in row) + f"{sum(row):>8}{_BUGS[cat]:>7}"
        )
    tr.write_line(
        f"{'all':<18}"
        + "".join(f"{totals[k]:>11}" for k in kinds)
        + f"{sum(totals.values()):>8}{sum(_BUGS.values()):>7}"
    )
