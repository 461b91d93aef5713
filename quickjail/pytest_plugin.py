"""pytest plugin: the ``quickjail_stress`` fixture runs the isolation stress test in a test suite.

Registered through the ``pytest11`` entry point ``quickjail``, so installing quickjail makes
the fixture available (``-p quickjail.pytest_plugin`` loads it explicitly)::

    def test_my_bridge_is_safe(quickjail_stress):
        report = quickjail_stress({"imports": {"fs": bridge.ReadOnlyDir(DATA)}}, examples=50)
        report.assert_ok()   # AssertionError listing every violation

The checks are those of ``quickjail stress`` (see :func:`quickjail.run_stress`). They need
hypothesis (the ``stress`` extra); loading the plugin does not: it imports nothing heavy
until the fixture is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from quickjail._stress import StressReport
    from quickjail.sandbox.host import Executor

__all__ = ["StressCheck", "check", "quickjail_stress"]


class StressCheck(Protocol):
    """The callable the ``quickjail_stress`` fixture returns (see :func:`check`)."""

    def __call__(
        self,
        bridge_config: Mapping[str, Any],
        *,
        examples: int = 50,
        seed: int | None = None,
        timeout: float | None = None,
        memory_limit_bytes: int | None = None,
        executor: Executor | None = None,
    ) -> StressReport: ...


def check(
    bridge_config: Mapping[str, Any],
    *,
    examples: int = 50,
    seed: int | None = None,
    timeout: float | None = None,
    memory_limit_bytes: int | None = None,
    executor: Executor | None = None,
) -> StressReport:
    """Run the corpus and the fuzzer against a bridge configuration.

    Args:
        bridge_config: ``{"imports": ..., "globals": ...}`` as given to
            :func:`sandbox.run_code`, optionally with ``limits``, ``timeout`` and
            ``memory_limit_bytes``.
        examples: Generated calls per bridged host function.
        seed: The hypothesis seed (random when None; the report and its assertion show it).
        timeout: Each run's timeout; default: the configuration's, else 2 s.
        memory_limit_bytes: Each run's memory limit; default: the configuration's, else
            64 MiB.
        executor: Run the programs on this executor (e.g. a
            :class:`quickjail.executors.ProcessPool`) instead of in the test's process.

    Returns:
        The :class:`quickjail.StressReport`; call ``assert_ok()`` on it.
    """
    from quickjail._stress import run_stress

    return run_stress(
        bridge_config,
        examples=examples,
        seed=seed,
        timeout=timeout,
        memory_limit_bytes=memory_limit_bytes,
        executor=executor,
    )


@pytest.fixture
def quickjail_stress() -> StressCheck:
    """A callable ``check(bridge_config, *, examples=50) -> StressReport``.

    Returns:
        :func:`check`, which runs the stress test against the bridge configuration given.
    """
    return check
