"""Describing what a program threw or produced never raises and stays bounded (issue 11:
items 3 (stack parsing), 11 and 16).

Most tests go through the public API (``run_code_sync``, the ``quickjail`` CLI and MCP server
as subprocesses); the compromised-guest tests hand ``error_from_guest`` (what the host calls
on every error record) hostile records directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from quickjail._cli import result_to_json
from quickjail.bridge import run_code_sync
from quickjail.sandbox import to_json_safe
from quickjail.sandbox._result import (
    MAX_ERROR_MESSAGE_CHARS,
    MAX_ERROR_NAME_CHARS,
    MAX_ERROR_STACK_CHARS,
    error_from_guest,
)

ROOT = Path(__file__).resolve().parents[1]


def failed(src: str, **kw: Any) -> Any:
    r = run_code_sync(src, **kw)
    assert r.status == "error", (r.status, r.result)
    assert r.error is not None
    return r.error


def test_a_crafted_stack_line_is_parsed_in_linear_time_and_kept_capped() -> None:
    stack = "at " + " (:1:1" * 400_000 + "!"  # the old regex backtracked quadratically on it
    began = time.monotonic()
    info = error_from_guest({"name": "Error", "message": "m", "stack": stack}, {"": "x"})
    assert time.monotonic() - began < 10  # linear: milliseconds; quadratic: hours
    assert info.line is None
    assert len(info.stack) <= MAX_ERROR_STACK_CHARS + 50
    assert info.stack.endswith("characters]")


def test_a_crafted_stack_through_the_public_api_ends_as_an_ordinary_error() -> None:
    error = failed(
        """
        const e = new Error("crafted");
        e.stack = "at " + " (:1:1".repeat(200000) + "!";
        throw e;
        """,
        timeout=30,
    )
    assert error.message == "crafted"
    assert len(error.stack) <= MAX_ERROR_STACK_CHARS + 50


def test_the_user_frame_is_still_found_after_the_linear_parser() -> None:
    files = {"main.js": "a\nb\nc", "my (1).js": "x"}
    stack = "    at f (weird (name)) (main.js:3:2)\n    at <anonymous> (my (1).js:1:1)"
    info = error_from_guest({"name": "E", "message": "m", "stack": stack}, files)
    assert (info.filename, info.line, info.column) == ("main.js", 3, 2)
    info = error_from_guest({"name": "E", "message": "m", "stack": "at main.js:2:1"}, files)
    assert (info.filename, info.line, info.column) == ("main.js", 2, 1)


HUGE = "2n ** 20000n"  # 6,021 decimal digits: past CPython's default int-digit limit


def test_throwing_a_huge_bigint_is_an_error_outcome_not_an_exception() -> None:
    r = run_code_sync(f"throw {HUGE}")
    assert r.status == "error" and r.error is not None
    assert r.error.value == 2**20000
    assert r.error.message.startswith('Uncaught {"$bigint": "0x1')
    assert "bit int>" in repr(r)


def test_a_huge_bigint_result_and_log_serialize_as_json() -> None:
    r = run_code_sync(f"console.log({HUGE}); report({HUGE}); export default {HUGE}")
    assert r.status == "success"
    text = json.dumps(result_to_json(r))  # the CLI's --json and the MCP server use this
    data = json.loads(text)
    assert int(data["result"]["$bigint"], 16) == 2**20000
    assert data["reports"] == [data["result"]]
    assert data["logs"][0]["args"] == [data["result"]]
    assert to_json_safe(-(2**20000)) == {"$bigint": "-" + format(2**20000, "#x")}
    assert to_json_safe(10**4299) == 10**4299  # ints within the limit stay ints


def test_error_from_guest_never_raises_on_hostile_records() -> None:
    big = 2**100_000
    for record in (big, {"thrown": big}, {"name": big, "message": [big], "stack": {"x": big}}):
        info = error_from_guest(record, {})
        assert len(info.message) <= MAX_ERROR_MESSAGE_CHARS + 50
        repr(info)


def test_error_message_name_and_stack_are_capped_with_a_marker() -> None:
    error = failed("const e = new Error('m'.repeat(1000000)); e.name = 'N'.repeat(10000); throw e")
    assert error.message.startswith("m" * 100) and error.message.endswith("characters]")
    assert len(error.message) <= MAX_ERROR_MESSAGE_CHARS + 50
    assert len(error.name) <= MAX_ERROR_NAME_CHARS + 50 and "truncated" in error.name
    info = error_from_guest({"name": "E", "message": "x", "stack": "s" * 10**6}, {})
    assert len(info.stack) <= MAX_ERROR_STACK_CHARS + 50


def test_a_thrown_huge_value_is_described_within_the_cap() -> None:
    error = failed("throw Array.from({length: 100000}, (_, i) => 'item' + i)")
    assert error.message.startswith('Uncaught ["item0", "item1"')
    assert len(error.message) <= MAX_ERROR_MESSAGE_CHARS + 50


def test_thrown_scalars_read_as_javascript_writes_them() -> None:
    assert failed("throw undefined").message == "Uncaught undefined"
    assert failed("throw NaN").message == "Uncaught NaN"
    assert failed("throw 5").message == "Uncaught 5"
    assert failed("throw {a: [1n]}").message == 'Uncaught {"a": [1]}'


def _cli_env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


@pytest.mark.timeout(120)
def test_quickjail_run_json_writes_a_huge_bigint_instead_of_a_traceback(tmp_path: Path) -> None:
    prog = tmp_path / "big.js"
    prog.write_text(f"console.log({HUGE}); export default {HUGE}", encoding="utf-8")
    for flags in (["--json"], []):
        proc = subprocess.run(
            [sys.executable, "-m", "quickjail", "run", *flags, str(prog)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=_cli_env(),
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "quickjail", "run", "--json", str(prog)],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=_cli_env(),
            stdin=subprocess.DEVNULL,
            timeout=60,
        ).stdout
    )
    assert int(data["result"]["$bigint"], 16) == 2**20000


@pytest.mark.timeout(120)
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_an_mcp_tools_call_with_a_huge_bigint_is_a_result_not_a_protocol_error(
    anyio_backend: str,
) -> None:
    pytest.importorskip("mcp", reason="the MCP server needs the 'mcp' extra")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {"PYTHONPATH": _cli_env()["PYTHONPATH"]}
    if "QUICKJAIL_CACHE_DIR" in os.environ:
        env["QUICKJAIL_CACHE_DIR"] = os.environ["QUICKJAIL_CACHE_DIR"]
    params = StdioServerParameters(command=sys.executable, args=["-m", "quickjail", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("run_code", {"code": f"export default {HUGE}"})
        thrown = await session.call_tool("run_code", {"code": f"throw {HUGE}"})
    assert result.is_error is False
    text = result.content[0].text  # type: ignore[union-attr]
    assert int(json.loads(text)["result"]["$bigint"], 16) == 2**20000
    assert thrown.is_error is True
    assert json.loads(thrown.content[0].text)["status"] == "error"  # type: ignore[union-attr]
