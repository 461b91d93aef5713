"""A process forked after quickjail ran anything runs sandboxes as well as its parent.

Only the forking thread lives on in a child of ``fork`` (multiprocessing's default start
method on Linux before Python 3.14, prefork servers): quickjail's deadline and worker threads
do not, and a lock another thread held at the fork stays held. Each case forks from a parent
that has run code, while another of its threads is inside a guest, and the child must see its
timeout fire, its timer wake and its async run end (it used to hang in all three). An
executor made before the fork refuses runs in the child (its workers are the parent's) and
closing it there, or the child's exit, leaves the parent's workers serving. The parent is a
fresh process (a forking pytest process would fork pytest's own threads too); a child that
hangs is killed after a generous wait and the case fails.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent(
    """
    import multiprocessing, threading

    import anyio

    import quickjail

    def child(queue, case):
        if case == "a timeout":
            result = quickjail.run_code_sync("while (true) {}", timeout=0.5)
        elif case == "a timer":
            code = "await new Promise((r) => setTimeout(r, 100)); export default 1"
            result = quickjail.run_code_sync(code, timeout=60)
        else:
            async def main():
                code = "await new Promise((r) => setTimeout(r, 100)); export default 2"
                return await quickjail.run_code(code, timeout=60)
            result = anyio.run(main)
        queue.put(f"{case}: {result.status} {result.reason} {result.result}")

    if __name__ == "__main__":
        first = "await new Promise((r) => setTimeout(r, 10)); export default 0"
        assert quickjail.run_code_sync(first, timeout=60).status == "success"
        # another thread is inside a guest at every fork: its locks are held, its threads busy
        busy = threading.Thread(
            target=quickjail.run_code_sync, args=("while (true) {}",), kwargs={"timeout": 120}
        )
        busy.start()
        forks = multiprocessing.get_context("fork")
        for case in ("a timeout", "a timer", "an async run"):
            queue = forks.Queue()
            process = forks.Process(target=child, args=(queue, case))
            process.start()
            try:
                print(queue.get(timeout=60), flush=True)
            except Exception:
                print(f"{case}: the child hangs", flush=True)
                process.kill()
            process.join()
        print("parent:", quickjail.run_code_sync("export default 3").result, flush=True)
        import os
        os._exit(0)  # the busy thread's guest spins on: leave without waiting for it
    """
)


def test_a_forked_child_times_out_wakes_timers_and_ends_async_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", PROGRAM],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.stdout.splitlines() == [
        "a timeout: terminated timeout None",
        "a timer: success None 1",
        "an async run: success None 2",
        "parent: 3",
    ], done.stderr[-3000:]


POOL_PROGRAM = textwrap.dedent(
    """
    import os, sys

    import quickjail
    from quickjail.executors import ExecutorError, ProcessPool

    pool = ProcessPool(workers=1)
    print("parent:", quickjail.run_code_sync("export default 1", executor=pool).result)
    child = os.fork()
    if child == 0:
        try:
            quickjail.run_code_sync("export default 2", executor=pool)
            print("child: the parent's pool ran a run", flush=True)
        except ExecutorError as exc:
            print("child: refused:", "is a fork of it" in str(exc), flush=True)
        with ProcessPool(workers=1) as own:
            result = quickjail.run_code_sync("export default 3", executor=own, timeout=60)
            print("child: own pool:", result.status, result.result, flush=True)
        pool.close()  # only marks it closed here
        sys.exit(0)  # exit handlers run (the pool's finalizer among them)
    _, status = os.waitpid(child, 0)
    print("child exit:", os.waitstatus_to_exitcode(status), flush=True)
    result = quickjail.run_code_sync("export default 4", executor=pool, timeout=60)
    print("parent after:", result.status, result.result, flush=True)
    pool.close()
    """
)


def test_a_pool_made_before_a_fork_refuses_in_the_child_and_keeps_serving_the_parent() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", POOL_PROGRAM],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.stdout.splitlines() == [
        "parent: 1",
        "child: refused: True",
        "child: own pool: success 3",
        "child exit: 0",
        "parent after: success 4",
    ], done.stderr[-3000:]
