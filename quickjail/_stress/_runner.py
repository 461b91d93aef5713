"""Running one program with the bridge, and the invariants every run must keep.

:meth:`Runner.run` starts every program of both phases. Each run is driven on a thread of
its own under a watchdog, so a host function that blocks forever is reported as a hang
instead of stopping the stress test; after a hang the remaining runs are skipped.
:meth:`Runner.check` judges a run's outcome: exceptions, time, memory, limits, the canary,
leaks and callables crossing the boundary. The phases add their own checks on top.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Final

from quickjail import bridge, sandbox
from quickjail._stress._bridge import Bridge, has_callable
from quickjail._stress._canary import Canary
from quickjail._stress._report import Phase, Violation, ViolationKind
from quickjail._stress._texts import error_texts, host_strings, result_texts, show
from quickjail.sandbox.host import Executor

__all__ = ["HARD_MARGIN", "TIME_MARGIN", "Outcome", "Runner"]

TIME_MARGIN: Final = 1.0  # seconds a run may take past its timeout
HARD_MARGIN: Final = 5.0  # past timeout + margin the watchdog stops waiting
_RUN_THREAD: Final = "quickjail-stress-run"


@dataclass(slots=True)
class Outcome:
    """What one run did: its result, an exception that escaped, a refusal, or a hang."""

    result: sandbox.CodeResult | None = None
    raised: BaseException | None = None
    refused: Exception | None = None  # run_code refused the options (nothing ran)
    wall: float = 0.0
    hung: bool = False


class Runner:
    """Runs programs with the bridge, one at a time, each under a watchdog thread."""

    def __init__(
        self,
        b: Bridge,
        timeout: float,
        memory: int,
        canary: Canary,
        executor: Executor | None = None,
    ) -> None:
        self.bridge = b
        self.executor = executor
        self.timeout = timeout
        self.memory = memory
        self.canary = canary
        self.host_strings = host_strings(b.roots, canary)
        self.hung = False
        self.max_rss_growth = 0
        self.rss_case = ""
        import psutil  # type: ignore[import-untyped,unused-ignore]

        self._process = psutil.Process()
        self.rss_baseline = self._rss()

    def _rss(self) -> int:
        return int(self._process.memory_info().rss)

    def run(self, source: str, execute: dict[str, Any] | None = None) -> Outcome:
        """Run a JavaScript module with the bridge and wait for it under the watchdog."""
        options: dict[str, Any] = {
            "imports": self.bridge.imports,
            "globals": self.bridge.globals,
            "output_limits": self.bridge.output_limits,
            "quotas": self.bridge.quotas,
            "timeout": self.timeout,
            "memory_limit_bytes": self.memory,
            "language": "javascript",
            "executor": self.executor,
        }
        if execute is not None:
            options["execute"] = execute
        try:
            execution = bridge.run_code(source, **options)
        except (TypeError, ValueError) as exc:  # TransferError is a TypeError
            return Outcome(refused=exc)
        box: list[sandbox.CodeResult | BaseException] = []

        def drive() -> None:
            try:
                box.append(execution.run_sync())
            except BaseException as exc:  # reported as a violation by the caller
                box.append(exc)

        thread = threading.Thread(target=drive, name=_RUN_THREAD, daemon=True)
        start = time.perf_counter()
        thread.start()
        try:
            thread.join(self.timeout + TIME_MARGIN + HARD_MARGIN)
            if thread.is_alive():
                execution.terminate("quickjail stress watchdog")
                thread.join(HARD_MARGIN)
        except BaseException:
            execution.terminate("interrupted")
            raise
        wall = time.perf_counter() - start
        if thread.is_alive():
            self.hung = True
            return Outcome(wall=wall, hung=True)
        out = box[0]
        if isinstance(out, BaseException):
            return Outcome(raised=out, wall=wall)
        return Outcome(result=out, wall=wall)

    def sample_rss(self, case: str) -> None:
        """Note the host's resident memory growth after a run of ``case``."""
        growth = self._rss() - self.rss_baseline
        if growth > self.max_rss_growth:
            self.max_rss_growth = growth
            self.rss_case = case

    def check(
        self,
        phase: Phase,
        case: str,
        outcome: Outcome,
        inputs: str,
        example: str | None = None,
        *,
        errors_only: bool = False,
    ) -> list[Violation]:
        """The invariants every run shares.

        Args:
            phase: The phase the run belongs to.
            case: The case id or function label.
            outcome: What the run did.
            inputs: Everything the run was given (source, arguments): a host string found
                there is not a leak.
            example: The fuzzed arguments, for the report.
            errors_only: Look for host paths and environment values only in error texts
                (what a host function *returns* is its business; what it throws is not).
        """
        out: list[Violation] = []

        def add(kind: ViolationKind, message: str) -> None:
            out.append(Violation(phase, case, kind, message, example))

        if outcome.hung:
            add(
                "hang",
                f"the run did not end {self.timeout + TIME_MARGIN + 2 * HARD_MARGIN:g} s "
                "after it started, even after terminate(): a host function blocks",
            )
            return out
        if outcome.raised is not None:
            exc = outcome.raised
            add(
                "host-exception",
                f"an exception escaped the sandbox: {type(exc).__name__}: {show(str(exc))}",
            )
            return out
        if outcome.wall > self.timeout + TIME_MARGIN:
            add(
                "time",
                f"the run took {outcome.wall:.2f} s, over its timeout "
                f"{self.timeout:g} s + {TIME_MARGIN:g} s",
            )
        r = outcome.result
        if r is None:
            return out
        limits, quotas = self.bridge.output_limits, self.bridge.quotas
        if r.metrics.peak_memory_bytes > self.memory:
            add(
                "memory",
                f"guest memory reached {r.metrics.peak_memory_bytes} bytes, over the "
                f"limit {self.memory}",
            )
        if len(r.logs) > limits.max_logs + 1:
            add("limits", f"{len(r.logs)} log entries, over max_logs {limits.max_logs}")
        if len(r.reports) > limits.max_reports:
            add("limits", f"{len(r.reports)} reports, over max_reports {limits.max_reports}")
        if r.metrics.host_calls > quotas.max_host_calls:
            add(
                "limits",
                f"{r.metrics.host_calls} host calls, over max_host_calls {quotas.max_host_calls}",
            )
        texts = result_texts(r)
        if any(self.canary.secret in t for t in texts):
            add(
                "canary",
                "the canary's secret text reached the sandbox: a host function read "
                f"a file outside its root ({self.canary.file})",
            )
        scanned = error_texts(r) if errors_only else texts
        for s in self.host_strings:
            if s not in inputs and any(s in t for t in scanned):
                add(
                    "leak",
                    f"host information reached the sandbox: {show(s)} appears in what "
                    "the program saw",
                )
                break
        if has_callable(
            [r.result, r.reports, [e.args for e in r.logs], r.error.value if r.error else None]
        ):
            add(
                "escape",
                "a host callable came out of the sandbox (a forged function marker "
                "was decoded as a function)",
            )
        probe = self.bridge.probe
        if probe.base_exceptions:
            found = sorted(set(probe.base_exceptions))
            probe.base_exceptions.clear()
            add(
                "host-exception",
                f"{'; '.join(found)}: not an Exception, so the sandbox "
                "cannot turn it into a JS error or keep it in host_errors",
            )
        if self.bridge.probe.callable_args:
            labels = sorted(set(self.bridge.probe.callable_args))
            self.bridge.probe.callable_args.clear()
            add("escape", f"a host function received a callable argument: {', '.join(labels)}")
        return out
