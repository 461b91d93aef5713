"""The two ways to an MCP server, each bounding what one message may cost the host.

Over stdio the SDK's own client transport (``mcp.client.stdio``, 2.3) joins the server's
output into lines with no limit: a server writing one line that never ends grows the host's
memory until it fails. :func:`bounded_stdio` runs the server and feeds the SDK's
:class:`~mcp.ClientSession` the same pair of memory streams, but refuses a line past
``max_message_bytes`` (and then closes the connection, the only way back to a known state).
It also keeps the tail of the server's standard error for the messages that say why a
server went away, and ends the server's whole process group at the end (no orphans, no
zombies).

Over HTTP the SDK bounds one server-sent event (``max_sse_event_size``) but reads a JSON
response whole: :func:`bounded_http_client` is an ``httpx2`` client whose responses stop at
``max_message_bytes`` and that asks for no compression (a small compressed body can inflate
past any limit).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

__all__ = ["Lost", "Streams", "bounded_http_client", "bounded_stdio"]

STDERR_TAIL: Final = 2_000  # characters of the server's standard error kept for messages
_GRACE: Final = 2.0  # seconds a server has to exit once its stdin closes, then SIGTERM's
_EXIT_CODE_WAIT: Final = 0.5  # seconds to learn the exit code once the output ended
_CHUNK: Final = 65_536

#: What a transport gives :class:`mcp.ClientSession`: the messages read, and where to write.
Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


class Lost:
    """Why a session's connection ended, and the event a session waits on for it.

    The transport records the first reason (a server that exited, a message too long) and
    sets :attr:`event`; the connector's calls in flight register their cancel scopes in
    :attr:`scopes`, all cancelled then: they fail at once. Used in one event loop only.
    """

    __slots__ = ("event", "reason", "scopes", "stderr")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.reason: str | None = None
        self.stderr = ""
        self.scopes: set[anyio.CancelScope] = set()

    def set(self, reason: str) -> None:
        """Record ``reason`` (the first one wins), cancel the calls in flight, wake what waits."""
        if self.reason is None:
            self.reason = reason
        for scope in self.scopes:
            scope.cancel()
        self.event.set()

    def describe(self) -> str:
        """The reason, with the tail of the server's standard error when it wrote any."""
        reason = self.reason or "closed the connection"
        tail = self.stderr.strip()
        return f"{reason} (its standard error ends: {tail[-500:]!r})" if tail else reason


@contextlib.asynccontextmanager
async def bounded_stdio(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
    max_message_bytes: int,
    lost: Lost,
) -> AsyncIterator[Streams]:
    """Run ``command`` and yield the SDK's (read, write) streams over its stdin/stdout.

    Raises:
        OSError: The command cannot be started.
    """
    process = await anyio.open_process(
        list(command),
        env={**get_default_environment(), **(env or {})},
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: ended whole at close
    )
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def ended(what: str) -> None:
        with anyio.move_on_after(_EXIT_CODE_WAIT):
            await process.wait()
        code = process.returncode
        lost.set(f"exited with code {code}" if code is not None else what)

    async def read_stdout() -> None:
        assert process.stdout is not None
        line = bytearray()
        async with read_send:
            try:
                while True:
                    chunk = await process.stdout.receive(_CHUNK)
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        line += chunk[start:end]
                        start = end + 1
                        if len(line) > max_message_bytes:
                            break
                        if line.strip():
                            await read_send.send(_parse(bytes(line)))
                        line.clear()
                    else:
                        line += chunk[start:]
                    if len(line) > max_message_bytes:
                        lost.set(
                            f"sent a message over {max_message_bytes:,} bytes (max_message_bytes)"
                        )
                        return
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await ended("closed its standard output")
            except OSError as exc:
                lost.set(f"could not be read from ({exc})")

    async def write_stdin() -> None:
        assert process.stdin is not None
        async with write_recv:
            try:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await ended("closed its standard input")

    async def read_stderr() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            with contextlib.suppress(anyio.ClosedResourceError):
                while True:
                    text = (await process.stderr.receive(_CHUNK)).decode(errors="replace")
                    lost.stderr = (lost.stderr + text)[-STDERR_TAIL:]

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_stdout)
            tg.start_soon(write_stdin)
            tg.start_soon(read_stderr)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)
            for stream in (read_send, read_recv, write_send, write_recv):
                stream.close()


def _parse(line: bytes) -> SessionMessage | Exception:
    """One line as a JSON-RPC message, or the parse error as a value (the SDK's convention:
    the session reports it and goes on)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the server ``_GRACE`` seconds, then end its process group.

    SIGTERM, then SIGKILL ``_GRACE`` seconds later; the process is reaped either way.
    """
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(_GRACE):
        await process.wait()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if sys.platform == "win32":  # pragma: no cover - no process groups there
            if process.returncode is None:
                process.kill()
        else:
            _signal_group(process.pid, sig)
        if process.returncode is not None and not _group_alive(process.pid):
            break
        with anyio.move_on_after(_GRACE):
            await process.wait()
    with anyio.move_on_after(_GRACE), contextlib.suppress(Exception):
        await process.aclose()  # reaps it (a process the kernel cannot end is left, not waited)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _CappedStream(httpx2.AsyncByteStream):
    """A response body that fails past ``limit`` bytes (an SSE stream is left to the SDK's
    own per-event limit)."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for part in self._inner:
            seen += len(part)
            if seen > self._limit:
                raise httpx2.StreamError(
                    f"the server's answer is over {self._limit:,} bytes (max_message_bytes)"
                )
            yield part

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, limit: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith("text/event-stream"):
            stream = response.stream
            assert isinstance(stream, httpx2.AsyncByteStream)
            response.stream = _CappedStream(stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_http_client(
    headers: Mapping[str, str] | None, max_message_bytes: int, timeout: float
) -> httpx2.AsyncClient:
    """An ``httpx2`` client for the SDK's streamable HTTP transport, its bodies capped.

    Connecting, writing and waiting for the pool are bounded by ``timeout``; reading waits
    longer (a server may hold an event stream open), a call being bounded by the connector.
    """
    sent: dict[str, Any] = {"accept-encoding": "identity", **(headers or {})}
    return httpx2.AsyncClient(
        headers=sent,
        timeout=httpx2.Timeout(timeout, read=max(timeout, 300.0)),
        transport=_CappedTransport(max_message_bytes),
    )
