"""One MCP tool call through ``runtime.connectors.mcp`` against the SDK's client called directly.

Both on the same test server (``tests/runtime/connectors/_mcp_server.py``, over stdio), the
tool ``add``; each side has its own server process, both open at once. The variants are timed
round-robin (one sample of each per round, in an order shuffled per round, after 10 untimed
rounds), so a change of load on a
shared machine hits them alike; printed: medians of ``--calls`` rounds, in microseconds::

    python -m benchmarks.mcp_overhead [--calls 50]

Rows: ``ClientSession.call_tool`` (the SDK, in the caller's loop; it also checks the answer
against the tool's output schema); ``ClientSession.send_request`` (the same request without
that check: what the connector sends); the connector's ``Tool.call`` (arguments and answer
checked against the bounded schemas; the request goes to the connector's own loop thread and
back); that without the checks (``in_loop`` of the connector's call); the connector's call
timed inside its own loop (its transport and session, no trip between threads); the round
trip to the connector's loop alone (``in_loop`` of a coroutine that does nothing).
"""

from __future__ import annotations

import argparse
import random
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
Variant = Callable[[], Awaitable[Any]]


async def noop() -> None:
    pass


async def timed(fn: Variant) -> int:
    start = time.perf_counter_ns()
    await fn()
    return time.perf_counter_ns() - start


async def inside(srv: Any) -> int:
    """One connector call timed in the connector's own loop."""
    return await timed(lambda: srv._call("add", ARGS))


async def measure(calls: int) -> dict[str, float]:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
        connectors.mcp("bench", command=[sys.executable, str(SERVER)]) as srv,
    ):
        await session.initialize()
        await session.list_tools()
        add = {t.name: t for t in await srv.tools()}["add"]
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name="add", arguments=ARGS)
        )
        variants: dict[str, Callable[[], Awaitable[int]]] = {
            "ClientSession.call_tool": lambda: timed(lambda: session.call_tool("add", ARGS)),
            "ClientSession.send_request": lambda: timed(
                lambda: session.send_request(request, types.CallToolResult)
            ),
            "connector Tool.call": lambda: timed(lambda: add.call(ARGS)),
            "connector in_loop call": lambda: timed(lambda: srv.in_loop(srv._call, "add", ARGS)),
            "connector call inside its own loop": lambda: srv.in_loop(inside, srv),
            "connector in_loop of a no-op": lambda: timed(lambda: srv.in_loop(noop)),
        }
        samples: dict[str, list[int]] = {name: [] for name in variants}
        order = list(variants)
        shuffle = random.Random(30)
        for round_ in range(10 + calls):
            shuffle.shuffle(order)  # no variant always follows the same one
            for name in order:
                took = await variants[name]()
                if round_ >= 10:
                    samples[name].append(took)
        return {name: statistics.median(s) / 1000 for name, s in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    calls = parser.parse_args().calls
    rows = anyio.run(measure, calls)
    width = max(map(len, rows))
    print(f"median of {calls} rounds, one call of `add` over stdio each, µs")
    for name, value in rows.items():
        print(f"{name:<{width}}  {value:9.1f}")


if __name__ == "__main__":
    main()
