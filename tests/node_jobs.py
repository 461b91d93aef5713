"""Running programs in Node with ``node_runner.js``: the rates scripts' Node column
(``tests/wpt/rates.py`` for WPT files, ``tests/intl402/rates.py`` for test262 files)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["run_node_jobs"]

NODE_RUNNER = Path(__file__).resolve().parent / "wpt" / "node_runner.js"
_MARK = "@@wpt@@"  # node_runner.js's answer lines


def run_node_jobs(programs: list[tuple[str, str, float]], work: Path) -> dict[str, dict[str, Any]]:
    """Run each ``(id, program, timeout in seconds)`` in a fresh Node worker thread (two at
    once) and return node_runner.js's answer per id: ``value``, or ``error`` and ``name``, and
    ``ms``. An id Node did not answer (it crashed or timed out as a whole) gets an ``error``
    saying so. ``work`` is a scratch folder for the programs."""
    node = shutil.which("node")
    if node is None:
        raise SystemExit("rates.py needs node on PATH")
    jobs = []
    for i, (job_id, text, timeout) in enumerate(programs):
        path = work / f"{i}.js"
        path.write_text(text, encoding="utf-8")
        jobs.append({"id": job_id, "path": str(path), "timeout_ms": timeout * 1000})
    (work / "jobs.json").write_text(json.dumps(jobs))
    proc = subprocess.run(
        [node, str(NODE_RUNNER), str(work / "jobs.json")],
        capture_output=True,
        text=True,
        timeout=sum(timeout for _, _, timeout in programs) + 60,
    )
    answers: dict[str, dict[str, Any]] = {}
    for line in proc.stdout.split("\n"):  # the programs' own console output is there too
        if line.startswith(_MARK):
            answer = json.loads(line[len(_MARK) :])
            answers[answer["id"]] = answer
    missing = {"error": f"no answer (node exited {proc.returncode})"}
    return {job_id: answers.get(job_id, missing) for job_id, _, _ in programs}
