"""``quickjail stress`` catches an unsafe bridge, passes the project's ReadOnlyDir, and the
``quickjail_stress`` pytest fixture does the same from a test suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from quickjail import _stress, bridge
from quickjail._corpus import CORPUS, ESCAPE_MARKER
from quickjail._stress import _guest
from quickjail._stress._bridge import analyse_bridge, readonlydir_root
from quickjail._stress._canary import plant_canary
from quickjail._stress._guest import MOVE_RSS_MARGIN, MOVES, make_run, run_guest
from quickjail._stress._runner import Runner
from quickjail.sandbox._abi import OP_TIMERS
from quickjail.sandbox._run import Run

ROOT = Path(__file__).resolve().parent.parent
# small and fast: the corpus's CPU hogs each take the whole timeout; 1 s still leaves the
# programs that must end by themselves (e.g. parsing a million brackets) ~10x their time on a
# loaded machine
FAST = ["--examples", "8", "--timeout", "1.0", "--seed", "1234"]


def _stress_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "quickjail", "stress", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _junit_failures(path: Path) -> dict[str, str]:
    tree = ET.parse(path)
    return {
        case.get("name", ""): (case.find("failure").text or "")  # type: ignore[union-attr]
        for case in tree.iter("testcase")
        if case.find("failure") is not None
    }


@pytest.mark.timeout(120)
def test_stress_fails_an_unconfined_read_file_bridge(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    proc = _stress_cli("--bridge", "tests.stress_bridges:unsafe", "--junit", str(junit), *FAST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "imports.fs.readFile: canary:" in proc.stdout
    assert "--seed 1234" in proc.stdout  # how to repeat the run
    failures = _junit_failures(junit)
    assert list(failures) == ["imports.fs.readFile"]
    assert "the canary's secret text reached the sandbox" in failures["imports.fs.readFile"]
    suites = {s.get("name"): s for s in ET.parse(junit).iter("testsuite")}
    assert suites["quickjail.stress.corpus"].get("tests") == str(len(CORPUS))
    assert suites["quickjail.stress.fuzz"].get("failures") == "1"


@pytest.mark.timeout(120)
def test_stress_passes_the_project_read_only_dir(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    proc = _stress_cli(
        "--bridge", "tests.stress_bridges:readonly", "--junit", str(junit), "-q", *FAST
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no violations" in proc.stdout
    assert proc.stderr == ""  # -q: no progress
    assert _junit_failures(junit) == {}
    names = {case.get("name") for case in ET.parse(junit).iter("testcase")}
    assert {
        "imports.fs.readFile",
        "imports.fs.readdir",
        "imports.fs.stat",
        "host-invariants",
    } <= names


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.no_such_module:make", "cannot import 'tests.no_such_module'"),
        ("tests.stress_bridges:missing", "has no attribute 'missing'"),
        ("tests.stress_bridges", "is not MODULE:CALLABLE"),
        ("tests.stress_bridges:__all__", "it must return a dict"),
    ],
)
def test_stress_exits_2_when_the_bridge_cannot_be_used(spec: str, message: str) -> None:
    proc = _stress_cli("--bridge", spec)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"imports": {}, "report": print}, "unknown bridge configuration key"),
        ({"imports": {"fs": 5}}, "must be a mapping"),
        ({"globals": {"x": 1}, "output_limits": {"max_logs": -1}}, "'output_limits'"),
        ({"globals": {"x": 1}, "quotas": {"max_host_calls": -1}}, "'quotas'"),
        ({"globals": {}, "timeout": -1}, "timeout"),
    ],
)
def test_stress_refuses_unusable_configurations(config: dict[str, object], message: str) -> None:
    with pytest.raises(_stress.StressConfigError, match=message):
        _stress.run_stress(config)


def test_canary_is_planted_outside_every_root() -> None:
    import tempfile

    canary = plant_canary([tempfile.gettempdir()])
    try:
        assert canary.file is not None
        assert not canary.file.startswith(os.path.realpath(tempfile.gettempdir()) + os.sep)
        assert Path(canary.file).read_text() == canary.secret
        assert canary.file in canary.tricks
        assert not any(canary.secret in trick for trick in canary.tricks)
    finally:
        canary.close()
    assert not Path(canary.file).exists()


def test_canary_is_planted_outside_a_root_holding_tmp_home_and_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a CI job whose temporary directory, HOME and checkout all live under one bridged root
    import tempfile

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    canary = plant_canary([str(tmp_path)])
    try:
        assert canary.file is not None
        assert not canary.file.startswith(os.path.realpath(tmp_path) + os.sep)
        assert Path(canary.file).read_text() == canary.secret
    finally:
        canary.close()


def test_corpus_table_is_well_formed() -> None:
    assert len(CORPUS) >= 40
    assert len({c.id for c in CORPUS}) == len(CORPUS)
    assert {c.category for c in CORPUS} == {
        "escape",
        "memory",
        "cpu",
        "recursion",
        "flood",
        "leak",
        "host-work",
    }
    for case in CORPUS:
        assert case.expect, case.id
        assert "success" not in case.expect or case.category not in ("memory", "cpu"), case.id
        if case.category == "escape":
            assert (
                ESCAPE_MARKER in case.source or "forged" in case.id or case.id == "transfer-hooks"
            ), case.id


def test_read_only_dir_root_is_found(tmp_path: Path) -> None:
    with bridge.ReadOnlyDir(tmp_path) as fs:
        assert readonlydir_root(fs) == os.path.realpath(tmp_path)
    assert readonlydir_root(fs) is None  # closed


def test_report_formats_and_asserts() -> None:
    violation = _stress.Violation("fuzz", "globals.f", "canary", "secret\x00read", "['x']")
    report = _stress.StressReport(
        cases=(
            _stress.TestCaseResult(
                "fuzz", "globals.f", "quickjail.stress.fuzz", 3, 0.1, (violation,)
            ),
        ),
        seed=7,
        examples=3,
        timeout=1.0,
        memory_limit_bytes=2**25,
    )
    assert not report.ok
    with pytest.raises(AssertionError, match=r"1 violation\(s\) \(seed 7\)"):
        report.assert_ok()
    assert "fuzz        1       0           1" in report.format_table()
    xml = report.to_junit_xml()
    assert b"\\u0000" in xml  # characters XML cannot hold are escaped
    ET.fromstring(xml)


@pytest.mark.timeout(120)
def test_pytest_fixture_reports_violations(tmp_path: Path) -> None:
    (tmp_path / "test_user_bridge.py").write_text(
        textwrap.dedent("""
        import pytest
        from tests.stress_bridges import unsafe

        def test_unsafe_bridge(quickjail_stress):
            report = quickjail_stress(unsafe(), examples=3, seed=5, timeout=1.0)
            assert [v.kind for v in report.violations][:1] == ["canary"]
            with pytest.raises(AssertionError, match="imports.fs.readFile: canary"):
                report.assert_ok()
    """)
    )
    env = {
        **os.environ,
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "quickjail.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-q",
            str(tmp_path / "test_user_bridge.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


@pytest.fixture
def guest_runner() -> Iterator[Runner]:
    """A stress runner with the project's ReadOnlyDir bridge, as :func:`run_stress` makes it."""
    from tests.stress_bridges import readonly

    b = analyse_bridge(readonly())
    canary = plant_canary(b.roots)
    try:
        yield Runner(b, 1.0, 32 * 2**20, canary)
    finally:
        canary.close()


