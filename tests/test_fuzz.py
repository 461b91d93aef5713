"""The fuzzing harness (fuzz/): a short smoke run finds nothing, and a crash fails the run.

The smoke is bounded by counts (cases and heap ops), not time. It needs gcc (the ASan build)
and the pinned zig (the heap build); without them it fails loudly rather than skipping.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import build, gen, run

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(1800)  # the first build compiles QuickJS with ASan: minutes on 2 cores
def test_a_short_fuzz_run_of_the_guest_c_finds_no_crash(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "fuzz", "--iterations", "120", "--seed", "28"]
    cmd += ["--heap-every", "30", "--heap-ops", "40000", "--findings", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=os.environ.copy())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cases=120 heap_runs=4 heap_ops=160000" in proc.stdout
    assert "crashes=0" in proc.stdout


class _Malformed(gen.Case):
    def encode(self) -> bytes:
        # a record length past the end of the case: the harness aborts, as on any finding
        return struct.pack("<I", 1 << 20) + b"x"


@pytest.mark.timeout(1800)
def test_a_crash_the_harness_finds_fails_the_run_and_is_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gen, "generate", lambda seed: _Malformed(seed=seed))
    argv = ["--iterations", "2", "--seed", "1", "--heap-every", "1000"]
    assert run.main([*argv, "--findings", str(tmp_path)]) == 1
    (folder,) = tmp_path.iterdir()
    assert "qjfuzz: malformed case" in (folder / "report.txt").read_text()
    assert (folder / "case.bin").read_bytes().startswith(struct.pack("<I", 1 << 20))


def _run_one(case: gen.Case, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """One case in qjfuzz's single-case mode, each crossing told on stderr."""
    exe = build.build_harness()
    path = tmp_path / "case.bin"
    path.write_bytes(case.encode())
    env = {**os.environ, **run.ENV, "QJFUZZ_VERBOSE": "1"}
    return subprocess.run([str(exe), str(path)], capture_output=True, text=True, env=env)


@pytest.mark.timeout(1800)
def test_a_host_function_marker_with_an_id_out_of_range_stays_a_plain_object(
    tmp_path: Path,
) -> None:
    # found by the fuzzer: the id was shifted into the function's magic, undefined for a
    # negative id and wrapping for a large one (2**30 + 1 became function 1)
    case = gen.Case(seed=1)
    case.globals_value = {
        "neg": {gen.FN_KEY: [-1, 0, "neg"]},
        "big": {gen.FN_KEY: [2**30 + 1, 0, "big"]},
        "frac": {gen.FN_KEY: [1.5, 0, "frac"]},
        "ok": {gen.FN_KEY: [5, 0, "ok"]},
    }
    case.result = "[typeof neg, typeof big, typeof frac, typeof ok]"
    proc = _run_one(case, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '["object","object","object","function"]' in proc.stderr
    assert "op 6 " not in proc.stderr  # no host call went out


@pytest.mark.timeout(1800)
def test_a_calloc_whose_product_wraps_is_refused_and_not_taken_for_a_small_request() -> None:
    # found by the fuzzer, in the harness: calloc(32, 268435508) was rightly refused, but the
    # shadow model took the wrapped product (1664) for a small request that failed
    exe = build.build_heap()
    proc = subprocess.run(
        [str(exe), "696386982136", "20000", "128"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
