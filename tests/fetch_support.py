"""Test support for ``bridge.Fetch``: a real HTTP server on 127.0.0.1 in a thread.

Its routes: ``/echo`` answers with what it received (method, path, headers, body) as JSON;
``/redirect?to=URL&status=N`` redirects; ``/status?code=N`` answers N; ``/truncated`` hangs
up mid-body; ``/gzip`` is a gzip body; ``/bomb`` is a small gzip body that inflates to
64 MiB; ``/slow`` answers after ``SLOW_SECONDS`` (the server's stop cuts it short); ``/hold``
waits until the client goes away and records that it did; ``/stream?chunks=N&size=B&gate=1``
sends N chunks of B bytes, the later ones (with ``gate``) only once ``proceed`` is set, logging
each send in ``sent`` and stopping when the client goes away (with ``close``, no
Content-Length: the body ends with the connection). Every request is recorded, and
``connections`` counts the connections open now.
"""

from __future__ import annotations

import datetime
import gzip
import json
import select
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SLOW_SECONDS = 30.0
BOMB_BYTES = 64 * 2**20
_BOMB = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9)


class FetchServer(ThreadingHTTPServer):
    """A loopback HTTP server that records its requests."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.held = threading.Event()  # a /hold request arrived
        self.let_go = threading.Event()  # the /hold request's client went away
        self.proceed = threading.Event()  # a gated /stream may send its later chunks
        self.sent: list[str] = []  # what /stream sent, and what a test added, in order
        self.connections = 0  # open now
        self.changed = threading.Condition(self.lock)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.lock:
            self.connections += 1
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.lock:
                self.connections -= 1
                self.changed.notify_all()

    def note(self, what: str) -> None:
        """Add to the send log (a test's own event, in order with the server's)."""
        with self.lock:
            self.sent.append(what)

    def wait_closed(self, timeout: float) -> bool:
        """Whether every connection closed within ``timeout`` seconds."""
        with self.lock:
            return self.changed.wait_for(lambda: self.connections == 0, timeout)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def seen(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["path"].split("?", 1)[0] == path]


class _Handler(BaseHTTPRequestHandler):
    server: FetchServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        record = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body.decode("latin-1"),
        }
        with self.server.lock:
            self.server.requests.append(record)
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/echo":
            self._answer(
                200,
                json.dumps(record).encode(),
                {
                    "Content-Type": "application/json",
                    "X-Echo-Authorization": self.headers.get("Authorization", ""),
                    "Set-Cookie": "a=1",
                },
            )
        elif parts.path == "/redirect":
            status = int(query.get("status", "302"))
            self._answer(status, b"", {"Location": query["to"]})
        elif parts.path == "/status":
            code = int(query["code"])
            self._answer(code, b"" if code in (204, 304) else b"body", {"X-Reason": "given"})
        elif parts.path == "/truncated":  # promises 1,000 bytes, sends 10 and hangs up
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
        elif parts.path == "/gzip":
            self._answer(200, gzip.compress(b"hello gzip"), {"Content-Encoding": "gzip"})
        elif parts.path == "/bomb":
            self._answer(200, _BOMB, {"Content-Encoding": "gzip"})
        elif parts.path == "/slow":
            self.server.stopping.wait(SLOW_SECONDS)
            self._answer(200, b"late")
        elif parts.path == "/hold":
            self.server.held.set()
            # readable with no data once the client closes the connection
            for _ in range(int(SLOW_SECONDS * 10)):
                if self.server.stopping.is_set():
                    return
                ready, _, _ = select.select([self.connection], [], [], 0.1)
                if ready and not self.connection.recv(1, 0x2):  # MSG_PEEK: EOF
                    self.server.let_go.set()
                    return
        elif parts.path == "/stream":
            self._stream(
                int(query.get("chunks", "3")),
                int(query.get("size", "1000")),
                gate="gate" in query,
                length="close" not in query,
            )
        else:
            self._answer(404, b"not found")

    def _client_gone(self, wait: float = 0.05) -> bool:
        ready, _, _ = select.select([self.connection], [], [], wait)
        return bool(ready) and not self.connection.recv(1, 0x2)  # MSG_PEEK: EOF

    def _stream(self, chunks: int, size: int, *, gate: bool, length: bool) -> None:
        server = self.server
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if length:
            self.send_header("Content-Length", str(chunks * size))
        else:  # the body ends when the connection does
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        try:
            for i in range(chunks):
                if i > 0 and gate:
                    while not server.proceed.wait(0.05):
                        if server.stopping.is_set() or self._client_gone():
                            server.note("client gone")
                            self.close_connection = True
                            return
                elif i > 0 and self._client_gone(0):
                    server.note("client gone")
                    self.close_connection = True
                    return
                self.wfile.write(bytes([65 + i % 26]) * size)
                self.wfile.flush()
                server.note(f"sent {i + 1}")
        except OSError:
            server.note("client gone")
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle


def tls_certificate(directory: Path, name: str) -> tuple[Path, Path, ssl.SSLContext]:
    """A CA and a certificate it signs for ``name``: (cert file, key file, a client context
    trusting only that CA)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "quickjail test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return cert_file, key_file, client


@contextmanager
def serving(tls: tuple[Path, Path] | None = None) -> Iterator[FetchServer]:
    server = FetchServer()
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
