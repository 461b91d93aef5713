"""``quickjail mcp`` driven by the official MCP TypeScript SDK's stdio client (Node).

That client refuses any stdio message over 10 MiB and closes the connection, after which every
call fails with "Not connected". The client is the pinned npm project in
``tests/mcp_ts_client`` (``package-lock.json`` with integrity hashes), installed with ``npm
ci`` into a cache directory keyed by the lockfile's hash: under ``$QUICKJAIL_CACHE_DIR`` when
set, else pytest's cache. Without Node or npm these tests fail, saying so: they do not skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from npm_support import npm_install

pytest.importorskip("mcp", reason="the MCP server needs the 'mcp' extra")

ROOT = Path(__file__).resolve().parents[1]
PROJECT = Path(__file__).resolve().parent / "mcp_ts_client"
# a program whose answer is over 10 MiB as the server sent it before results were cut: its
# 6,000,000 characters went twice (text and structuredContent)
BIG = 6_000_000

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="session")
def ts_client(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client script in a directory where ``npm ci`` installed the pinned SDK."""
    target = npm_install(
        PROJECT,
        "mcp-ts-client",
        pytestconfig,
        tmp_path_factory,
        "to run the MCP TypeScript SDK client",
    )
    script = target / "client.mjs"
    fresh = target / f"client.mjs.tmp{os.getpid()}"
    fresh.write_bytes((PROJECT / "client.mjs").read_bytes())
    os.replace(fresh, script)
    return script


def run_client(script: Path, calls: list[dict[str, Any]], *server_args: str) -> dict[str, Any]:
    """Run the TypeScript client against ``quickjail mcp SERVER_ARGS``; return its report."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["QUICKJAIL_TS_CALLS"] = json.dumps(calls)
    done = subprocess.run(
        ["node", str(script), sys.executable, *server_args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _code(source: str) -> dict[str, Any]:
    return {"name": "run_code", "arguments": {"code": source}}


def test_a_result_over_the_clients_message_limit_arrives_cut_and_the_session_stays_connected(
    ts_client: Path,
) -> None:
    report = run_client(ts_client, [_code(f'return "x".repeat({BIG})'), _code("return 1 + 1")])
    big, after = report["results"]
    assert big["ok"] is True, report
    assert report["transportErrors"] == []
    assert big["isError"] is False and big["structuredStatus"] == "success"
    note = "characters not sent; --max-result-chars 1000000]"
    assert big["structuredResultType"] == "string"
    assert 900_000 < big["structuredResultLength"] <= 1_000_000
    assert big["structuredResultEnd"].endswith(f"of {BIG} {note}")
    assert big["textLength"] <= 1_000_000 and note in big["textEnd"]
    assert after["ok"] is True, after
    assert after["structuredResultValue"] == 2 and after["isError"] is False


def test_the_max_result_chars_flag_sets_where_a_result_is_cut(ts_client: Path) -> None:
    report = run_client(
        ts_client, [_code('return "y".repeat(50_000)')], "--max-result-chars", "5000"
    )
    (cut,) = report["results"]
    assert cut["ok"] is True and cut["textLength"] <= 5000
    assert cut["structuredResultEnd"].endswith(
        "of 50000 characters not sent; --max-result-chars 5000]"
    )
