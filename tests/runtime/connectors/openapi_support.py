"""Test support for the OpenAPI connector: the pinned Petstore documents, a loopback server.

The documents are the published ``@readme/oas-examples`` npm package (pinned with integrity
hashes in ``tests/openapi_petstore/package-lock.json``), installed with ``npm ci`` into a
cache directory keyed by the lockfile's hash (``$QUICKJAIL_CACHE_DIR``, else pytest's cache).
The server is a real HTTP server on 127.0.0.1 in a thread: some Petstore operations, plus
routes that misbehave on purpose (redirects, a slow answer, a huge or deeply nested body, an
echo of the request's headers).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from npm_support import npm_install

PROJECT = Path(__file__).resolve().parents[2] / "openapi_petstore"
SLOW_SECONDS = 30.0  # the slow route's longest wait (the server's stop cuts it short)


def petstore_documents(config: pytest.Config, factory: pytest.TempPathFactory) -> Path:
    """The installed ``@readme/oas-examples`` package (``3.0/json/petstore.json``, ...)."""
    what = "to install the pinned Petstore OpenAPI documents (@readme/oas-examples)"
    target = npm_install(PROJECT, "openapi-petstore", config, factory, what)
    return target / "node_modules" / "@readme" / "oas-examples"


class PetServer(ThreadingHTTPServer):
    """A loopback HTTP server with its requests recorded and its pets in memory."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.api_key: str | None = None
        self.pets: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "Rex", "photoUrls": [], "status": "available"},
            2: {"id": 2, "name": "Tom", "photoUrls": ["t.png"], "status": "sold"},
            3: {"id": 3, "name": "Kit", "photoUrls": [], "status": "pending"},
        }
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: PetServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
        if isinstance(body, bytes):
            data = body
        elif content_type == "application/json":
            data = json.dumps(body).encode()
        else:
            data = str(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client went away (a cancelled or timed-out call)
            self.close_connection = True

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _route(self) -> None:
        split = urlsplit(self.path)
        query = parse_qs(split.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record = {
            "method": self.command,
            "path": split.path,
            "query": query,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        }
        with self.server.lock:
            self.server.requests.append(record)
        parts = split.path.strip("/").split("/")
        pets = self.server.pets
        if parts[:2] == ["v2", "pet"] and len(parts) == 3 and parts[2] == "findByStatus":
            wanted = query.get("status", ["available"])
            self._send(200, [p for p in pets.values() if p["status"] in wanted])
        elif parts[:2] == ["v2", "pet"] and len(parts) == 3:
            key = self.headers.get("api_key")
            if self.server.api_key is not None and key != self.server.api_key:
                self._send(401, {"code": 401, "message": "missing or wrong api_key"})
                return
            if not parts[2].isdigit():
                self._send(400, "Invalid ID supplied", "text/plain")
            elif self.command == "DELETE":
                pets.pop(int(parts[2]), None)
                self._send(200, b"", "text/plain")
            elif int(parts[2]) == 7:  # a server that echoes the key it was sent
                self._send(200, {"id": 7, "name": f"key={key}", "photoUrls": [str(key)]})
            elif int(parts[2]) in pets:
                self._send(200, pets[int(parts[2])])
            else:
                self._send(404, "Pet not found", "text/plain")
        elif parts[:2] == ["v2", "pet"] and self.command in ("POST", "PUT"):
            pet = json.loads(body)
            pet.setdefault("id", max(pets, default=0) + 1)
            pets[pet["id"]] = pet
            self._send(200, pet)
        elif parts == ["v2", "user", "login"]:
            self._send(200, f"logged in user session:{query.get('username', ['?'])[0]}")
        elif parts == ["v2", "store", "inventory"]:
            counts: dict[str, int] = {}
            for pet in pets.values():
                counts[pet["status"]] = counts.get(pet["status"], 0) + 1
            self._send(200, counts)
        elif parts[:1] == ["echo"]:
            self._send(200, {"path": split.path, "query": query, "headers": record["headers"]})
        elif parts == ["redirect"]:
            self._redirect(int(query.get("status", ["302"])[0]), query["to"][0])
        elif parts == ["chain"]:
            left = int(query["n"][0])
            if left > 0:
                self._redirect(302, f"/chain?n={left - 1}")
            else:
                self._send(200, {"arrived": True})
        elif parts == ["big"]:
            self._send(200, {"data": "x" * (2 * 1024 * 1024)})
        elif parts == ["big-chunked"]:  # no Content-Length: cut while reading
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                for _ in range(64):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
        elif parts == ["gzip"]:  # a small body that inflates to size bytes of JSON
            size = int(query["size"][0])
            data = b'{"data": "' + b"0" * size + b'"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", self.headers.get("X-Encoding", "gzip"))
            packed = gzip.compress(data, compresslevel=9)
            self.send_header("Content-Length", str(len(packed)))
            self.end_headers()
            self.wfile.write(packed)
        elif parts == ["charset"]:
            self._send(200, "h\u00e9llo".encode(), "text/plain; charset=no-such-charset")
        elif parts == ["slow"]:
            self.server.stopping.wait(SLOW_SECONDS)
            self._send(200, {"late": True})
        elif parts == ["deep"]:
            self._send(200, b"[" * 100_000 + b"]" * 100_000)
        elif parts[:1] == ["status"]:
            self._send(int(parts[1]), "nope " * 400, "text/plain")
        else:
            self._send(404, {"message": f"no route {split.path}"})

    do_GET = do_POST = do_PUT = do_DELETE = _route


@contextmanager
def serving() -> Iterator[PetServer]:
    """A :class:`PetServer` running in a thread, stopped (and its slow answers cut) at exit."""
    server = PetServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


def echo_document() -> dict[str, Any]:
    """A small OpenAPI 3.1 document of the misbehaving routes."""

    def get(op_id: str, params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {
            "get": {
                "operationId": op_id,
                "parameters": params or [],
                "responses": {"200": {"description": "ok"}},
            }
        }

    query = {"in": "query", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "misbehaving", "version": "1"},
        "paths": {
            "/echo/{item}": get(
                "echo",
                [
                    {"name": "item", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "item", "in": "query", "schema": {"type": "string"}},
                    {"name": "body", "in": "header", "schema": {"type": "string"}},
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {
                        "name": "tags",
                        "in": "query",
                        "schema": {"type": "array", "items": {"type": "string"}},
                    },
                ],
            ),
            "/redirect": get(
                "redirect",
                [
                    {"name": "to", **query},
                    {"name": "status", "in": "query", "schema": {"type": "string"}},
                ],
            ),
            "/chain": get(
                "chain",
                [{"name": "n", "in": "query", "required": True, "schema": {"type": "integer"}}],
            ),
            "/big": get("big"),
            "/big-chunked": get("bigChunked"),
            "/gzip": get(
                "gzip",
                [
                    {
                        "name": "size",
                        "in": "query",
                        "required": True,
                        "schema": {"type": "integer"},
                    },
                    {"name": "X-Encoding", "in": "header", "schema": {"type": "string"}},
                ],
            ),
            "/charset": get("charset"),
            "/slow": get("slow"),
            "/deep": get("deep"),
            "/status/{code}": get(
                "status",
                [{"name": "code", "in": "path", "required": True, "schema": {"type": "integer"}}],
            ),
        },
    }
