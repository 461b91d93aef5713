"""Approvals: tools that wait for a person, at top level and inside code mode (issue 26)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from quickjail import runtime
from quickjail.runtime import ToolResult, code_mode_tool, define_tool, export_tools
from quickjail.runtime.errors import (
    ApprovalDecidedError,
    StoredRunError,
    ToolDefinitionError,
    ToolRuntimeError,
    UnknownApprovalError,
)

pytestmark = pytest.mark.anyio

_KEY = b"a key for these tests, of at least 32 bytes"


class Transfer(BaseModel):
    to: str
    amount: int


def _tools(log: list[Any], rule: Any = True) -> list[runtime.Tool]:
    async def send(state: Any, args: Transfer) -> ToolResult:
        log.append((args.to, args.amount))
        return ToolResult.success({"sent": args.amount, "to": args.to})

    async def lookup(state: Any, args: Transfer) -> ToolResult:
        log.append(("lookup", args.to))
        return ToolResult.success(f"{args.to} is known")

    return [
        define_tool(
            name="send_money",
            description="Send money.",
            args=Transfer,
            execute=send,
            requires_approval=rule,
        ),
        define_tool(name="lookup", description="Look someone up.", args=Transfer, execute=lookup),
    ]


def _call(call_id: str, name: str, to: str = "bob", amount: int = 5) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": {"to": to, "amount": amount}}


# ------------------------------------------------------------------ item 1: declaring it


def test_requires_approval_is_a_bool_or_a_callable_and_is_exported() -> None:
    log: list[Any] = []
    send, lookup = _tools(log)
    assert send.requires_approval is True and lookup.requires_approval is False
    (mcp,) = export_tools([send], "mcp")
    assert mcp["_meta"] == {"quickjail/requiresApproval": True}
    assert "_meta" not in export_tools([lookup], "mcp")[0]
    per_call = _tools(log, rule=lambda args, state: args.amount > 100)[0]
    assert export_tools([per_call], "standard")[0]["requires_approval"] == "per-call"
    with pytest.raises(ToolDefinitionError, match="requires_approval"):
        define_tool(name="x", description="x", execute=send.as_function(), requires_approval="yes")  # type: ignore[arg-type]


async def test_a_per_call_rule_decides_which_calls_wait(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log, rule=lambda args, state: args.amount > 100)
    async with open_runtime(tools=tools) as rt:
        thread = await rt.thread("t")
        small, big = await thread.execute_tool_calls(
            [_call("c1", "send_money", amount=5), _call("c2", "send_money", amount=500)]
        )
        assert small.status == "success" and big.status == "waiting"
        assert log == [("bob", 5)]


async def test_a_rule_that_raises_makes_the_call_wait(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    def broken(args: Any, state: Any) -> bool:
        raise RuntimeError("boom")

    log: list[Any] = []
    async with open_runtime(tools=_tools(log, rule=broken)) as rt:
        thread = await rt.thread("t")
        (result,) = await thread.execute_tool_calls([_call("c1", "send_money")])
        assert result.status == "waiting" and log == []


# ------------------------------------------------------------------ item 2: top-level calls


async def test_a_batch_stops_at_an_approval_and_approve_runs_it_then_the_rest(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log)) as rt:
        thread = await rt.thread("t")
        results = await thread.execute_tool_calls(
            [_call("c1", "lookup"), _call("c2", "send_money"), _call("c3", "lookup", to="eve")]
        )
        assert [r.status for r in results] == ["success", "waiting"]
        assert log == [("lookup", "bob")]
        (pending,) = await thread.pending_approvals()
        assert pending.tool_name == "send_money" and pending.call_id == "c2"
        assert pending.arguments == {"to": "bob", "amount": 5}
        assert pending.approval_id in results[1].result["approval_ids"]
        after = await thread.approve(pending.approval_id, decided_by="alice")
        assert [(r.call_id, r.status) for r in after] == [("c2", "success"), ("c3", "success")]
        assert log == [("lookup", "bob"), ("bob", 5), ("lookup", "eve")]
        assert await thread.pending_approvals() == []
        messages = await runtime.helpers.get_messages(thread.state)
        kinds = [(m.kind, m.tool_call_id) for m in messages]
        assert kinds == [
            ("tool_call", "c1"),
            ("tool_result", "c1"),
            ("tool_call", "c2"),
            ("tool_result", "c2"),
            ("tool_call", "c3"),
            ("tool_result", "c3"),
        ]
        with pytest.raises(ApprovalDecidedError):
            await thread.approve(pending.approval_id)
        with pytest.raises(ApprovalDecidedError):
            await thread.reject(pending.approval_id, "too late")
        assert log.count(("bob", 5)) == 1


async def test_reject_stores_an_error_result_and_the_batch_goes_on(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log)) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_call("c1", "send_money"), _call("c2", "lookup")])
        (pending,) = await thread.pending_approvals()
        first, second = await thread.reject(pending.approval_id, "not today")
        assert first.status == "error" and first.error == "rejected: not today"
        assert second.status == "success" and log == [("lookup", "bob")]


async def test_a_second_waiting_call_in_the_rest_waits_again(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log)) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls(
            [_call("c1", "send_money"), _call("c2", "send_money", to="eve"), _call("c3", "lookup")]
        )
        (first,) = await thread.pending_approvals()
        after = await thread.approve(first.approval_id)
        assert [r.status for r in after] == ["success", "waiting"]
        (second,) = await thread.pending_approvals()
        assert second.call_id == "c2"
        after = await thread.reject(second.approval_id, "no")
        assert [r.status for r in after] == ["error", "success"]
        assert log == [("bob", 5), ("lookup", "bob")]


async def test_unknown_and_foreign_approval_ids_are_refused(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log)) as rt:
        mine, other = await rt.thread("a"), await rt.thread("b")
        await mine.execute_tool_calls([_call("c1", "send_money")])
        (pending,) = await mine.pending_approvals()
        with pytest.raises(UnknownApprovalError):
            await mine.approve("apr_nope")
        with pytest.raises(UnknownApprovalError) as raised:
            await other.approve(pending.approval_id)
        assert isinstance(raised.value, ToolRuntimeError)
        with pytest.raises(TypeError):
            await mine.approve(None)  # type: ignore[arg-type]
        assert log == [] and len(await mine.pending_approvals()) == 1


async def test_concurrent_approve_and_reject_decide_once(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log)) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_call("c1", "send_money")])
        (pending,) = await thread.pending_approvals()
        outcomes: list[str] = []

        async def decide(how: str) -> None:
            try:
                if how == "approve":
                    await thread.approve(pending.approval_id)
                else:
                    await thread.reject(pending.approval_id, "no")
                outcomes.append(how)
            except ApprovalDecidedError:
                outcomes.append("refused")

        async with anyio.create_task_group() as tg:
            tg.start_soon(decide, "approve")
            tg.start_soon(decide, "reject")
        assert outcomes.count("refused") == 1 and len(outcomes) == 2
        assert log.count(("bob", 5)) == (1 if "approve" in outcomes else 0)


async def test_a_pending_call_with_a_secret_argument_is_stored_encrypted(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log), agent_env={"TOKEN": "hunter2-secret"}) as rt:
        thread = await rt.thread("t")
        await thread.state.set_env("PIN", "hunter2-secret", type="secret")
        await thread.execute_tool_calls([_call("c1", "send_money", to="hunter2-secret")])
        (pending,) = await thread.pending_approvals()
        assert pending.arguments["to"] == "[REDACTED]"
        (result,) = await thread.approve(pending.approval_id)
        assert result.status == "success"
        assert log == [("hunter2-secret", 5)]  # the tool got the real value
    for path in db_path.parent.glob(f"{db_path.name}*"):
        assert b"hunter2-secret" not in await anyio.Path(path).read_bytes()


# ------------------------------------------------------------------ item 3: code mode

_PROGRAM = """
const a = await tools.lookup({to: "bob", amount: 1}, {raw: true});
let sent;
try {
  sent = await tools.send_money({to: "bob", amount: 7});
} catch (e) {
  return {denied: e.name, message: e.message, a: a.status};
}
return {a: a.status, sent};
"""


def _code_call(call_id: str = "code1", program: str = _PROGRAM) -> dict[str, Any]:
    return {"id": call_id, "name": "run_code", "arguments": {"code": program}}


async def test_a_program_pauses_at_an_approval_and_resumes_with_the_tool_value(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        (waiting,) = await thread.execute_tool_calls([_code_call(), _call("c9", "lookup")])
        assert waiting.status == "waiting" and waiting.call_id == "code1"
        assert log == [("lookup", "bob")]
        (pending,) = await thread.pending_approvals()
        assert pending.tool_name == "send_money" and pending.parent_call_id == "code1"
        assert pending.arguments == {"to": "bob", "amount": 7}
        code, rest = await thread.approve(pending.approval_id)
        assert code.call_id == "code1" and code.status == "success", code
        assert code.result["result"] == {"a": "success", "sent": {"sent": 7, "to": "bob"}}
        assert rest.call_id == "c9" and rest.status == "success"
        assert log == [("lookup", "bob"), ("bob", 7), ("lookup", "bob")]
        nested = [m for m in await runtime.helpers.get_messages(thread.state) if m.parent_call_id]
        assert [(m.kind, m.tool_name) for m in nested] == [
            ("tool_call", "lookup"),
            ("tool_result", "lookup"),
            ("tool_call", "send_money"),
            ("tool_result", "send_money"),
        ]


async def test_a_raw_call_that_waited_for_approval_resumes_with_the_whole_result(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    program = """
    const raw = await tools.send_money({to: "bob", amount: 7}, {raw: true});
    const value = await tools.send_money({to: "eve", amount: 1});
    return {raw, value};
    """
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_code_call(program=program)])
        (first,) = await thread.pending_approvals()
        (waiting,) = await thread.approve(first.approval_id)
        assert waiting.status == "waiting"
        (second,) = await thread.pending_approvals()
        (code,) = await thread.approve(second.approval_id)
        assert code.status == "success", code
        assert code.result["result"] == {
            "raw": {"status": "success", "result": {"sent": 7, "to": "bob"}, "error": None},
            "value": {"sent": 1, "to": "eve"},
        }


async def test_a_rejected_call_rejects_with_approval_denied_in_the_program(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_code_call()])
        (pending,) = await thread.pending_approvals()
        (code,) = await thread.reject(pending.approval_id, "over budget")
        assert code.status == "success"
        assert code.result["result"] == {
            "denied": "ApprovalDenied",
            "message": "rejected: over budget",
            "a": "success",
        }
        assert log == [("lookup", "bob")]


async def test_a_program_can_wait_for_two_approvals_at_once_and_again_later(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    program = """
    const [x, y] = await Promise.all([
      tools.send_money({to: "a", amount: 1}), tools.send_money({to: "b", amount: 2})]);
    const z = await tools.send_money({to: "c", amount: 3});
    return [x.to, y.to, z.to];
    """
    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_code_call(program=program)])
        pending = await thread.pending_approvals()
        # the two calls of Promise.all run concurrently: either may have waited first
        first, second = sorted(pending, key=lambda p: str(p.arguments["to"]))
        (still,) = await thread.approve(first.approval_id)
        assert still.status == "waiting" and log == [("a", 1)]
        (again,) = await thread.approve(second.approval_id)
        assert again.status == "waiting" and again.call_id == "code1"
        (third,) = await thread.pending_approvals()
        assert third.arguments == {"to": "c", "amount": 3}
        (code,) = await thread.approve(third.approval_id)
        assert code.result["result"] == ["a", "b", "c"]
        assert log == [("a", 1), ("b", 2), ("c", 3)]


async def test_a_tampered_stored_program_is_refused_and_nothing_runs(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    import sqlite3

    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_code_call()])
        (pending,) = await thread.pending_approvals()
        conn = sqlite3.connect(db_path)
        blob = bytearray(conn.execute("SELECT continuation FROM pauses").fetchone()[0])
        blob[len(blob) // 2] ^= 1
        conn.execute("UPDATE pauses SET continuation = ?", (bytes(blob),))
        conn.commit()
        conn.close()
        with pytest.raises(StoredRunError):
            await thread.approve(pending.approval_id)
        with pytest.raises(StoredRunError):
            await thread.reject(pending.approval_id, "no")
        assert log == [("lookup", "bob")]  # the approved tool did not run
        assert [p.approval_id for p in await thread.pending_approvals()] == [pending.approval_id]


# ------------------------------------------------------------------ item 5: expiry, abandon


def _revertible(log: list[Any], fail_on: str | None = None) -> list[runtime.Tool]:
    async def book(state: Any, args: Transfer) -> ToolResult:
        log.append(("book", args.to))
        return ToolResult.success({"booking": f"B-{args.to}"})

    async def unbook(state: Any, args: Transfer, result: Any) -> None:
        if args.to == fail_on:
            raise RuntimeError(f"cannot cancel {result['booking']}")
        log.append(("unbook", args.to, result["booking"]))

    booking = define_tool(
        name="book", description="Book.", args=Transfer, execute=book, revert=unbook
    )
    return [booking, *_tools(log)]


async def test_abandon_reverts_the_programs_calls_newest_first_and_ends_the_batch(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    program = """
    await tools.book({to: "hotel", amount: 1});
    await tools.book({to: "train", amount: 1});
    await tools.book({to: "car", amount: 1});
    await tools.send_money({to: "bob", amount: 9});
    return "all done";
    """
    log: list[Any] = []
    tools = _revertible(log, fail_on="train")
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_code_call(program=program), _call("c2", "lookup")])
        (pending,) = await thread.pending_approvals()
        code = await thread.abandon(pending.approval_id, "changed my mind")
        assert code.status == "error" and code.error == "abandoned: changed my mind"
        reverted = code.result["reverted"]
        assert [(r["tool"], r["status"]) for r in reverted] == [
            ("book", "success"),
            ("book", "error"),  # the revert that raised is reported, the next one still runs
            ("book", "success"),
        ]
        assert "cannot cancel B-train" in reverted[1]["error"]
        assert log == [
            ("book", "hotel"),
            ("book", "train"),
            ("book", "car"),
            ("unbook", "car", "B-car"),
            ("unbook", "hotel", "B-hotel"),
        ]
        assert [c["tool"] for c in code.result["calls"]] == ["book", "book", "book"]
        assert await thread.pending_approvals() == []
        with pytest.raises(ApprovalDecidedError):
            await thread.approve(pending.approval_id)
        with pytest.raises(ApprovalDecidedError):
            await thread.abandon(pending.approval_id)
        messages = await runtime.helpers.get_messages(thread.state)
        later = [m for m in messages if m.tool_call_id == "c2" and m.kind == "tool_result"]
        assert later[0].content["status"] == "error"
        assert "not run" in later[0].content["error"]
        assert ("lookup", "bob") not in log


async def test_a_pending_approval_expires_and_its_batch_ends_expired(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    # a timeout far below the time a code run takes: expired by the next look
    async with open_runtime(tools=[code_mode_tool(tools), *tools], approval_timeout=1e-9) as rt:
        thread = await rt.thread("t")
        (waiting,) = await thread.execute_tool_calls([_code_call()])
        assert waiting.status == "waiting"
        approval_id = waiting.result["approval_ids"][0]
        assert await thread.pending_approvals() == []
        with pytest.raises(ApprovalDecidedError, match="expired"):
            await thread.approve(approval_id)
        messages = await runtime.helpers.get_messages(thread.state)
        (final,) = [m for m in messages if m.tool_call_id == "code1" and m.kind == "tool_result"]
        assert final.content["status"] == "error"
        assert final.content["error"].startswith("expired: not decided within")
        assert log == [("lookup", "bob")]


def test_approval_timeout_is_checked(db_path: Path) -> None:
    for bad in (0, -1, "1", True):
        with pytest.raises(ValueError):
            runtime.Runtime(db_path, approval_timeout=bad)  # type: ignore[arg-type]


# ------------------------------------------------------------------ item 6: the call log


async def test_the_code_mode_result_logs_each_call_with_its_decision(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools], agent_env={"X": "1"}) as rt:
        thread = await rt.thread("t")
        await thread.state.set_env("PIN", "bob", type="secret")  # "bob" is now redacted
        await thread.execute_tool_calls([_code_call()])
        (pending,) = await thread.pending_approvals()
        (code,) = await thread.approve(pending.approval_id, decided_by="alice")
        calls = code.result["calls"]
        assert [(c["tool"], c["status"]) for c in calls] == [
            ("lookup", "success"),
            ("send_money", "success"),
        ]
        assert calls[0]["arguments"] == {"to": "[REDACTED]", "amount": 1}
        assert calls[1]["approval"] == {
            "id": pending.approval_id,
            "decision": "approved",
            "decided_by": "alice",
        }
        assert all(isinstance(c["duration_s"], float) for c in calls)
        messages = await runtime.helpers.get_messages(thread.state)
        (stored,) = [m for m in messages if m.tool_call_id == "code1" and m.kind == "tool_result"]
        assert stored.content["result"]["calls"] == calls


# ------------------------------------------------------------------ item 7: secrets at rest


async def test_the_paused_program_is_stored_encrypted_and_bound_to_its_row(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    import sqlite3

    from quickjail.runtime._approvals_data import approval_context
    from quickjail.runtime._secrets import SecretBox

    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools], secret_key=_KEY) as rt:
        thread = await rt.thread("t")
        (waiting,) = await thread.execute_tool_calls([_code_call()])
        assert "QJCONT" not in repr(waiting.result)  # nothing of it goes back to the model
        conn = sqlite3.connect(db_path)
        pause_id, blob = conn.execute("SELECT id, continuation FROM pauses").fetchone()
        conn.close()
        assert b"QJCONT" not in blob  # the sealed bytes' header is not visible at rest
        box = SecretBox(_KEY)
        context = approval_context(thread._core, "continuation", pause_id)
        assert box.decrypt_bytes(blob, context).startswith(b"QJCONT")
        with pytest.raises(runtime.errors.SecretKeyError):
            box.decrypt_bytes(blob, approval_context(thread._core, "continuation", "other"))


async def test_another_secret_key_or_edited_arguments_run_nothing(
    open_runtime: Callable[..., runtime.Runtime], db_path: Path
) -> None:
    import sqlite3

    log: list[Any] = []
    async with open_runtime(tools=_tools(log)) as rt:
        thread = await rt.thread("t")
        await thread.execute_tool_calls([_call("c1", "send_money")])
        (pending,) = await thread.pending_approvals()
    other_key = b"another key of at least 32 bytes, not the first"
    async with open_runtime(tools=_tools(log), secret_key=other_key) as rt:
        with pytest.raises(StoredRunError):
            await (await rt.thread("t")).approve(pending.approval_id)
    conn = sqlite3.connect(db_path)
    blob = bytearray(conn.execute("SELECT sealed_arguments FROM approvals").fetchone()[0])
    blob[-1] ^= 1
    conn.execute("UPDATE approvals SET sealed_arguments = ?", (bytes(blob),))
    conn.commit()
    conn.close()
    async with open_runtime(tools=_tools(log)) as rt:
        thread = await rt.thread("t")
        with pytest.raises(StoredRunError):
            await thread.approve(pending.approval_id)
        assert [p.approval_id for p in await thread.pending_approvals()] == [pending.approval_id]
    assert log == []


async def test_a_call_that_cannot_be_stored_waiting_fails_as_a_result(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    async with open_runtime(tools=_tools(log), max_thread_bytes=3000) as rt:
        thread = await rt.thread("t")
        calls = [_call("c1", "send_money", to="x" * 2000), _call("c2", "lookup", to="y")]
        first, second = await thread.execute_tool_calls(calls)
        assert first.status == "error" and "cannot wait for approval" in (first.error or "")
        assert "ThreadQuotaError" not in repr(second) and second.status == "success"
        assert await thread.pending_approvals() == [] and log == [("lookup", "y")]


async def test_without_a_secret_key_a_program_cannot_wait_and_the_call_fails(
    db_path: Path,
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    program = (
        "try { await tools.send_money({to: 'bob', amount: 7}); } catch (e) { return e.message; }"
    )
    async with runtime.Runtime(db_path, tools=[code_mode_tool(tools), *tools]) as rt:
        thread = await rt.thread("t")
        (code,) = await thread.execute_tool_calls([_code_call(program=program)])
        assert code.status == "success"
        assert "needs Runtime(secret_key=...)" in code.result["result"]
        assert await thread.pending_approvals() == [] and log == []
        # at top level the call waits all the same (its arguments hold no secret)
        (top,) = await thread.execute_tool_calls([_call("c1", "send_money")])
        assert top.status == "waiting"


async def test_two_runtimes_on_one_file_deciding_at_once_decide_once(
    open_runtime: Callable[..., runtime.Runtime],
) -> None:
    log: list[Any] = []
    tools = _tools(log)
    async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
        await (await rt.thread("t")).execute_tool_calls([_code_call()])
    outcomes: list[str] = []

    async def decide(how: str) -> None:
        async with open_runtime(tools=[code_mode_tool(tools), *tools]) as rt:
            thread = await rt.thread("t")
            (pending,) = await thread.pending_approvals() or [None]
            try:
                if pending is None:
                    raise ApprovalDecidedError("decided before it was listed")
                if how == "approve":
                    await thread.approve(pending.approval_id)
                else:
                    await thread.reject(pending.approval_id, "no")
                outcomes.append(how)
            except ApprovalDecidedError:
                outcomes.append("refused")

    async with anyio.create_task_group() as tg:
        for how in ("approve", "reject", "approve", "reject"):
            tg.start_soon(decide, how)
    assert len(outcomes) == 4 and outcomes.count("refused") == 3
    assert log.count(("bob", 7)) == (1 if "approve" in outcomes else 0)
