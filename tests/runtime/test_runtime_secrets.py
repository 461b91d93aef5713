"""Secrets are encrypted at rest and redacted from everything stored or returned."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import ThreadState, ToolAttachment, ToolResult, Variable, define_tool
from quickjail.runtime.errors import MissingVariablesError

pytestmark = pytest.mark.anyio


def db_bytes(db_path: Path) -> bytes:
    """The raw bytes of the database file and its WAL, shared-memory and journal files."""
    out = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = Path(f"{db_path}{suffix}")
        if path.exists():
            out += path.read_bytes()
    return out


SECRET = "sk-live-7f3a9c-DO-NOT-LEAK"
PROMPT_SECRET = "prompt-level-secret-42"


class EchoArgs(BaseModel):
    text: str


async def _leak_in_result(state: ThreadState) -> ToolResult:
    token = await state.env("TOKEN")
    return ToolResult.success({"token": token, "nested": [f"Bearer {token}"], token or "": 1})


async def _leak_in_error(state: ThreadState) -> ToolResult:
    token = await state.env("TOKEN")
    raise RuntimeError(f"auth failed for {token}")


async def _leak_in_failure(state: ThreadState) -> ToolResult:
    return ToolResult.failure(f"bad token {await state.env('TOKEN')}", result=await state.env("K"))


async def _leak_in_file_and_attachment(state: ThreadState) -> ToolResult:
    token = await state.env("TOKEN") or ""
    await state.write_file("config.env", f"TOKEN={token}\n")
    await runtime.helpers.inject_message(state, f"the token is {token}")
    await runtime.helpers.emit_thread_event(state, "debug", {"token": token})
    attachment = ToolAttachment.from_bytes(f"{token}.txt", "text/plain", token.encode())
    return ToolResult.success("ok", attachments=[attachment])


async def _echo(state: ThreadState, args: Any) -> ToolResult:
    return ToolResult.success(args.text)


async def _leak_prompt_secret(state: ThreadState) -> ToolResult:
    return ToolResult.success(await state.env("PROMPT_KEY"))


TOOLS = [
    define_tool(description="r", execute=_leak_in_result, name="leak_result"),
    define_tool(description="e", execute=_leak_in_error, name="leak_error"),
    define_tool(description="f", execute=_leak_in_failure, name="leak_failure"),
    define_tool(description="a", execute=_leak_in_file_and_attachment, name="leak_files"),
    define_tool(description="echo", args=EchoArgs, execute=_echo, name="echo"),
    define_tool(
        description="p",
        execute=_leak_prompt_secret,
        name="leak_prompt",
        variables=[Variable("PROMPT_KEY", type="secret")],
    ),
]


def _calls() -> list[dict[str, Any]]:
    names = ["leak_result", "leak_error", "leak_failure", "leak_files", "leak_prompt"]
    calls: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"c{i}", "name": n, "input": {}} for i, n in enumerate(names)
    ]
    calls.append({"type": "tool_use", "id": "echo", "name": "echo", "input": {"text": SECRET}})
    return calls


async def test_secret_never_reaches_the_database_files_nor_any_returned_text(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    events: list[Any] = []
    async with open_runtime(
        tools=TOOLS,
        prompt_env={"PROMPT_KEY": PROMPT_SECRET},
        on_event=lambda *event: events.append(event),
    ) as rt:
        thread = await rt.thread("leaky")
        await thread.state.set_env("TOKEN", SECRET, type="secret")
        results = await thread.execute_tool_calls(_calls())
        messages = await runtime.helpers.get_messages(thread.state)
        rendered = runtime.helpers.render_results(results, "anthropic")
        file_text = await thread.state.read_file("config.env")
        attachment_path = results[3].attachments[0]
        assert isinstance(attachment_path, runtime.AttachmentRef)
        attachment = await thread.state.read_file(attachment_path.path)
        while_open = db_bytes(db_path)
        assert await thread.state.env("TOKEN") == SECRET  # still usable by tools

    returned = repr(results) + repr(messages) + repr(rendered) + repr(events)
    for secret in (SECRET, PROMPT_SECRET):
        assert secret not in returned
        assert secret.encode() not in file_text + attachment
        assert secret.encode() not in while_open
        assert secret.encode() not in db_bytes(db_path)
    assert "[REDACTED]" in results[0].result["token"]
    assert results[0].result == {
        "token": "[REDACTED]",
        "nested": ["Bearer [REDACTED]"],
        "[REDACTED]": 1,
    }
    assert results[1].error == "RuntimeError: auth failed for [REDACTED]"
    assert results[1].stack is not None and "[REDACTED]" in results[1].stack
    assert results[2].error == "bad token [REDACTED]"
    assert results[4].result == "[REDACTED]"
    assert results[5].result == "[REDACTED]"
    assert file_text == b"TOKEN=[REDACTED]\n"
    assert attachment_path.name == "_REDACTED_.txt"


async def test_secret_is_stored_encrypted_and_bound_to_its_row(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime() as rt:
        await (await rt.thread("a")).state.set_env("TOKEN", SECRET, type="secret")
        await (await rt.thread("b")).state.set_env("TOKEN", "other-secret", type="secret")
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute("SELECT thread_id, type, value FROM variables ORDER BY 1").fetchall()
        assert [(r[0], r[1]) for r in rows] == [("a", "secret"), ("b", "secret")]
        # move a's ciphertext onto b: it must not decrypt there
        conn.execute("UPDATE variables SET value = ? WHERE thread_id = 'b'", (rows[0][2],))
    conn.close()
    async with open_runtime() as rt:
        with pytest.raises(runtime.ToolRuntimeError, match="wrong secret_key or tampered"):
            await rt.thread("b")


async def test_overwriting_a_text_value_with_a_secret_leaves_no_plaintext_behind(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    async with open_runtime() as rt:
        state = (await rt.thread()).state
        await state.set_env("TOKEN", SECRET)  # oops, plain text
        await state.set_env("TOKEN", SECRET, type="secret")
        await state.write_file("x.txt", "filler" * 1000)
    assert SECRET.encode() not in db_bytes(db_path)


class KeyArgs(BaseModel):
    key: str


async def _store_key(state: ThreadState, args: KeyArgs) -> ToolResult:
    await state.set_env("API_KEY", args.key, type="secret")
    return ToolResult.success("stored")


async def test_a_secret_a_tool_stores_from_its_arguments_is_redacted_from_its_stored_call(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    store_key = define_tool(
        description="Store an API key.", args=KeyArgs, execute=_store_key, name="store_key"
    )
    call = {"type": "tool_use", "id": "k", "name": "store_key", "input": {"key": SECRET}}
    async with open_runtime(tools=[store_key]) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls([call])
        messages = await runtime.helpers.get_messages(thread.state)
        while_open = db_bytes(db_path)
    assert result.ok
    stored_call = next(m for m in messages if m.kind == "tool_call")
    assert stored_call.content == {"name": "store_key", "arguments": {"key": "[REDACTED]"}}
    assert SECRET not in repr(messages)
    assert SECRET.encode() not in while_open
    assert SECRET.encode() not in db_bytes(db_path)


async def _call_api(state: ThreadState) -> ToolResult:
    token = await state.env("API_TOKEN")
    if token is None:
        return ToolResult.failure("no token")
    return ToolResult.success({"sent": f"Authorization: Bearer {token}"})


def _code_mode_only() -> list[runtime.Tool]:
    """A runtime whose only tool is code mode, reaching a tool with a required secret."""
    call_api = define_tool(
        description="Call the API.",
        execute=_call_api,
        name="call_api",
        variables=[Variable("API_TOKEN", type="secret", required=True, description="API key")],
    )
    return [runtime.code_mode_tool([call_api])]


async def test_a_thread_without_a_required_variable_of_a_tool_reached_through_code_mode_is_refused(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    async with open_runtime(tools=_code_mode_only()) as rt:
        with pytest.raises(MissingVariablesError) as raised:
            await rt.thread("no-token")
        assert raised.value.missing == [("API_TOKEN", "call_api", "API key")]
        assert (await rt.thread("with-token", env={"API_TOKEN": SECRET})).thread_id


async def test_a_secret_of_a_tool_reached_through_code_mode_is_stored_encrypted_and_never_returned(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    code = (
        "const r = await tools.call_api({});\nconsole.log(r.sent);\nreport(r.sent);\nreturn r.sent;"
    )
    call = {"type": "tool_use", "id": "c", "name": "run_code", "input": {"code": code}}
    async with open_runtime(tools=_code_mode_only()) as rt:
        thread = await rt.thread("coded", env={"API_TOKEN": SECRET})
        (result,) = await thread.execute_tool_calls([call])
        messages = await runtime.helpers.get_messages(thread.state)
        rendered = await runtime.helpers.render_content([result], "mcp", thread.state)
        while_open = db_bytes(db_path)
    with sqlite3.connect(db_path) as conn:
        kinds = conn.execute("SELECT name, type FROM variables").fetchall()
    conn.close()
    assert kinds == [("API_TOKEN", "secret")]
    assert result.ok, result.error
    assert result.result["result"] == "Authorization: Bearer [REDACTED]"
    assert result.result["reports"] == ["Authorization: Bearer [REDACTED]"]
    nested = [m for m in messages if m.parent_call_id == "c"]
    assert [m.kind for m in nested] == ["tool_call", "tool_result"]
    assert nested[1].content["result"] == {"sent": "Authorization: Bearer [REDACTED]"}
    assert SECRET not in repr(result) + repr(messages) + repr(rendered)
    assert SECRET.encode() not in while_open
    assert SECRET.encode() not in db_bytes(db_path)


async def test_an_agent_layer_secret_of_a_tool_reached_through_code_mode_is_redacted(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    call = {
        "type": "tool_use",
        "id": "c",
        "name": "run_code",
        "input": {"code": "return (await tools.call_api({})).sent;"},
    }
    async with open_runtime(tools=_code_mode_only(), agent_env={"API_TOKEN": SECRET}) as rt:
        thread = await rt.thread()
        (result,) = await thread.execute_tool_calls([call])
        messages = await runtime.helpers.get_messages(thread.state)
    assert result.ok, result.error
    assert result.result["result"] == "Authorization: Bearer [REDACTED]"
    assert SECRET not in repr(result) + repr(messages)


async def test_a_secret_stored_in_clear_before_code_mode_declared_it_is_redacted_when_reopened(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    # what the code-mode tool's thread stored before its tools counted: the value as text
    async with open_runtime() as rt:
        await rt.thread("legacy", env={"API_TOKEN": SECRET})
    call = {
        "type": "tool_use",
        "id": "c",
        "name": "run_code",
        "input": {"code": "return (await tools.call_api({})).sent;"},
    }
    async with open_runtime(tools=_code_mode_only()) as rt:
        thread = await rt.thread("legacy")
        (result,) = await thread.execute_tool_calls([call])
        messages = await runtime.helpers.get_messages(thread.state)
    assert result.ok, result.error
    assert result.result["result"] == "Authorization: Bearer [REDACTED]"
    assert SECRET not in repr(result) + repr(messages)
