"""A sync run with async host functions, called from code that runs an event loop (a notebook
cell, an async framework calling a sync tool): it runs on a loop of its own, on another thread
(issue 29 item 16)."""

from __future__ import annotations

import threading

import anyio
import anyio.lowlevel
import pytest

from quickjail import bridge

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


async def test_run_code_sync_with_an_async_host_function_works_inside_a_running_loop() -> None:
    caller = threading.get_ident()
    seen: list[int] = []

    async def double(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        seen.append(threading.get_ident())
        return x * 2

    reports: list[object] = []

    async def report(value: object) -> None:
        reports.append(value)

    result = bridge.run_code_sync(
        "report('start'); export default await double(21)",
        globals={"double": double},
        report=report,
    )
    assert (result.status, result.result) == ("success", 42), result.error
    assert reports == ["start"]
    assert seen and seen[0] != caller  # on the private loop's thread, not the caller's


async def test_a_failing_async_host_function_still_fails_the_run_inside_a_running_loop() -> None:
    async def boom() -> None:
        raise bridge.HostError("no such record")

    result = bridge.run_code_sync("export default await boom()", globals={"boom": boom})
    assert result.status == "error"
    assert result.error is not None and result.error.message == "no such record"


async def test_langchain_sync_invoke_with_an_async_host_function_inside_a_running_loop() -> None:
    pytest.importorskip("langchain_core")
    from quickjail.integrations.langchain import run_code_tool

    async def lookup(key: str) -> str:
        await anyio.lowlevel.checkpoint()
        return key.upper()

    tool = run_code_tool(globals={"lookup": lookup})
    answer = tool.invoke({"code": "return await lookup('abc')"})
    assert (answer["status"], answer["result"]) == ("success", "ABC"), answer
