"""The host phase: what the stress test left behind in the host process.

After both phases, no thread the stress test did not find at the start may still be alive
(the process-wide thread pools excepted: the sandbox's workers, and the threads executors
call sync host functions on), and the process's resident memory may have grown
by at most the guest memory limit plus :data:`RSS_MARGIN`.
"""

from __future__ import annotations

import threading
import time
from typing import Final

from quickjail._stress._report import TestCaseResult, Violation
from quickjail._stress._runner import Runner

__all__ = ["RSS_MARGIN", "check_host"]

RSS_MARGIN: Final = 256 * 2**20  # host RSS growth allowed on top of the guest memory limit
_THREAD_GRACE: Final = 3.0
_POOL_THREADS: Final = frozenset(
    {"quickjail-worker", "quickjail-host-call", "quickjail-deadlines"}
)  # process-wide pools, kept (and reused) after the runs that started them


def _other_threads(baseline: set[threading.Thread]) -> list[threading.Thread]:
    return [
        t
        for t in threading.enumerate()
        if t not in baseline and t.is_alive() and t.name not in _POOL_THREADS
    ]


def check_host(runner: Runner, baseline: set[threading.Thread]) -> TestCaseResult:
    """Check the threads left running and the host's memory growth after both phases.

    Args:
        runner: The runner of both phases (its memory limit and largest RSS growth).
        baseline: The threads alive before the stress test started.

    Returns:
        The ``host-invariants`` result.
    """
    start = time.perf_counter()
    violations: list[Violation] = []
    deadline = time.monotonic() + _THREAD_GRACE
    left = _other_threads(baseline)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _other_threads(baseline)
    if left:
        names = ", ".join(sorted(t.name for t in left))
        violations.append(
            Violation(
                "host",
                "host-invariants",
                "threads",
                f"{len(left)} thread(s) still running after the stress test: {names}",
            )
        )
    bound = runner.memory + RSS_MARGIN
    if runner.max_rss_growth > bound:
        violations.append(
            Violation(
                "host",
                "host-invariants",
                "memory",
                f"the host process grew by {runner.max_rss_growth >> 20} MiB of resident memory "
                f"(first over the bound during {runner.rss_case}); the bound is the guest limit "
                f"plus {RSS_MARGIN >> 20} MiB = {bound >> 20} MiB",
            )
        )
    return TestCaseResult(
        "host",
        "host-invariants",
        "quickjail.stress.host",
        1,
        time.perf_counter() - start,
        tuple(violations),
    )
