"""Approvals across processes: approve from a new process, and a process ending at each step
of an approval is recovered by another without running the tool twice (issue 26 items 3-4).

Every step runs in a spawned Python process on one database file: nothing lives only in one
process's memory. The approved tool appends a line to a file, so its side effect is counted
across processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

_WORKER = textwrap.dedent(
    """
    import json, os, sys
    import anyio
    from pydantic import BaseModel
    from quickjail import runtime
    from quickjail.runtime import ToolResult, code_mode_tool, define_tool
    from quickjail.runtime import _approvals

    db, counter, action, crash_at = sys.argv[1:5]

    class Transfer(BaseModel):
        to: str
        amount: int

    async def send(state, args):
        with open(counter, "a") as f:
            f.write(f"{args.to}:{args.amount}\\n")
        return ToolResult.success({"sent": args.amount, "to": args.to})

    async def lookup(state, args):
        return ToolResult.success(f"{args.to} is known")

    tools = [
        define_tool(name="send_money", description="Send money.", args=Transfer,
                    execute=send, requires_approval=True),
        define_tool(name="lookup", description="Look up.", args=Transfer, execute=lookup),
    ]
    PROGRAM = '''
    let sent;
    try { sent = await tools.send_money({to: "bob", amount: 7}); } catch (e) { sent = e.message; }
    const after = await tools.lookup({to: "eve", amount: 0});
    return {sent, after};
    '''

    def hook(step):
        if step == crash_at:
            os._exit(17)

    _approvals.STEP_HOOK = hook

    async def main():
        key = b"0123456789abcdef0123456789abcdef-test-key"
        async with runtime.Runtime(
            db, tools=[code_mode_tool(tools), *tools], secret_key=key
        ) as rt:
            thread = await rt.thread("t")
            if action == "start":
                results = await thread.execute_tool_calls(
                    [{"id": "code1", "name": "run_code", "arguments": {"code": PROGRAM}}]
                )
            elif action == "approve":
                (pending,) = await thread.pending_approvals()
                results = await thread.approve(pending.approval_id, decided_by="second process")
            elif action == "abandon":
                (pending,) = await thread.pending_approvals()
                results = [await thread.abandon(pending.approval_id, "no longer wanted")]
            else:
                results = await thread.recover_approvals()
        print(json.dumps([r.model_dump(mode="json") for r in results]))

    anyio.run(main)
    """
)


def _run(tmp_path: Path, action: str, crash_at: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            _WORKER,
            str(tmp_path / "agent.db"),
            str(tmp_path / "effects.txt"),
            action,
            crash_at,
        ],
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )


def _results(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    out: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _effects(tmp_path: Path) -> list[str]:
    path = tmp_path / "effects.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_a_program_paused_in_one_process_is_approved_from_another(tmp_path: Path) -> None:
    (waiting,) = _results(_run(tmp_path, "start"))
    assert waiting["status"] == "waiting" and waiting["call_id"] == "code1"
    (code,) = _results(_run(tmp_path, "approve"))
    assert code["status"] == "success", code
    assert code["result"]["result"] == {
        "sent": {"sent": 7, "to": "bob"},
        "after": "eve is known",
    }
    assert _effects(tmp_path) == ["bob:7"]


# what the code-mode call ends with after a process ended at each step and another recovered
_RECOVERED = {
    # decided, not started: the recovering process runs the tool, the program goes on
    "decided": ({"sent": {"sent": 7, "to": "bob"}, "after": "eve is known"}, 1),
    # marked running, ended before the tool was entered: never run (at most once)
    "running": ("interrupted", 0),
    # the tool ran, its result was not stored: recorded as interrupted, not run again
    "tool_ran": ("interrupted", 1),
    # the result was stored: the program resumes with it
    "settled": ({"sent": {"sent": 7, "to": "bob"}, "after": "eve is known"}, 1),
    # the program ran after its resume, its outcome was not stored: not resumed twice
    "resumed": ("interrupted", 1),
}


@pytest.mark.parametrize("step", sorted(_RECOVERED))
def test_a_process_ending_at_each_approval_step_never_runs_the_tool_twice(
    tmp_path: Path, step: str
) -> None:
    _results(_run(tmp_path, "start"))
    crashed = _run(tmp_path, "approve", crash_at=step)
    assert crashed.returncode == 17, crashed.stderr
    (code,) = _results(_run(tmp_path, "recover"))
    expected, runs = _RECOVERED[step]
    assert _effects(tmp_path) == ["bob:7"] * runs
    if expected == "interrupted":
        text = json.dumps(code)
        assert "interrupted" in text, code
    else:
        assert code["status"] == "success", code
        assert code["result"]["result"] == expected
    # recovered once: a second recovery and a second approval find nothing to do
    assert _results(_run(tmp_path, "recover")) == []
    again = _run(tmp_path, "approve")
    assert again.returncode != 0 and "ValueError" in again.stderr  # no pending approval left
    assert _effects(tmp_path) == ["bob:7"] * runs


def test_a_process_ending_while_it_abandons_is_recovered_without_reverting_twice(
    tmp_path: Path,
) -> None:
    _results(_run(tmp_path, "start"))
    crashed = _run(tmp_path, "abandon", crash_at="ending")
    assert crashed.returncode == 17, crashed.stderr
    (code,) = _results(_run(tmp_path, "recover"))
    assert code["status"] == "error" and code["error"].startswith("abandoned:")
    assert code["result"]["reverted"][0]["error"] == "interrupted; reverts not run again"
    assert _results(_run(tmp_path, "recover")) == []
    assert _effects(tmp_path) == []
