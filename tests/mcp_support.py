"""Helpers shared by the tests of ``quickjail mcp``: a server subprocess driven by the MCP SDK's
own stdio client (``tests/`` is on ``sys.path`` because its ``conftest.py`` is)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]


def server_env(extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """A server subprocess's environment: the repository on ``PYTHONPATH``, the cache dir."""
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    for name in ("QUICKJAIL_CACHE_DIR", "PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra_env or {})
    return env


@asynccontextmanager
async def connect(
    *server_args: str, extra_env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """Start ``python -m quickjail mcp ARGS`` and yield an initialized client session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "quickjail", "mcp", *server_args],
        env=server_env(extra_env),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def payload(result: Any) -> dict[str, Any]:
    """The JSON of a result's one text block."""
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


def pool_workers() -> list[Any]:
    """The pool worker processes among this test process's descendants (the server's)."""
    import psutil  # type: ignore[import-untyped,unused-ignore]

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "quickjail.executors._worker" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found
