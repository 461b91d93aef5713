"""Helpers shared by test files in several folders (``tests/`` is on ``sys.path`` because
its ``conftest.py`` is)."""

from __future__ import annotations

import anyio
import anyio.lowlevel


async def a_cancellation() -> BaseException:
    """A genuine cancellation exception of the running backend, caught in its own scope."""
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.lowlevel.checkpoint()
        except anyio.get_cancelled_exc_class() as exc:
            return exc
    raise AssertionError("the cancelled scope did not raise")
