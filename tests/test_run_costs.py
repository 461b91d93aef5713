"""What a fresh run costs the host besides its guest's work, bounded by host facts (object
counts, thread counts), never by time."""

from __future__ import annotations

import errno
import gc
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import psutil
import pytest

from quickjail import bridge, sandbox

RUNS = 20


@contextmanager
def _cyclic_garbage() -> Iterator[list[Any]]:
    """Collect, then keep what the next collection finds unreachable (instead of freeing it)."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[Any] = []
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.garbage.clear()
        gc.set_debug(0)
        if enabled:
            gc.enable()


def _sync(**options: Any) -> None:
    for _ in range(RUNS):
        assert bridge.run_code_sync("export default await f(1)", **options).result == 1


def _async(**options: Any) -> None:
    async def main() -> None:
        for _ in range(RUNS):
            result = await bridge.run_code("export default await f(1)", **options)
            assert result.result == 1

    anyio.run(main)


def _sandbox_sync(**_options: Any) -> None:
    for _ in range(RUNS):
        assert sandbox.run_code_sync("report(1); export default 1").result == 1


async def _af(x: int) -> int:
    return x


@pytest.mark.parametrize(
    ("drive", "options"),
    [
        (_sync, {"globals": {"f": lambda x: x}}),
        (_sync, {"globals": {"f": lambda x: x}, "report": lambda _v: None, "timeout": 30}),
        (_async, {"globals": {"f": _af}}),
        (_async, {"globals": {"f": lambda x: x}, "report": lambda _v: None}),
        (_sandbox_sync, {}),
    ],
    ids=["sync", "sync-report-timeout", "async-host-call", "async-report", "sandbox-sync"],
)
def test_a_finished_run_is_freed_by_refcounting_alone(
    drive: Callable[..., None], options: dict[str, Any]
) -> None:
    """No reference cycle keeps a run's objects (handle, run, instance, dispatch) alive: they go
    as soon as the caller drops the result, not at the next cyclic collection."""
    drive(**options)  # warm: first-use imports and caches
    with _cyclic_garbage() as garbage:
        drive(**options)
    ours = [type(o).__qualname__ for o in garbage if type(o).__module__.startswith("quickjail")]
    assert ours == []


def test_sync_runs_and_the_pool_leave_no_file_descriptor_open() -> None:
    """The pipes that wake workers and waiters are closed when each run ends (the pool's own
    pipe is made once, with the engine)."""
    proc = psutil.Process()

    def every_driver() -> None:
        _sync(globals={"f": lambda x: x})
        _sandbox_sync()
        _async(globals={"f": _af})
        gc.collect()  # whatever else the process holds (event loops) goes the same way

    every_driver()  # warm: the engine and its pool exist
    before = proc.num_fds()
    every_driver()
    assert proc.num_fds() == before


def test_a_sync_run_waits_on_a_lock_when_the_process_has_no_descriptor_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def exhausted() -> tuple[int, int]:
        raise OSError(errno.EMFILE, "Too many open files")

    bridge.run_code_sync("export default 0")  # the engine and its threads exist already
    monkeypatch.setattr(os, "pipe", exhausted)
    assert bridge.run_code_sync("export default 1 + 1").result == 2
    assert sandbox.run_code_sync("report(3); export default 4").reports == [3]
