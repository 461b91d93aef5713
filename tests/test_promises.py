"""Host functions return Promises, as in a Worker; ``bridge.synchronous`` opts one out; work the
program queued before its entry settled still runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from quickjail import run_code_sync
from quickjail.bridge import HostError, ReadOnlyDir, run_code, synchronous

GENEROUS = 60.0


def double(x: int) -> int:
    return 2 * x


def fail(x: int) -> int:
    raise HostError(f"no {x}")


async def adouble(x: int) -> int:
    return 2 * x


def test_a_sync_host_function_returns_a_promise_settled_with_its_value() -> None:
    code = """
    export default async () => {
      const p = tool(21);
      return [p instanceof Promise, await p, await tool(1).then((v) => v + 1)];
    };
    """
    r = run_code_sync(code, globals={"tool": double})
    assert r.ok, r.error
    assert r.result == [True, 42, 3]


def test_a_sync_host_function_is_called_at_once_and_settles_in_the_same_slice() -> None:
    calls: list[int] = []

    def tool(x: int) -> int:
        calls.append(x)
        return x

    code = """
    export default async () => {
      tool(1);  // called now, not on a later turn
      const p = tool(2);
      return [await p];
    };
    """
    r = run_code_sync(code, globals={"tool": tool})
    assert r.ok, r.error
    assert calls == [1, 2] and r.result == [2]
    assert r.metrics.slices == 1  # no round trip through the event loop


def test_a_failing_sync_host_function_rejects_its_promise_instead_of_throwing() -> None:
    code = """
    export default async () => {
      let threw = false, p;
      try { p = tool(7); } catch { threw = true; }
      const caught = await p.catch((e) => e.message);
      const fallback = await tool(8).catch(() => null);
      return [threw, caught, fallback];
    };
    """
    r = run_code_sync(code, globals={"tool": fail})
    assert r.ok, r.error
    assert r.result == [False, "no 7", None]


async def test_an_async_host_function_still_returns_a_promise(anyio_backend: str) -> None:
    r = await run_code(
        "export default async () => [tool(1) instanceof Promise, await tool(21)]",
        globals={"tool": adouble},
    )
    assert r.ok, r.error
    assert r.result == [True, 42]


def test_synchronous_keeps_a_sync_js_call() -> None:
    @synchronous
    def counter(x: int) -> int:
        return x + 1

    code = "export default () => { const v = counter(1); return [v, typeof v.then]; }"
    r = run_code_sync(code, globals={"counter": counter}, kind="module")
    assert r.ok, r.error
    assert r.result == [2, "undefined"]
    assert counter(4) == 5  # still callable from Python


def test_synchronous_throws_in_js_where_the_default_rejects() -> None:
    code = """
    export default () => {
      try { strict(3); return "no throw"; } catch (e) { return e.message; }
    };
    """
    r = run_code_sync(code, globals={"strict": synchronous(fail)})
    assert r.ok, r.error
    assert r.result == "no 3"


def test_synchronous_refuses_async_functions() -> None:
    with pytest.raises(TypeError, match="sync function"):
        synchronous(adouble)  # type: ignore[arg-type]


def test_synchronous_works_inside_imports_namespaces() -> None:
    code = """
    import { now, later } from "m";
    export default async () => [now(), await later()];
    """
    imports = {"m": {"now": synchronous(lambda: 1), "later": lambda: 2}}
    r = run_code_sync(code, imports=imports)
    assert r.ok, r.error
    assert r.result == [1, 2]


def test_an_unawaited_failing_call_is_an_unhandled_rejection_not_an_aborted_run() -> None:
    code = """
    export default () => { tool(1); return "finished"; };
    """
    r = run_code_sync(code, globals={"tool": fail})
    assert r.ok, r.error
    assert r.result == "finished"
    rejections = [e for e in r.logs if e.args and e.args[0] == "Unhandled promise rejection:"]
    assert len(rejections) == 1
    assert "no 1" in str(rejections[0].args[1])


def test_arguments_that_cannot_cross_reject_the_promise() -> None:
    code = """
    export default async () => {
      const e = await tool(() => 1).catch((e) => e);
      return [e instanceof TypeError, typeof e.message];
    };
    """
    r = run_code_sync(code, globals={"tool": double})
    assert r.ok, r.error
    assert r.result == [True, "string"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_bytes(b"alpha")
    (tmp_path / "b.txt").write_bytes(b"beta")
    return tmp_path


def test_readonlydir_follows_the_default(root: Path) -> None:
    code = """
    import * as fs from "fs";
    export default async () => {
      const text = await fs.readFile("a.txt").then((b) => String.fromCharCode(...b));
      const settled = await Promise.allSettled(["a.txt", "missing.txt", "b.txt"].map(fs.readFile));
      const names = (await fs.readdir(".")).sort();
      const size = (await fs.stat("b.txt")).size;
      const isPromise = fs.readFile("a.txt") instanceof Promise;
      return [text, settled.map((s) => s.status), names, size, isPromise];
    };
    """
    with ReadOnlyDir(root) as fs:
        r = run_code_sync(code, imports={"fs": fs})
    assert r.ok, r.error
    assert r.result == [
        "alpha",
        ["fulfilled", "rejected", "fulfilled"],
        ["a.txt", "b.txt"],
        4,
        True,
    ]


def test_microtasks_queued_before_the_entry_settled_still_run() -> None:
    code = """
    export default () => {
      Promise.resolve().then(() => report("then"));
      queueMicrotask(() => report("microtask"));
      (async () => { await null; await null; report("chain"); })();
      return "done";
    };
    """
    r = run_code_sync(code)
    assert r.ok, r.error
    assert r.result == "done"
    assert sorted(r.reports) == ["chain", "microtask", "then"]


def test_a_report_after_an_unawaited_host_call_is_not_lost() -> None:
    code = """
    export default () => { tool(2).then((v) => report(v)); return 0; };
    """
    r = run_code_sync(code, globals={"tool": double})
    assert r.ok, r.error
    assert r.reports == [4]


def test_an_endless_microtask_loop_after_the_entry_settled_is_stopped_by_the_timeout() -> None:
    code = """
    export default () => {
      const spin = () => queueMicrotask(spin);
      spin();
      return 1;
    };
    """
    r = run_code_sync(code, timeout=0.5)
    assert r.status == "terminated" and r.reason == "timeout"


def test_queue_microtask_is_there() -> None:
    code = "export default () => new Promise((res) => queueMicrotask(() => res(typeof res)))"
    r = run_code_sync(code)
    assert r.ok, r.error
    assert r.result == "function"
