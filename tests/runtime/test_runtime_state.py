"""ThreadState: variables and their layers, scoped and required variables, thread files."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolResult, Variable, define_tool
from quickjail.runtime.errors import (
    MissingVariablesError,
    SecretKeyError,
    ThreadFileNotFoundError,
    ThreadPathError,
)

pytestmark = pytest.mark.anyio


async def _read_api_key(state: ThreadState) -> ToolResult:
    return ToolResult.success(await state.env("API_URL"))


NEEDS_URL = define_tool(
    description="needs a URL",
    execute=_read_api_key,
    name="needs_url",
    variables=[Variable("API_URL", required=True, description="Service URL")],
)


async def test_missing_required_variable_refuses_the_thread_before_any_tool_runs(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    ran = []

    async def execute(state: ThreadState) -> ToolResult:
        ran.append(True)
        return ToolResult.success()

    tool = define_tool(
        description="needs two",
        execute=execute,
        name="needs_two",
        variables=[Variable("REGION", required=True), Variable("OPTIONAL_ONE")],
    )
    async with open_runtime(tools=[tool]) as rt:
        with pytest.raises(MissingVariablesError) as caught:
            await rt.thread("t-missing")
        assert caught.value.missing == [("REGION", "needs_two", "")]
        other = await rt.thread(tools=[])
        (result,) = [await tool.call({}, other.state)]  # a tool the thread does not have
    assert ran == []
    assert result.status == "error"
    assert result.error == (
        "tool 'needs_two' requires variable 'REGION', which is not set (prompt, agent or thread)"
    )


async def test_required_variable_is_satisfied_by_any_layer(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(tools=[NEEDS_URL], agent_env={"API_URL": "agent"}) as rt:
        state = (await rt.thread()).state
        assert (await NEEDS_URL.call({}, state)).result == "agent"
    async with open_runtime(tools=[NEEDS_URL]) as rt:
        state = (await rt.thread(env={"API_URL": "thread"})).state
        assert (await NEEDS_URL.call({}, state)).result == "thread"


async def test_variables_merge_prompt_then_agent_then_thread_later_layers_winning(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(
        prompt_env={"A": "prompt", "B": "prompt", "C": "prompt"},
        agent_env={"A": "agent", "B": "agent"},
    ) as rt:
        thread = await rt.thread(env={"A": "thread"})
        state = thread.state
        assert [await state.env(n) for n in "ABCD"] == ["thread", "agent", "prompt", None]
        other = await rt.thread(prompt_env={"D": "per-thread prompt"}, agent_env={"B": "own"})
        assert await other.state.env("D") == "per-thread prompt"
        assert await other.state.env("B") == "own"
        assert await other.state.env("A") == "agent"


async def test_thread_variables_persist_across_runtimes(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime() as rt:
        thread = await rt.thread("t-persist")
        await thread.state.set_env("MODE", "fast")
        await thread.state.set_env("TOKEN", "s3cr3t-token-value", type="secret")
    async with open_runtime() as rt:
        state = (await rt.thread("t-persist")).state
        assert await state.env("MODE") == "fast"
        assert await state.env("TOKEN") == "s3cr3t-token-value"


async def test_setting_a_secret_without_a_key_is_a_clear_error(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(secret_key=None) as rt:
        state = (await rt.thread()).state
        with pytest.raises(SecretKeyError, match="secret_key"):
            await state.set_env("TOKEN", "value", type="secret")
        assert await state.env("TOKEN") is None  # nothing was stored in plain text


async def test_reading_a_secret_without_the_key_is_a_clear_error(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime() as rt:
        await (await rt.thread("t")).state.set_env("TOKEN", "value-123", type="secret")
    async with open_runtime(secret_key=None) as rt:
        state = (await rt.thread("t")).state
        with pytest.raises(SecretKeyError, match="TOKEN"):
            await state.env("TOKEN")


async def test_wrong_key_cannot_decrypt_secrets(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime() as rt:
        await (await rt.thread("t")).state.set_env("TOKEN", "value-123", type="secret")
    async with open_runtime(secret_key=b"another key that is long enough!!!") as rt:
        with pytest.raises(SecretKeyError, match="wrong secret_key"):
            await rt.thread("t")


async def test_short_secret_key_is_refused(open_runtime: Callable[..., runtime.Runtime]) -> None:
    with pytest.raises(SecretKeyError, match="32 bytes"):
        open_runtime(secret_key=b"short")


async def test_variable_declared_secret_is_stored_as_secret_whatever_type_says(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    tool = define_tool(
        description="x",
        execute=_read_api_key,
        name="declares_secret",
        variables=[Variable("PASSWORD", type="secret")],
    )
    async with open_runtime(tools=[tool], secret_key=None) as rt:
        state = (await rt.thread()).state
        with pytest.raises(SecretKeyError):
            await state.set_env("PASSWORD", "plain?")


async def test_execution_state_and_turn_count_track_batches(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    seen: list[tuple[int, int, str, bool]] = []

    async def probe(state: ThreadState) -> ToolResult:
        ex = state.execution
        seen.append((state.turn_count, ex.step_count, ex.current_side, ex.abort_signal.aborted))
        return ToolResult.success()

    tool = define_tool(description="probe", execute=probe, name="probe")
    call = {"type": "function_call", "call_id": "c", "name": "probe", "arguments": "{}"}
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread("turns")
        assert thread.state.turn_count == 0
        await thread.execute_tool_calls([call, call])
        await thread.execute_tool_calls([call])
    async with open_runtime(tools=[tool]) as rt:
        assert (await rt.thread("turns")).state.turn_count == 2
    assert seen == [(1, 1, "a", False), (1, 2, "a", False), (2, 1, "a", False)]


# ----------------------------------------------------------------------------- files


async def test_thread_files_round_trip_and_list(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    await state.write_file("notes/today.txt", "hello")
    await state.write_file("/notes/raw.bin", b"\x00\x01")
    await state.write_file("top.md", "# top")
    assert await state.read_file("/notes/today.txt") == b"hello"
    assert await state.read_file("notes/raw.bin") == b"\x00\x01"
    assert await state.list_files() == ["/notes/raw.bin", "/notes/today.txt", "/top.md"]
    assert await state.list_files("notes") == ["/notes/raw.bin", "/notes/today.txt"]
    with pytest.raises(ThreadFileNotFoundError):
        await state.read_file("missing.txt")


async def test_thread_files_are_private_to_their_thread(rt: runtime.Runtime) -> None:
    a, b = (await rt.thread()).state, (await rt.thread()).state
    await a.write_file("secret.txt", "a's")
    with pytest.raises(ThreadFileNotFoundError):
        await b.read_file("secret.txt")
    assert await b.list_files() == []


@pytest.mark.parametrize(
    "path",
    [
        "../etc/passwd",
        "a/../../b",
        "a/./b",
        "a//b",
        "//server/share",
        "C:/windows",
        "c:\\windows",
        "a\\b",
        "a\x00b",
        "a\nb",
        "",
        "/",
        "x" * 1025,
        "\ud800",
    ],
    ids=[
        "dotdot",
        "inner-dotdot",
        "dot",
        "empty-segment",
        "unc",
        "drive",
        "drive-backslash",
        "backslash",
        "nul",
        "newline",
        "empty",
        "root",
        "too-long",
        "surrogate",
    ],
)
async def test_traversing_or_malformed_paths_are_refused(rt: runtime.Runtime, path: str) -> None:
    state = (await rt.thread()).state
    with pytest.raises(ThreadPathError):
        await state.write_file(path, "x")
    with pytest.raises(ThreadPathError):
        await state.read_file(path)


async def test_non_string_path_is_refused(rt: runtime.Runtime) -> None:
    state = (await rt.thread()).state
    with pytest.raises(ThreadPathError, match="must be a str"):
        await state.read_file(b"bytes")  # type: ignore[arg-type]


class _Args(BaseModel):
    path: str


async def test_tools_use_files_through_their_state(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async def save(state: ThreadState, args: Any) -> ToolResult:
        await state.write_file(args.path, "saved")
        return ToolResult.success(await state.list_files())

    tool = define_tool(description="save", args=_Args, execute=save, name="save")
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        ok, bad = await thread.execute_tool_calls(
            [
                {
                    "id": "1",
                    "type": "function",
                    "function": {"name": "save", "arguments": '{"path": "a.txt"}'},
                },
                {
                    "id": "2",
                    "type": "function",
                    "function": {"name": "save", "arguments": '{"path": "../x"}'},
                },
            ]
        )
    assert ok.result == ["/a.txt"]
    assert bad.status == "error" and "ThreadPathError" in (bad.error or "")


async def test_execution_state_names_the_current_side_as_the_spec_does(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    sides: list[str] = []

    async def probe(state: ThreadState) -> ToolResult:
        sides.append(state.execution.current_side)
        return ToolResult.success()

    tool = define_tool(description="probe", execute=probe, name="probe")
    async with open_runtime(tools=[tool]) as rt:
        thread = await rt.thread()
        await thread.execute_tool_calls([{"id": "c", "name": "probe", "arguments": {}}])
        thread.state.execution.current_side = "b"  # a dual-agent host hands over
        await thread.execute_tool_calls([{"id": "d", "name": "probe", "arguments": {}}])
        execution = thread.state.execution
        with pytest.warns(DeprecationWarning, match="use current_side"):
            assert execution.side == "b"  # the old name still reads, with a warning
    assert sides == ["a", "b"]
    assert [f.name for f in dataclasses.fields(runtime.helpers.ExecutionState)] == [
        "step_count",
        "current_side",
        "abort_signal",
    ]
