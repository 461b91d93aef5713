"""What the MCP connector's tests share: the test server's command, an HTTP server on a
loopback port that a test may kill and start again, and process facts (alive, reaped)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from quickjail.runtime import Tool

SERVER = Path(__file__).resolve().parent / "_mcp_server.py"
START_WITHIN = 60.0  # seconds a test server has to start listening (a busy 2-core machine)


def server_command(listing: str = "normal") -> list[str]:
    """The test server over stdio, with one of its listings."""
    return [sys.executable, str(SERVER), "--listing", listing]


def by_name(tools: tuple[Tool, ...]) -> dict[str, Tool]:
    return {tool.name: tool for tool in tools}


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it has exited, unreaped)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, within: float = 30.0) -> None:
    """Wait until ``pid`` no longer runs (without reaping it: it is the connector's child)."""
    deadline = time.monotonic() + within
    while running(pid):
        assert time.monotonic() < deadline, f"process {pid} still runs"
        time.sleep(0.02)


def our_children() -> set[int]:
    return {child.pid for child in psutil.Process().children(recursive=True)}


def wait_reaped(pid: int, within: float = 30.0) -> None:
    """Wait until ``pid`` is no child of ours any more: it ended and was reaped."""
    deadline = time.monotonic() + within
    while pid in our_children():
        assert time.monotonic() < deadline, f"process {pid} was not reaped"
        time.sleep(0.02)


class HttpServer:
    """The test server over streamable HTTP on a loopback port, stoppable and restartable."""

    def __init__(self, listing: str = "normal", *, json: bool = False) -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        self.listing = listing
        self.json = json
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "--http", str(self.port), "--listing", self.listing]
            + (["--json"] if self.json else [])
        )
        deadline = time.monotonic() + START_WITHIN
        while True:
            assert self.process.poll() is None, "the HTTP test server exited at start"
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "the HTTP test server did not start"
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=30)
            self.process = None


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.kill()
