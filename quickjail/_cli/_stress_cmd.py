"""``quickjail stress``: run the isolation stress test against a bridge factory and report.

The stress test itself is :mod:`quickjail._stress`, imported only when the command runs,
since it needs hypothesis (the ``stress`` extra). Progress goes to stderr, the summary and
the violations to stdout, and ``--junit`` writes the JUnit XML report.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
import time
from typing import TYPE_CHECKING, TextIO

from quickjail._cli._args import format_size
from quickjail._cli._exit import EXIT_ERROR, EXIT_OK, EXIT_USAGE, UsageError
from quickjail._cli._text import safe_text

if TYPE_CHECKING:
    from quickjail._stress import Progress

__all__ = ["cmd_stress"]


class _StressProgress:
    """Prints a line per phase and a live counter (on a terminal) to stderr."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._started = 0.0
        self._last = 0.0

    def __call__(self, event: Progress) -> None:
        now = time.monotonic()
        what = {
            "corpus": "hostile programs",
            "fuzz": "fuzzed host calls",
            "guest": "compromised-guest moves",
            "host": "host check(s)",
        }[event.phase]
        if event.event == "start":
            self._started = now
            print(f"{event.phase}: {event.total} {what}", file=self._stream, flush=True)
        elif event.event == "step":
            if self._tty and now - self._last >= 0.1:
                self._last = now
                print(
                    f"\r  {event.done}/{event.total}  violations: {event.violations}  "
                    f"{event.case[:40]:<40}",
                    end="",
                    file=self._stream,
                    flush=True,
                )
        else:
            if self._tty:
                print("\r\033[K", end="", file=self._stream)
            print(
                f"  done: {event.done} in {now - self._started:.1f} s, "
                f"violations so far: {event.violations}",
                file=self._stream,
                flush=True,
            )


def cmd_stress(args: argparse.Namespace) -> int:
    """Stress-test the bridge the factory returns; exit 1 when an invariant broke."""
    try:
        import hypothesis  # noqa: F401

        from quickjail import _stress
    except ImportError as exc:
        raise UsageError(
            f"quickjail stress needs hypothesis ({exc}); install it with: "
            "pip install 'quickjail[stress]'"
        ) from None
    try:
        config = _stress.load_bridge(args.bridge)
    except _stress.StressConfigError as exc:
        raise UsageError(str(exc)) from None
    seed = args.seed if args.seed is not None else secrets.randbits(32)
    if not args.quiet:
        print(f"quickjail stress: bridge {args.bridge}, seed {seed}", file=sys.stderr, flush=True)
    pool = contextlib.ExitStack()
    executor = None
    if args.workers is not None:
        from quickjail.executors import ProcessPool

        executor = pool.enter_context(ProcessPool(workers=args.workers))
    try:
        report = _stress.run_stress(
            config,
            examples=args.examples if args.examples is not None else _stress.DEFAULT_EXAMPLES,
            seed=seed,
            timeout=args.timeout,
            memory_limit_bytes=args.memory,
            progress=None if args.quiet else _StressProgress(sys.stderr),
            executor=executor,
        )
    except _stress.StressConfigError as exc:
        raise UsageError(f"--bridge {args.bridge}: {exc}") from None
    finally:
        pool.close()
    if args.junit is not None:
        try:
            report.write_junit(args.junit)
        except OSError as exc:
            print(
                f"quickjail: cannot write --junit {args.junit!r}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    functions = ", ".join(report.functions) or "none"
    print(
        f"bridge {args.bridge}: host functions {functions}; timeout {report.timeout:g} s; "
        f"memory {format_size(report.memory_limit_bytes)}; seed {report.seed}"
    )
    if report.canary is None:
        print(
            "note: no place outside the ReadOnlyDir roots for the canary file; "
            "canary reads were not tested"
        )
    print(report.format_table())
    found = report.violations
    if found:
        print(f"\n{len(found)} violation(s):")
        for v in found:
            print(f"  {safe_text(str(v))}")  # messages may quote what a program sent
        print(f"\nrepeat with: quickjail stress --bridge {args.bridge} --seed {report.seed}")
        return EXIT_ERROR
    print("\nno violations")
    return EXIT_OK
