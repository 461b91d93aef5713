"""A RayExecutor that starts Ray itself (``init=``) keeps it alive as long as the executor.

Ray's processes die with the *thread* that called ``ray.init`` (Linux's parent-death signal
follows the creating thread), so an executor that started Ray on a passing worker thread lost
its cluster when that thread ended, and the driver then ended the caller's whole process a
minute later. The README's example runs here in a fresh process of its own (its Ray must not
meet this suite's), which keeps its executor open past that minute and runs again.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

PAST_THE_DRIVER_TIMEOUT = 90  # seconds: Ray's driver gives up on a dead GCS after 60 s

PROGRAM = textwrap.dedent(
    """
    import os, sys, threading, time

    import psutil

    from quickjail import bridge
    from quickjail.executors import RayExecutor

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    init = {"num_cpus": 1, "object_store_memory": 80 * 2**20, "include_dashboard": False}
    with RayExecutor(actors=1, concurrency=2, init=init) as ray_executor:
        result = bridge.run_code_sync("export default 6 * 7", executor=ray_executor)
        print("first", result.status, result.result, flush=True)
        ray_processes = [
            p for p in psutil.Process().children(recursive=True)
            if any(name in p.name() for name in ("gcs_server", "raylet"))
        ]
        print("cluster", len(ray_processes), flush=True)
        start = time.monotonic()
        # the threads that served the first run (anyio's idle after 10 s) end meanwhile
        while time.monotonic() - start < float(sys.argv[1]):
            time.sleep(1)
        dead = [p.pid for p in ray_processes if not p.is_running()]
        print("dead", dead, flush=True)
        result = bridge.run_code_sync("export default 6 * 7", executor=ray_executor)
        print("second", result.status, result.result, flush=True)
    print("closed", flush=True)
    """
)


@pytest.mark.timeout(PAST_THE_DRIVER_TIMEOUT + 300)
def test_an_executor_that_started_ray_serves_runs_past_the_driver_timeout() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(PAST_THE_DRIVER_TIMEOUT)],
        capture_output=True,
        text=True,
        timeout=PAST_THE_DRIVER_TIMEOUT + 240,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, (lines, done.stderr[-3000:])
    assert lines == ["first success 42", "cluster 2", "dead []", "second success 42", "closed"]
