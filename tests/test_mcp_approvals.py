"""``quickjail mcp --tools``: a call that needs approval asks the client's user through MCP
elicitation, or waits for the approve / reject tools (issue 26 item 8), with the SDK's client."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the MCP server needs the 'mcp' extra")

import mcp.types as types  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KEY = "0123456789abcdef0123456789abcdef-mcp-approvals-key"

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

MODULE = """
from pydantic import BaseModel
from quickjail.runtime import ToolResult, define_tool

class Payment(BaseModel):
    to: str
    amount: int

async def _pay(state, args):
    with open(__file__ + ".effects", "a") as f:
        f.write(f"{args.to}:{args.amount}\\n")
    return ToolResult.success(f"paid {args.amount} to {args.to}")

pay = define_tool(name="pay", description="Pay someone.", args=Payment, execute=_pay,
                  requires_approval=True)
"""

PROGRAM = """
try {
  return await tools.pay({to: "bob", amount: 5});
} catch (e) {
  return `${e.name}: ${e.message}`;
}
"""


@pytest.fixture
def server(tmp_path: Path) -> tuple[tuple[str, ...], Path]:
    module = tmp_path / "pay_tools.py"
    module.write_text(MODULE, encoding="utf-8")
    args = ("--tools", str(module), "--tools-db", str(tmp_path / "tools.db"))
    return args, Path(f"{module}.effects")


@asynccontextmanager
async def connect(args: tuple[str, ...], elicit: Any = None) -> AsyncIterator[ClientSession]:
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env["QUICKJAIL_SECRET_KEY"] = KEY
    if "QUICKJAIL_CACHE_DIR" in os.environ:
        env["QUICKJAIL_CACHE_DIR"] = os.environ["QUICKJAIL_CACHE_DIR"]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "quickjail", "mcp", *args], env=env
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


def _answering(action: str, asked: list[str], reason: str | None = None) -> Any:
    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        content = {"reason": reason} if reason is not None else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return callback


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _effects(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_an_elicitation_that_accepts_runs_the_call_and_the_program_goes_on(
    server: tuple[tuple[str, ...], Path],
) -> None:
    args, effects = server
    asked: list[str] = []
    async with connect(args, _answering("accept", asked)) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        direct = await session.call_tool("pay", {"to": "ann", "amount": 3})
        code = await session.call_tool("run_code", {"code": PROGRAM})
    assert listed["pay"].meta == {"quickjail/requiresApproval": True}
    assert direct.is_error is False and _text(direct) == "paid 3 to ann"
    assert code.is_error is False, _text(code)
    assert code.structured_content is not None
    assert code.structured_content["result"] == "paid 5 to bob"
    assert len(asked) == 2 and "'pay'" in asked[1] and '"bob"' in asked[1]
    assert _effects(effects) == ["ann:3", "bob:5"]


async def test_an_elicitation_that_declines_rejects_the_call_in_the_program(
    server: tuple[tuple[str, ...], Path],
) -> None:
    args, effects = server
    asked: list[str] = []
    async with connect(args, _answering("decline", asked, reason="too much")) as session:
        direct = await session.call_tool("pay", {"to": "ann", "amount": 3})
        code = await session.call_tool("run_code", {"code": PROGRAM})
    assert direct.is_error is True and "rejected: too much" in _text(direct)
    assert code.structured_content is not None
    assert code.structured_content["result"] == "ApprovalDenied: rejected: too much"
    assert _effects(effects) == []


async def test_without_elicitation_the_call_waits_and_the_approve_tool_decides_it(
    server: tuple[tuple[str, ...], Path],
) -> None:
    args, effects = server
    async with connect(args) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        waiting = await session.call_tool("run_code", {"code": PROGRAM})
        assert waiting.is_error is True  # not run (yet)
        (approval_id,) = json.loads(_text(waiting))["approval_ids"]
        assert _effects(effects) == []
        other = await session.call_tool("approve_pending_call", {"approval_id": "apr_nope"})
        done = await session.call_tool("approve_pending_call", {"approval_id": approval_id})
        twice = await session.call_tool("reject_pending_call", {"approval_id": approval_id})
        direct = await session.call_tool("pay", {"to": "ann", "amount": 3})
        (second,) = json.loads(_text(direct))["approval_ids"]
        refused = await session.call_tool(
            "reject_pending_call", {"approval_id": second, "reason": "no"}
        )
    assert {"approve_pending_call", "reject_pending_call"} <= names
    assert other.is_error is True and "UnknownApprovalError" in _text(other)
    assert done.is_error is False, _text(done)
    # the approve tool declares no output schema: its results go once, as text
    assert done.structured_content is None
    assert json.loads(_text(done))["result"] == "paid 5 to bob"
    assert twice.is_error is True and "ApprovalDecidedError" in _text(twice)
    assert refused.is_error is True and "rejected: no" in _text(refused)
    assert _effects(effects) == ["bob:5"]
