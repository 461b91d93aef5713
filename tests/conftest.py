"""Shared fixtures: async tests run on both asyncio and trio; the tests of a run's semantics run
their sync runs both ways a guest executes (``sync_path``)."""

from __future__ import annotations

import pytest

from quickjail.sandbox import _stacks


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["caller", "worker"])
def sync_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways ``run_code_sync`` executes its guest: on the calling thread's guest stack, and
    on a worker thread, as where a thread cannot switch stacks (other platforms, CPython 3.14,
    ``greenlet``). A module opts in with ``pytest.mark.usefixtures("sync_path")``."""
    if request.param == "worker":
        monkeypatch.setattr(_stacks, "_SUPPORTED", False)
    return str(request.param)