def _play_guest(runner: Runner, new_run: Callable[[Runner], Run] = make_run) -> list[Any]:
    return run_guest(runner, lambda _event: None, lambda: 0, new_run=new_run)


def test_the_compromised_guest_phase_passes_the_hosts_own_handler(guest_runner: Runner) -> None:
    results = _play_guest(guest_runner)
    assert len(results) == len(MOVES) + 1  # every move, and the compile instance
    assert [str(v) for r in results for v in r.violations] == []
    assert all(r.runs == 1 for r in results)
    assert {
        "span-report",
        "fetch-twice",
        "malformed-result-blob-reused",
        "sleep-out-of-range",
        "timers-lowered",
    } <= {r.name for r in results}


def _broken(how: str, release: threading.Event, hoard: list[bytearray]) -> Any:
    """A run whose host-call handler breaks one invariant of the guest phase."""

    def new_run(runner: Runner) -> Run:
        r = make_run(runner)
        honest = type(r).on_host

        class Broken(type(r)):  # type: ignore[misc]
            __slots__ = ()  # a Run keeps its state in slots: its class is swapped, not a method

            def on_host(
                self, op: int, a: int, b: int, c: int, d: int, view: memoryview | None
            ) -> Any:
                if how == "raises":
                    raise LookupError("a host bug")
                if how == "charges":
                    self._bytes_out += 1  # charged whatever the answer
                if how == "hangs":
                    release.wait(60)
                if how == "grows" and not hoard:
                    hoard.append(bytearray(b"\x01" * (MOVE_RSS_MARGIN + 32 * 2**20)))
                if how == "overwrites" and op == OP_TIMERS:  # a second count replaces the first
                    self._timers_fired, self._timers_cancelled = max(a, 0), max(b, 0)
                    return 0
                rc = honest(self, op, a, b, c, d, view)
                return 0 if how == "accepts" else rc

        r.__class__ = Broken
        return r

    return new_run


