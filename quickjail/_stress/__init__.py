"""The isolation stress test: the adversarial corpus and a fuzzer, run against a user's bridge.

:func:`run_stress` takes a *bridge configuration* — the ``imports``/``globals`` (and optionally
``output_limits``, ``quotas``, ``timeout``, ``memory_limit_bytes``) a deployment hands
to :func:`bridge.run_code` — and checks the host's invariants under attack:

``corpus``
    Every program of :data:`quickjail._corpus.CORPUS` runs once with the bridge. It must end
    with one of the statuses it declares, never produce the escape marker, keep the limits
    (logs, reports, host calls, guest memory), finish within the timeout plus a margin, and
    show no host path, environment value or canary secret.
``fuzz``
    Every bridged host function is called with hostile arguments drawn by hypothesis (wrong
    types, 1–5 MB strings, values nested 200 deep, lone surrogates, path tricks, huge ints,
    NaN/infinities, bytes, forged host-function markers, long argument lists), plus fixed
    path tricks aimed at a *canary*: a file holding a random secret, planted in a fresh
    temporary directory outside every :class:`bridge.ReadOnlyDir` root of the bridge. No
    exception may escape the run, the secret may never reach the program, and each run must
    stay within its time and memory bounds.
``guest``
    A compromised guest, played in-process against the host-call handler with the bridge:
    spans no memory holds for every op, replies fetched twice, unknown ops, functions and
    outcome kinds, malformed and over-cap value messages (blob indices out of range, negative
    or reused; hash-colliding members; 200,000 levels of nesting), a compile instance
    answering for another module or twice. The host must refuse each call, charge no counter
    or quota, not raise, not hang and not grow.
``host``
    After the phases: no thread the stress test did not find at the start is still alive
    (the sandbox's own worker pool excepted), and the process's resident memory grew by at
    most the guest memory limit plus a margin.

Host exceptions that a run records in ``CodeResult.host_errors`` are fine: the sandbox
handled them. What the function *returns* is not judged, only what crosses the boundary.

One module per part: ``_report`` (the results), ``_bridge`` (loading and analysing the
bridge), ``_canary``, ``_texts`` (the host facts a run must not show), ``_runner`` (running
one program and the checks every run shares), ``_corpus``, ``_fuzz``, ``_guest`` and
``_host`` (the phases). :func:`run_stress` puts them together.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from quickjail import bridge
from quickjail._stress._bridge import StressConfigError, analyse_bridge, load_bridge
from quickjail._stress._canary import plant_canary
from quickjail._stress._corpus import run_corpus
from quickjail._stress._fuzz import run_fuzz
from quickjail._stress._guest import run_guest
from quickjail._stress._host import check_host
from quickjail._stress._report import (
    Phase,
    PhaseSummary,
    Progress,
    StressReport,
    TestCaseResult,
    Violation,
)
from quickjail._stress._runner import Runner
from quickjail.sandbox.host import Executor

__all__ = [
    "DEFAULT_EXAMPLES",
    "DEFAULT_TIMEOUT",
    "Phase",
    "PhaseSummary",
    "Progress",
    "StressConfigError",
    "StressReport",
    "TestCaseResult",
    "Violation",
    "load_bridge",
    "run_stress",
]

DEFAULT_EXAMPLES: Final = 100
DEFAULT_TIMEOUT: Final = 2.0
DEFAULT_MEMORY: Final = 64 * 2**20


def run_stress(
    bridge_config: Mapping[str, Any],
    *,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = None,
    timeout: float | None = None,
    memory_limit_bytes: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    executor: Executor | None = None,
) -> StressReport:
    """Run the corpus, the fuzzer and the compromised guest against a bridge; check the host.

    Args:
        bridge_config: ``{"imports": ..., "globals": ...}`` as given to
            :func:`bridge.run_code`, optionally with ``output_limits``, ``quotas``, ``timeout`` and
            ``memory_limit_bytes``.
        examples: Generated hypothesis examples per bridged host function (fixed path tricks
            aimed at the canary are tried on top of these).
        seed: The hypothesis seed; random (and recorded in the report) when None.
        timeout: Each run's timeout in seconds; default: the configuration's, else 2 s.
        memory_limit_bytes: Each run's guest memory limit; default: the configuration's,
            else 64 MiB.
        progress: Called with a :class:`Progress` as phases start, advance and end.
        executor: Where the corpus and fuzzer runs execute (``run_code``'s ``executor``, e.g.
            a :class:`quickjail.executors.ProcessPool`); None runs them in this process. The
            compromised-guest phase always plays this process's own host side, and the host
            checks (RSS, threads) are of this process.

    Returns:
        The report; :meth:`StressReport.assert_ok` raises when an invariant broke.

    Raises:
        StressConfigError: If the configuration cannot be used.
        ImportError: If hypothesis is not installed (the ``stress`` extra).
    """
    import hypothesis  # noqa: F401  (fail before any work when the extra is missing)

    if not isinstance(examples, int) or isinstance(examples, bool) or examples < 0:
        raise StressConfigError("examples must be a non-negative int")
    b = analyse_bridge(bridge_config)
    eff_timeout = timeout if timeout is not None else bridge_config.get("timeout")
    eff_timeout = DEFAULT_TIMEOUT if eff_timeout is None else eff_timeout
    eff_memory = (
        memory_limit_bytes
        if memory_limit_bytes is not None
        else bridge_config.get("memory_limit_bytes")
    )
    eff_memory = DEFAULT_MEMORY if eff_memory is None else eff_memory
    if seed is None:
        seed = secrets.randbits(32)
    notify = progress or (lambda _event: None)
    start = time.perf_counter()
    canary = plant_canary(b.roots)
    try:
        # checks the options and loads the engine before the baselines are taken: this
        # process's own (the guest phase plays it) and the executor's workers
        for where in (None, executor) if executor is not None else (None,):
            try:
                bridge.run_code_sync(
                    "export default 1",
                    timeout=eff_timeout,
                    memory_limit_bytes=eff_memory,
                    imports=b.imports,
                    globals=b.globals,
                    output_limits=b.output_limits,
                    quotas=b.quotas,
                    executor=where,
                )
            except (TypeError, ValueError) as exc:
                raise StressConfigError(str(exc)) from None
        baseline = set(threading.enumerate())
        runner = Runner(b, float(eff_timeout), int(eff_memory), canary, executor)
        cases: list[TestCaseResult] = []

        def count() -> int:
            return sum(len(c.violations) for c in cases)

        cases += run_corpus(runner, notify, count)
        cases += run_fuzz(runner, examples, seed, notify, count)
        cases += run_guest(runner, notify, count)
        notify(Progress("host", "start", 0, 1, violations=count()))
        cases.append(check_host(runner, baseline))
        notify(Progress("host", "end", 1, 1, "host-invariants", count()))
    finally:
        canary.close()
    return StressReport(
        cases=tuple(cases),
        seed=seed,
        examples=examples,
        timeout=float(eff_timeout),
        memory_limit_bytes=int(eff_memory),
        functions=tuple(t.label for t in b.targets),
        roots=tuple(b.roots),
        canary=canary.file,
        duration_s=time.perf_counter() - start,
    )
