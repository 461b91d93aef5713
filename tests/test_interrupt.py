"""Ctrl-C stops the run it interrupts, whatever thread its guest is on.

``run_code_sync`` runs a guest on the caller's thread until the guest first waits for a timer;
its later slices run on worker threads, and a run started by a host function (a nested run)
runs on a worker while its caller blocks. A ``KeyboardInterrupt`` raised on the caller's
thread must end those guests too, not only propagate. Each case runs in a fresh process (it
sends itself SIGINT from a host function once the guest is about to spin), and the host fact
checked is that no store is live in the caller once the interrupt has reached it (for a run on
a pool, its nested run is the caller's).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SPIN = "import {started} from 'h'; started(); while (true) {}"
AFTER_A_TIMER = "await new Promise((r) => setTimeout(r, 10)); "

PROGRAM = textwrap.dedent(
    """
    import os, signal, sys, time

    import quickjail
    from quickjail.sandbox import _router

    SPIN, AFTER_A_TIMER = sys.argv[2], sys.argv[3]
    # Ctrl-C as an interactive Python has it, even when the tests were started with SIGINT
    # ignored (a background job of a shell without job control), which its children inherit
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def started():
        os.kill(os.getpid(), signal.SIGINT)

    def nested():
        return quickjail.run_code_sync(SPIN, imports={"h": {"started": started}}).status

    async def nested_async():
        return (await quickjail.run_code(SPIN, imports={"h": {"started": started}})).status

    case = sys.argv[1]
    if case == "on_the_callers_thread":
        code, fns = SPIN, {"started": started}
    elif case == "after_a_timer":
        code, fns = AFTER_A_TIMER + SPIN, {"started": started}
    elif case == "nested":
        code, fns = "import {nested} from 'h'; export default nested()", {"nested": nested}
    elif case == "nested_in_a_host_function_of_a_pool_run":
        from quickjail.executors import ProcessPool

        code, fns = "import {nested} from 'h'; export default nested()", {"nested": nested}
        pool = ProcessPool(workers=1)
    elif case == "nested_in_an_async_host_function_of_a_pool_run":
        from quickjail.executors import ProcessPool

        code = "import {nested} from 'h'; export default await nested()"
        fns = {"nested": nested_async}
        pool = ProcessPool(workers=1)
    elif case == "nested_after_a_timer":
        code = AFTER_A_TIMER.replace("await", "import {nested} from 'h'; await")
        code, fns = code + "export default nested()", {"nested": nested}
    else:
        code = "import {nested} from 'h'; export default await nested()"
        fns = {"nested": nested_async}
    try:
        where = {"executor": pool} if case.endswith("pool_run") else {}
        result = quickjail.run_code_sync(code, imports={"h": fns}, **where)
        print("returned", result.status, flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    deadline = time.monotonic() + 60  # generous: a stopped guest ends within milliseconds
    while len(_router.stores) and time.monotonic() < deadline:
        time.sleep(0.05)
    print("live stores", len(_router.stores), flush=True)
    """
)


@pytest.mark.parametrize(
    "case",
    [
        "on_the_callers_thread",
        "after_a_timer",
        "nested",
        "nested_after_a_timer",
        "nested_in_an_async_host_function",
        "nested_in_a_host_function_of_a_pool_run",
        "nested_in_an_async_host_function_of_a_pool_run",
    ],
)
def test_ctrl_c_stops_the_guest_it_interrupts(case: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, case, SPIN, AFTER_A_TIMER],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.stdout.splitlines() == ["interrupted", "live stores 0"], done.stderr[-2000:]
