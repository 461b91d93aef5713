"""Connectors (issue 30): what a program's call to an MCP tool or an OpenAPI operation costs
beyond calling the same thing with its own client.

Per nested call: ``(median of a code-mode call whose program makes N calls − median of the
same call making none) / N``, through a real thread (each nested call validated, persisted
as two messages, its result redacted), timed round-robin with the direct client's call on
the same server: the SDK's ``ClientSession.call_tool`` on a session held open, and
``httpx.AsyncClient.get`` on a client held open. The factor is that per-call time over the
direct call's; the JSON keeps the medians.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

from benchmarks._engines import NG, RS
from benchmarks._harness import Config
from benchmarks._report import Cell, Row, compare_async, record_failure

__all__ = ["rows"]

PET = {"id": 1, "name": "Rex", "photoUrls": ["a.png"], "status": "available"}
SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "pets", "version": "1"},
    "paths": {
        "/pet/{petId}": {
            "get": {
                "operationId": "getPetById",
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "responses": {
                    "200": {
                        "description": "a pet",
                        "content": {"application/json": {"schema": {"type": "object"}}},
                    }
                },
            }
        }
    },
}
#: An MCP server with one tool, written with the SDK (run as ``python -c``).
MCP_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench")

@server.tool()
def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b

server.run()
"""
DIRECT, NONE, CALLS = "direct", "program, no call", "program, N calls"
_NOT_PEERS = Cell(error="no connectors", display="n/a (no connectors)")


class _Pets(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no delayed-ACK stall
    body = json.dumps(PET).encode()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


@contextlib.contextmanager
def _pet_server() -> Any:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pets)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v2"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.asynccontextmanager
async def _thread(connector: Any) -> AsyncIterator[Callable[[str], Awaitable[Any]]]:
    """A runtime thread whose run_code reaches ``connector``; yields ``run(program)``."""
    from quickjail import runtime

    code = runtime.code_mode_tool([connector], timeout=60)
    with tempfile.TemporaryDirectory() as tmp:
        async with runtime.Runtime(Path(tmp) / "bench.db", tools=[code]) as rt:
            thread = await rt.thread()

            async def run(program: str) -> Any:
                call = {"id": "c", "name": "run_code", "arguments": {"code": program}}
                (result,) = await thread.execute_tool_calls([call])
                if result.status != "success":
                    raise RuntimeError(f"the program failed: {result.error}")
                return result.result["result"]

            yield run


def _row(
    key: str, measure: str, cells: dict[str, Cell], n: int, note: str, failures: list[str]
) -> Row:
    direct, none, calls = cells[DIRECT], cells[NONE], cells[CALLS]
    if not (direct.ok and none.ok and calls.ok):
        own = Cell(error=direct.error or none.error or calls.error or "not measured")
        if not (none.ok and calls.ok):  # quickjail's own side failed: the run fails
            failures.append(f"{key}/quickjail: {none.error or calls.error}")
    else:
        assert direct.value and none.value is not None and calls.value is not None
        per_call = (calls.value - none.value) / n
        own = Cell(
            per_call / direct.value,
            extra={"per_call_ns": per_call, "direct_ns": direct.value, "calls": n},
        )
    peers = {NG: _NOT_PEERS, RS: _NOT_PEERS}
    return Row(key, measure, "factor", own, peers, None, ratios=False, note=note)


def _programs(call: str, n: int) -> tuple[str, str]:
    loop = f"let s = 0;\nfor (let i = 0; i < {n}; i++) s += {call};\nreturn s;"
    return "let s = 0;\nreturn s;", loop


async def _openapi(cfg: Config, failures: list[str], n: int) -> Row:
    import httpx

    from quickjail.runtime import connectors

    none_src, calls_src = _programs("(await pets.getPetById({petId: 1})).id", n)
    with _pet_server() as base:
        pets = connectors.openapi("pets", SPEC, base_url=base)
        async with httpx.AsyncClient(trust_env=False) as client, _thread(pets) as run:

            async def direct() -> Any:
                return (await client.get(f"{base}/pet/1")).json()["id"]

            def check(key: str, value: Any) -> None:
                if value != (0 if key == NONE else 1 if key == DIRECT else n):
                    raise RuntimeError(f"{key} gave {value!r}")

            runs = {DIRECT: direct, NONE: lambda: run(none_src), CALLS: lambda: run(calls_src)}
            cells = await compare_async(cfg, failures, "connectors_openapi", runs, check)
    return _row(
        "connector_openapi_call",
        "connectors: one OpenAPI operation called from a program ÷ the same GET with httpx",
        cells,
        n,
        f"a code-mode program makes {n} `pets.getPetById` calls to a loopback server, less "
        "the same program making none, per call; against `httpx.AsyncClient.get` + `.json()` "
        "on one open client, round-robin. Each nested call is validated, runs in the "
        "connector's own loop and is persisted on the thread (two messages).",
        failures,
    )


async def _mcp(cfg: Config, failures: list[str], n: int) -> Row:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from quickjail.runtime import connectors

    # the SDK's server wraps an int result as {"result": n} (its structured output)
    none_src, calls_src = _programs("(await calc.add({a: i, b: 1})).result", n)
    argv = [sys.executable, "-c", MCP_SERVER]
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    calc = connectors.mcp("calc", command=argv)
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
        _thread(calc) as run,
    ):
        await session.initialize()

        async def direct() -> Any:
            result = await session.call_tool("add", {"a": 1, "b": 1})
            return (result.structured_content or {}).get("result")

        expected = {DIRECT: 2, NONE: 0, CALLS: sum(range(1, n + 1))}

        def check(key: str, value: Any) -> None:
            if value != expected[key]:
                raise RuntimeError(f"{key} gave {value!r}, expected {expected[key]!r}")

        runs = {DIRECT: direct, NONE: lambda: run(none_src), CALLS: lambda: run(calls_src)}
        cells = await compare_async(cfg, failures, "connectors_mcp", runs, check)
    return _row(
        "connector_mcp_call",
        "connectors: one MCP tool called from a program ÷ `ClientSession.call_tool`",
        cells,
        n,
        f"a code-mode program makes {n} `calc.add` calls to an SDK server over stdio, less "
        "the same program making none, per call; against the SDK's `ClientSession.call_tool` "
        "on an open session to the same server program, round-robin.",
        failures,
    )


def rows(cfg: Config, failures: list[str]) -> list[Row]:
    n = 2 if cfg.dry else 20
    out: list[Row] = []
    for key, measure, make in (
        ("connector_openapi_call", "connectors: OpenAPI operation from a program", _openapi),
        ("connector_mcp_call", "connectors: MCP tool from a program", _mcp),
    ):
        try:
            out.append(anyio.run(make, cfg, failures, n))
        except Exception as exc:
            failed = record_failure(exc, failures, f"{key}/quickjail")
            out.append(Row(key, measure, "factor", failed, {NG: _NOT_PEERS, RS: _NOT_PEERS}))
    return out