@pytest.mark.parametrize(
    ("how", "kind"),
    [
        ("raises", "host-exception"),
        ("charges", "quota"),
        ("accepts", "outcome"),
        ("hangs", "hang"),
        ("grows", "memory"),
        ("overwrites", "quota"),
    ],
)
def test_the_compromised_guest_phase_reports_a_broken_handler(
    guest_runner: Runner, monkeypatch: pytest.MonkeyPatch, how: str, kind: str
) -> None:
    monkeypatch.setattr(_guest, "MOVE_TIMEOUT", 0.5)
    release = threading.Event()
    hoard: list[bytearray] = []
    try:
        results = _play_guest(guest_runner, _broken(how, release, hoard))
    finally:
        release.set()
        hoard.clear()
    kinds = {v.kind for r in results for v in r.violations}
    assert kind in kinds, [str(v) for r in results for v in r.violations][:5]
    assert all(v.phase == "guest" for r in results for v in r.violations)
    if how == "hangs":  # the first hang ends the phase: the other moves are skipped
        assert sum(r.skipped is not None for r in results) == len(results) - 1


@pytest.mark.timeout(180)
def test_stress_on_workers_passes_the_project_read_only_dir(tmp_path: Path) -> None:
    """``--workers``: the corpus and the fuzzer run on a process pool, with the same verdict."""
    junit = tmp_path / "report.xml"
    proc = _stress_cli(
        "--bridge",
        "tests.stress_bridges:readonly",
        "--junit",
        str(junit),
        "-q",
        "--workers",
        "1",
        *FAST,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no violations" in proc.stdout
    assert _junit_failures(junit) == {}


@pytest.mark.timeout(180)
def test_the_stress_fixture_can_target_a_process_pool(tmp_path: Path) -> None:
    """An unconfined readFile is caught on a pool as in-process: the canary is the host's."""
    from quickjail.executors import ProcessPool
    from quickjail.pytest_plugin import check
    from tests.stress_bridges import unsafe

    with ProcessPool(workers=1) as pool:
        report = check(unsafe(), examples=8, seed=1234, timeout=1.0, executor=pool)
        assert pool.pids  # the runs went to the pool's worker
    assert [v.kind for v in report.violations if v.kind == "canary"], report
