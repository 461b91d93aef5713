"""A sync run enters its guest on the caller's own thread, on a guest stack of that thread
(sandbox/_stacks.py, _host/stack.c), with the same limits, signals still handled on the main
thread, and no stack memory kept past what a thread needs."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import quickjail
from quickjail.bridge import synchronous
from quickjail.sandbox import _stacks, run_code, run_code_sync

GENEROUS = 60.0  # seconds: a bound no loaded machine reaches, for runs that must not hang

pytestmark = pytest.mark.skipif(
    not _stacks._SUPPORTED, reason="guest stacks: Linux, CPython < 3.14 (runs take a worker)"
)

DEEP = "function f(n) { return n ? f(n - 1) + 1 : 0 }; export default f(1e6)"
# the deepest native recursion measured: ~13 MiB of the guest stack
NESTED = "export default JSON.parse('['.repeat(1e5) + ']'.repeat(1e5)).length"


def _in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a new thread with the platform's default stack size; its result."""
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(GENEROUS)
    assert out, "the thread did not finish"
    return out[0]


def test_a_sync_run_calls_its_host_functions_on_the_calling_thread() -> None:
    seen: list[int] = []

    def where() -> int:
        seen.append(threading.get_ident())
        return len(seen)

    r = quickjail.run_code_sync(
        "export default [where(), where()]", globals={"where": synchronous(where)}
    )
    assert (r.status, r.result) == ("success", [1, 2]), r.error
    assert seen == [threading.get_ident()] * 2


def test_a_run_nested_in_a_host_function_runs_on_a_worker_and_both_finish() -> None:
    inner: list[int] = []

    def nested() -> int:
        def where() -> int:
            inner.append(threading.get_ident())
            return 40

        r = quickjail.run_code_sync(
            "export default where() + 1", globals={"where": synchronous(where)}
        )
        assert r.status == "success", r.error
        return int(r.result)

    r = quickjail.run_code_sync(
        "export default nested() + 1", globals={"nested": synchronous(nested)}
    )
    assert (r.status, r.result) == ("success", 42), r.error
    assert inner and inner[0] != threading.get_ident()  # this thread's stack was busy


@pytest.mark.parametrize("program", [DEEP, NESTED], ids=["recursion", "nesting"])
@pytest.mark.parametrize("where", ["main-thread", "default-size-thread"])
def test_runaway_recursion_ends_in_range_error_on_any_callers_stack(
    where: str, program: str
) -> None:
    # the nesting needs more native stack than a default thread has (8 MiB)
    def run() -> Any:
        return run_code_sync(program, timeout=GENEROUS)

    r = run() if where == "main-thread" else _in_thread(run)
    assert r.status == "error" and r.error is not None
    assert (r.error.name, r.error.message) == ("RangeError", "Maximum call stack size exceeded")
    assert run_code_sync("export default 1 + 1").result == 2


def test_a_run_that_waits_for_timers_ends_on_a_worker_and_returns_to_the_caller() -> None:
    r = run_code_sync(
        "report(1); await new Promise((ok) => setTimeout(ok, 20)); report(2);export default 3",
        timeout=GENEROUS,
    )
    assert (r.status, r.result, r.reports) == ("success", 3, [1, 2]), r.error
    assert r.metrics.slices >= 2


def _signal_main_soon(signum: int) -> None:
    """Send ``signum`` to the main thread shortly, from another thread."""
    main = threading.main_thread().ident
    assert main is not None
    threading.Timer(0.1, signal.pthread_kill, (main, signum)).start()


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="needs the main thread"
)
def test_ctrl_c_stops_a_guest_spinning_on_the_main_thread_and_reaches_the_caller() -> None:
    started = False

    def spinning(_value: Any) -> None:
        nonlocal started
        started = True
        _signal_main_soon(signal.SIGINT)

    handle = run_code('report("spinning"); while (true) {}', report=spinning, timeout=GENEROUS)
    # Ctrl-C as an interactive Python has it, even when this process was started with SIGINT
    # ignored (a background job of a shell without job control)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            handle.run_sync()
    finally:
        signal.signal(signal.SIGINT, previous)
    # stopped by the interrupt, not by its deadline (the signal would then be handled after)
    assert handle.result is not None
    assert (handle.result.status, handle.result.reason) == ("terminated", "interrupted")
    assert started
    assert run_code_sync("export default 2").result == 2


@pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(), reason="needs the main thread"
)
def test_a_signal_handler_runs_while_a_guest_spins_on_the_main_thread() -> None:
    handled: list[float] = []

    def on_usr1(_signum: int, _frame: Any) -> None:
        handled.append(time.monotonic())
        handle.terminate("stopped by the signal handler")

    def spinning(_value: Any) -> None:
        _signal_main_soon(signal.SIGUSR1)

    handle = run_code('report("spinning"); while (true) {}', report=spinning, timeout=GENEROUS)
    previous = signal.signal(signal.SIGUSR1, on_usr1)
    try:
        r = handle.run_sync()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert handled
    assert (r.status, r.reason) == ("terminated", "stopped by the signal handler")


def _resident_bytes(address: int) -> int:
    """The resident size of the mapping that holds ``address`` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "Rss:":
                return int(line.split()[1]) * 1024
    raise AssertionError("no mapping holds the address")


def _mapped(address: int) -> bool:
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return True
    return False


def test_a_deep_run_leaves_only_the_top_of_its_stack_resident_and_a_thread_end_unmaps_it() -> None:
    def deep_then_measure() -> tuple[int, int]:
        r = run_code_sync(NESTED, timeout=GENEROUS)
        assert r.status == "error"
        stack = _stacks._local.stack
        usable = stack._address + os.sysconf("SC_PAGESIZE")  # above the guard page
        return usable, _resident_bytes(usable)

    address, resident = _in_thread(deep_then_measure)
    # the nesting makes ~13 MiB of the stack resident while it runs; a small run needs far
    # less than the mebibyte allowed here
    assert resident <= 1 << 20
    deadline = time.monotonic() + GENEROUS
    while _mapped(address) and time.monotonic() < deadline:
        time.sleep(0.01)  # the thread's locals go once the thread has fully ended
    assert not _mapped(address)


def test_a_guest_entered_from_a_host_function_runs_below_it_not_over_it() -> None:
    from quickjail.sandbox import _engine

    def probe() -> int:
        # a second guest, entered on this thread while the first one waits for this call
        return _engine.get_engine()._probe() & 0xFF

    r = quickjail.run_code_sync(
        "const before = [1, 2, 3].map((x) => x * 2);"
        "const p = probe();"
        "export default [before, typeof p, [4, 5].map((x) => x + 1)]",
        globals={"probe": synchronous(probe)},
    )
    assert (r.status, r.result) == ("success", [[2, 4, 6], "number", [5, 6]]), r.error
