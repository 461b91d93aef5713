"""One OpenAPI operation through the connector against httpx directly, same loopback server.

    python -m benchmarks.openapi_connector [--samples 50]

Prints the median (and p90) per call of: ``httpx.AsyncClient.get`` + ``.json()`` on one
client; the connector's tool (``Tool.call`` without a thread: argument validation, the hop
to the connector's own loop, the allowlist, the capped read, output validation); the same
with a thread and an API key (the secret read from the thread and the result redacted).
Samples are taken round-robin after 10 warm-up calls each. Not part of ``python -m
benchmarks`` (yet): a measurement, no assertion.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx

from quickjail import runtime
from quickjail.runtime import connectors

KEY = "bench-key-0123456789"
PET = {"id": 1, "name": "Rex", "photoUrls": ["a.png"], "status": "available"}
SPEC = {
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
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name", "photoUrls"],
                                    "properties": {
                                        "id": {"type": "integer"},
                                        "name": {"type": "string"},
                                        "photoUrls": {"type": "array", "items": {"type": "string"}},
                                        "status": {"type": "string"},
                                    },
                                }
                            }
                        },
                    }
                },
            }
        }
    },
}


class _Handler(BaseHTTPRequestHandler):
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


async def _measure(samples: int) -> dict[str, list[float]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}/v2"
    try:
        plain = connectors.openapi("pets", SPEC, base_url=base)
        keyed = connectors.openapi("pets", SPEC, base_url=base, auth=connectors.api_key("PETS_KEY"))
        async with (
            plain,
            keyed,
            httpx.AsyncClient(follow_redirects=False, trust_env=False) as client,
        ):
            (tool,) = await plain.tools()
            (keyed_tool,) = await keyed.tools()
            with tempfile.TemporaryDirectory() as tmp:
                async with runtime.Runtime(
                    Path(tmp) / "bench.db", tools=[keyed_tool], secret_key=b"k" * 32
                ) as rt:
                    state = (await rt.thread(env={"PETS_KEY": KEY})).state

                    async def direct() -> None:
                        response = await client.get(f"{base}/pet/1")
                        assert response.json() == PET

                    async def through_tool() -> None:
                        result = await tool.call({"petId": 1})
                        assert result.result == PET, result

                    async def through_thread() -> None:
                        result = await keyed_tool.call({"petId": 1}, state)
                        assert result.result == PET, result

                    cases: dict[str, Callable[[], Awaitable[None]]] = {
                        "httpx directly": direct,
                        "connector tool, no thread": through_tool,
                        "connector tool, thread + API key": through_thread,
                    }
                    times: dict[str, list[float]] = {name: [] for name in cases}
                    for fn in cases.values():
                        for _ in range(10):
                            await fn()
                    for _ in range(samples):
                        for name, fn in cases.items():
                            start = time.perf_counter_ns()
                            await fn()
                            times[name].append((time.perf_counter_ns() - start) / 1e3)
                    return times
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=50)
    samples = parser.parse_args().samples
    times = anyio.run(_measure, samples)
    base = statistics.median(times["httpx directly"])
    print(f"{'case':36} {'median µs':>10} {'p90 µs':>9} {'× httpx':>8}  ({samples} samples)")
    for name, values in times.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"{name:36} {median:10.0f} {p90:9.0f} {median / base:8.2f}")


if __name__ == "__main__":
    main()
