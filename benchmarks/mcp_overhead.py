"""One MCP tool call through ``runtime.connectors.mcp`` against the SDK's client called directly.

Both on the same test server (``tests/runtime/connectors/_mcp_server.py``, over stdio), the
tool ``add``; each side starts its own server process. Medians of ``--calls`` sequential calls
after 10 untimed ones, printed in microseconds::

    python -m benchmarks.mcp_overhead [--calls 50]

Rows: ``ClientSession.call_tool`` (the SDK, in the caller's loop; it also checks the answer
against the tool's output schema), ``ClientSession.send_request`` (the same request without
that check: what the connector sends), the connector's ``Tool.call`` (arguments and answer
checked against the bounded schemas; the request goes to the connector's own loop thread and
back), and that minus the checks (``in_loop`` of the connector's call alone).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from quickjail.runtime import connectors

SERVER = Path(__file__).resolve().parents[1] / "tests" / "runtime" / "connectors" / "_mcp_server.py"
ARGS = {"a": 1, "b": 2}


async def median_us(fn: Callable[[], Awaitable[Any]], calls: int) -> float:
    for _ in range(10):
        await fn()
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        await fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


async def sdk(calls: int) -> dict[str, float]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name="add", arguments=ARGS)
        )
        return {
            "ClientSession.call_tool": await median_us(
                lambda: session.call_tool("add", ARGS), calls
            ),
            "ClientSession.send_request": await median_us(
                lambda: session.send_request(request, types.CallToolResult), calls
            ),
        }


async def connector(calls: int) -> dict[str, float]:
    async with connectors.mcp("bench", command=[sys.executable, str(SERVER)]) as srv:
        add = {t.name: t for t in await srv.tools()}["add"]
        return {
            "connector Tool.call": await median_us(lambda: add.call(ARGS), calls),
            "connector in_loop call": await median_us(
                lambda: srv.in_loop(srv._call, "add", ARGS), calls
            ),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    calls = parser.parse_args().calls
    rows: dict[str, float] = {}
    rows |= anyio.run(sdk, calls)
    rows |= anyio.run(connector, calls)
    rows["connector Tool.call (trio caller)"] = anyio.run(connector, calls, backend="trio")[
        "connector Tool.call"
    ]
    width = max(map(len, rows))
    print(f"median of {calls} calls of `add` over stdio, µs")
    for name, value in rows.items():
        print(f"{name:<{width}}  {value:9.1f}")


if __name__ == "__main__":
    main()
