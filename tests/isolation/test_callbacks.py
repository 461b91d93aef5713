"""Callbacks and cancellation: a ``report=`` callback that never returns or blocks, and host
functions that raise the cancellation exception, end only what they belong to; the run keeps
its deadline and its outcome, and the host's exceptions stay on the host."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from _isolation import Case, Ctx, case_id, run_case, table
from _support import a_cancellation

from quickjail.sandbox import CodeResult

BLOCK = 1.0  # seconds a blocking report callback holds its run


async def _stuck(_value: Any) -> None:
    await anyio.sleep_forever()


def _host(ctx: Ctx) -> dict[str, Any]:
    async def flaky(x: Any = None) -> int:
        ctx.calls.append(x)
        raise await a_cancellation()

    async def fine(x: Any = None) -> int:
        await anyio.lowlevel.checkpoint()
        return 7

    return {"globals": {"flaky": flaky, "fine": fine}}


def _blocking_report(ctx: Ctx) -> dict[str, Any]:
    release = threading.Event()
    ctx.extra["release"] = release

    def report(value: Any) -> None:
        # a sync callback cannot be interrupted: it delays its own run's end by BLOCK
        ctx.calls.append(value)
        release.wait(BLOCK)

    return {"report": report}


def _host_errors_mention(text: str) -> Any:
    def check(r: CodeResult, ctx: Ctx) -> None:
        release = ctx.extra.get("release")
        if release is not None:
            release.set()
        assert any(text in str(e) for e in r.host_errors), [str(e)[:100] for e in r.host_errors]

    return check


def _released(r: CodeResult, ctx: Ctx) -> None:
    ctx.extra["release"].set()


def _flaky_called(n: int) -> Any:
    def check(r: CodeResult, ctx: Ctx) -> None:
        assert len(ctx.calls) == n, len(ctx.calls)
        assert len(r.host_errors) == n, r.host_errors[:2]

    return check


CASES = [
    Case(
        "report-callback-stuck-program-loops",
        "report(1); while (true) {}",
        "terminated",
        timeout=0.5,
        opts={"report": _stuck},
    ),
    Case(
        "report-callback-stuck-many-reports",
        "for (let i = 0; i < 100; i++) report(i); export default 'done'",
        "completes",
        result="done",
        timeout=1.0,
        exact_deadline=True,
        opts={"report": _stuck},
        check=_host_errors_mention("cancelled"),
    ),
    Case(
        "report-callback-stuck-program-awaits",
        "report(1); await new Promise(() => {})",
        "js_error",
        message="can never settle",
        timeout=0.5,
        opts={"report": _stuck},
    ),
    Case(
        "report-callback-blocks-thread",
        "report(1); report(2); while (true) {}",
        "terminated",
        timeout=0.5,
        max_wall=2 * BLOCK + 5.0,
        opts=_blocking_report,
        check=_released,
    ),
    Case(
        "host-fn-raises-cancelled",
        "let m; try { await flaky() } catch (e) { m = 'rejected' }\n"
        "export default [m, await fine()]",
        "completes",
        result=["rejected", 7],
        opts=_host,
        check=_flaky_called(1),
    ),
    Case(
        "host-fn-raises-cancelled-many",
        "const rs = await Promise.allSettled(Array.from({length: 20}, (_, i) => flaky(i)));\n"
        "export default [rs.filter((r) => r.status === 'rejected').length, await fine()]",
        "completes",
        result=[20, 7],
        opts=_host,
        check=_flaky_called(20),
    ),
    Case(
        "host-fn-raises-cancelled-unawaited",
        "flaky(1); flaky(2); export default await fine()",
        "completes",
        result=7,
        opts=_host,
    ),
    Case(
        "host-fn-raises-cancelled-program-loops",
        "flaky(1).catch(() => {}); await null; while (true) {}",
        "terminated",
        timeout=0.5,
        opts=_host,
    ),
]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", table(CASES), ids=case_id)
def test_a_callback_or_cancellation_ends_only_what_it_belongs_to(case: Case, ctx: Ctx) -> None:
    run_case(case, ctx)
