"""The MCP connector: an MCP server's tools as one namespace, over stdio or streamable HTTP.

A session is held by one supervisor task in the connector's own loop: it enters the
transport and the SDK's :class:`~mcp.ClientSession` (their async contexts must be entered and
left in one task), initializes, and waits until it is told to stop or the connection is
lost; then it leaves them, which ends a stdio server's process group. The session starts on
first use (the first listing or call). When it is lost (the server exited, a message was too
long, the HTTP server is gone), the calls in flight fail at once with an error naming the
server and why, the session is dropped, and the next use starts a new one.

Listings and calls go as ``tools/list`` and ``tools/call`` requests through
:meth:`ClientSession.send_request`, each bounded by ``timeout``. Not through
``ClientSession.call_tool``: that one checks a structured answer against the server's own
output schema with ``jsonschema``, and a hostile server's schema (a catastrophic ``pattern``,
say) would hold the connector's loop for as long as it likes; the runtime checks the answer
against the bounded copy of that schema instead. Nor through ``ClientSession.list_tools``,
which keeps every tool's output schema as the server sent it, unbounded, for those checks.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from quickjail.runtime._result import ToolResult
from quickjail.runtime._tool import Tool
from quickjail.runtime.errors import ConnectorError, ToolDefinitionError

from . import _mcp_values
from ._base import Connector
from ._mcp_transport import Lost, bounded_http_client, bounded_stdio
from ._mcp_values import (
    Listed,
    bound_listed,
    build_tools,
    result_attachments,
    result_value,
)

__all__ = ["McpConnector"]

T = TypeVar("T")
logger = logging.getLogger(__name__)

MAX_PAGES: Final = 1_000
MAX_CURSOR: Final = 4_096
_CLIENT_INFO: Final = types.Implementation(name="quickjail", version="connector")


class _Live:
    """One session: its supervisor's events, its SDK session once ready, why it was lost."""

    __slots__ = ("lost", "over", "ready", "session")

    def __init__(self) -> None:
        self.ready = anyio.Event()  # set when the session works, or will never
        self.over = anyio.Event()  # set when the supervisor left the session's contexts
        self.lost = Lost()
        self.session: ClientSession | None = None


class McpConnector(Connector):
    """An MCP server's tools as one namespace (see :func:`mcp`)."""

    def __init__(
        self,
        name: str,
        *,
        command: Sequence[str] | None,
        url: str | None,
        env: Mapping[str, str] | None,
        cwd: str | Path | None,
        headers: Mapping[str, str] | None,
        description: str,
        timeout: float,
        max_tools: int,
        max_result_chars: int,
        max_message_bytes: int,
    ) -> None:
        super().__init__(name, description=description)
        if (command is None) == (url is None):
            raise ToolDefinitionError(f"MCP connector {name!r}: give command=[...] or url=...")
        if command is not None:
            if isinstance(command, str | bytes) or not command:
                raise ToolDefinitionError(
                    f"MCP connector {name!r}: command is a non-empty list of strings "
                    "(the program and its arguments; no shell)"
                )
            if not all(isinstance(part, str) for part in command):
                raise ToolDefinitionError(f"MCP connector {name!r}: command holds a non-string")
            if headers is not None:
                raise ToolDefinitionError(f"MCP connector {name!r}: headers= is for url=")
        else:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ToolDefinitionError(
                    f"MCP connector {name!r}: url must be an http:// or https:// URL"
                )
            if env is not None or cwd is not None:
                raise ToolDefinitionError(f"MCP connector {name!r}: env= and cwd= are for command=")
        for label, mapping in (("env", env), ("headers", headers)):
            if mapping is not None and not all(
                isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
            ):
                raise ToolDefinitionError(f"MCP connector {name!r}: {label} maps str to str")
        _positive(name, "timeout", timeout)
        for label, count in (
            ("max_tools", max_tools),
            ("max_result_chars", max_result_chars),
            ("max_message_bytes", max_message_bytes),
        ):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ToolDefinitionError(f"MCP connector {name!r}: {label} is a positive int")
        self._command = list(command) if command is not None else None
        self._url = url
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._headers = dict(headers) if headers is not None else None
        self._timeout = float(timeout)
        self._max_tools = max_tools
        self._max_result_chars = max_result_chars
        self._max_message_bytes = max_message_bytes
        self._live: _Live | None = None  # touched only in the connector's loop

    @property
    def target(self) -> str:
        """The command line or URL of the server (for messages)."""
        return self._url if self._url is not None else " ".join(self._command or ())

    def _what(self) -> str:
        return f"MCP server {self.name!r}"

    # -- sessions (all in the connector's loop) ------------------------------------------

    async def _session(self) -> _Live:
        live = self._live
        if live is None or live.lost.event.is_set():
            live = self._live = _Live()
            portal = self._portal
            if portal is None:  # closed meanwhile
                raise ConnectorError(f"{self._what()}: the connector is closed")
            # the supervisor is a task of the loop's own (the portal's), not of this call:
            # it outlives the call that started it; a portal takes tasks from other threads
            try:
                await anyio.to_thread.run_sync(portal.start_task_soon, self._supervise, live)
            except Exception as exc:  # the portal is stopping: the connector is closing
                live.lost.set(f"could not be started ({exc})")
                live.ready.set()
                live.over.set()
                raise ConnectorError(f"{self._what()}: the connector is closing") from None
        await live.ready.wait()
        if live.session is None:
            raise ConnectorError(f"{self._what()} could not be started: {live.lost.describe()}")
        return live

    async def _supervise(self, live: _Live) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(live.lost))
                session = await stack.enter_async_context(
                    ClientSession(read, write, client_info=_CLIENT_INFO)
                )
                with anyio.fail_after(self._timeout):
                    await self._guarded(live, session.initialize)
                live.session = session
                live.ready.set()
                await live.lost.event.wait()
        except TimeoutError:
            live.lost.set(f"did not complete the MCP handshake within {self._timeout:g} s")
        except ConnectorError as exc:
            live.lost.set(str(exc))
        except MCPError as exc:
            live.lost.set(f"refused the MCP handshake: {exc.message[:500]}")
        except OSError as exc:
            live.lost.set(f"cannot start {self.target!r}: {exc}")
        except Exception as exc:
            logger.debug("MCP session of %r ended", self.name, exc_info=True)
            leaf = _leaf(exc)
            live.lost.set(f"failed: {type(leaf).__name__}: {str(leaf)[:500]}")
        finally:
            live.lost.set("was closed")
            live.session = None
            if self._live is live:
                self._live = None
            live.ready.set()
            live.over.set()

    def _transport(self, lost: Lost) -> contextlib.AbstractAsyncContextManager[Any]:
        if self._command is not None:
            return bounded_stdio(
                self._command,
                env=self._env,
                cwd=self._cwd,
                max_message_bytes=self._max_message_bytes,
                lost=lost,
            )
        assert self._url is not None
        return _http(
            self._url,
            bounded_http_client(self._headers, self._max_message_bytes, self._timeout),
            self._max_message_bytes,
        )

    async def _guarded(self, live: _Live, fn: Callable[[], Awaitable[T]]) -> T:
        """``await fn()``, failing at once when the session is lost meanwhile.

        The call's cancel scope is registered with the session's :class:`Lost`, which cancels
        every registered scope when it is set (a scope, not a watcher task: a task per call
        cost 0.2 ms).
        """
        lost = live.lost
        if lost.event.is_set():
            raise self._lost(live)
        with anyio.CancelScope() as scope:
            lost.scopes.add(scope)
            try:
                return await fn()
            except MCPError as exc:
                if exc.code != types.CONNECTION_CLOSED:
                    raise
                lost.set(f"closed the connection ({exc.message[:300]})")
            finally:
                lost.scopes.discard(scope)
        raise self._lost(live)

    def _lost(self, live: _Live) -> ConnectorError:
        after = (
            "the connector is closed"
            if self.closed
            else "the calls in flight failed, and the next call starts it again"
        )
        return ConnectorError(f"{self._what()} {live.lost.describe()}; {after}")

    async def _shutdown(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.lost.set("was closed")
            await live.over.wait()

    # -- listing and calling -------------------------------------------------------------

    async def _list_tools(self) -> list[Tool]:
        live = await self._session()
        session = live.session
        assert session is not None
        listed: list[Listed] = []
        count = left_out = kept_chars = 0
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            try:
                with anyio.fail_after(self._timeout):
                    page = await self._guarded(
                        live,
                        functools.partial(
                            session.send_request,
                            types.ListToolsRequest(params=params),
                            types.ListToolsResult,
                        ),
                    )
            except TimeoutError:
                raise ConnectorError(
                    f"{self._what()} did not list its tools within {self._timeout:g} s"
                ) from None
            except MCPError as exc:
                raise ConnectorError(
                    f"{self._what()} refused to list its tools: {exc.message[:500]}"
                ) from None
            except pydantic.ValidationError as exc:
                raise ConnectorError(
                    f"{self._what()} listed its tools in a form MCP does not allow: "
                    f"{str(exc)[:500]}"
                ) from None
            count += len(page.tools)
            if count > self._max_tools:
                raise ConnectorError(
                    f"{self._what()} lists more than {self._max_tools:,} tools (max_tools)"
                )
            for raw in page.tools:  # only bounded parts are kept, not the page
                kept = bound_listed(raw)
                if kept is None:
                    left_out += 1
                    continue
                kept_chars += kept.size
                if kept_chars > _mcp_values.MAX_LISTING_CHARS:
                    raise ConnectorError(
                        f"{self._what()} describes its tools in over "
                        f"{_mcp_values.MAX_LISTING_CHARS:,} characters (their schemas and "
                        "descriptions, each bounded)"
                    )
                listed.append(kept)
            cursor = page.next_cursor
            if cursor is None:
                break
            if len(cursor) > MAX_CURSOR:
                raise ConnectorError(
                    f"{self._what()} gave a page cursor over {MAX_CURSOR:,} characters"
                )
            if cursor in seen:
                raise ConnectorError(f"{self._what()} repeated a page cursor of its tool list")
            seen.add(cursor)
        else:
            raise ConnectorError(
                f"{self._what()} lists its tools over more than {MAX_PAGES:,} pages"
            )
        if left_out:
            logger.warning("%s: left out %d tools with empty or long names", self._what(), left_out)
        return build_tools(self.name, listed, self._call_from_caller)

    async def _call_from_caller(self, tool: str, args: dict[str, Any]) -> ToolResult:
        return await self.in_loop(self._call, tool, args)

    async def _call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=tool, arguments=args)
        )
        for attempt in range(2):
            live = await self._session()
            session = live.session
            assert session is not None
            try:
                with anyio.fail_after(self._timeout):
                    result = await self._guarded(
                        live, functools.partial(session.send_request, request, types.CallToolResult)
                    )
            except TimeoutError:
                raise ConnectorError(
                    f"tool {tool!r} of {self._what()} did not answer within {self._timeout:g} s "
                    "(timeout)"
                ) from None
            except MCPError as exc:
                if self._url is not None and _session_gone(exc):
                    # an HTTP server that restarted refuses the old session (404) before it
                    # runs anything: drop the session and send the call once more on a new one
                    live.lost.set("no longer knows the session (it restarted?)")
                    if attempt == 0:
                        continue
                raise ConnectorError(
                    f"tool {tool!r} of {self._what()} failed: {exc.message[:2000]}"
                ) from None
            except pydantic.ValidationError as exc:
                raise ConnectorError(
                    f"tool {tool!r} of {self._what()} answered something that is not a tool "
                    f"result: {str(exc)[:500]}"
                ) from None
            value = result_value(self.name, tool, result, self._max_result_chars)
            return ToolResult.success(value, attachments=list(result_attachments(tool, result)))
        raise AssertionError("unreachable")  # pragma: no cover


def _session_gone(exc: MCPError) -> bool:
    """Whether an HTTP server refused the session's id (it answers 404: the SDK's server says
    "Session not found", the SDK's client "Session terminated" when the body says nothing)."""
    text = exc.message.lower()
    return "session" in text and ("not found" in text or "terminated" in text)


@contextlib.asynccontextmanager
async def _http(url: str, client: Any, max_message_bytes: int) -> Any:
    async with (
        client,
        streamable_http_client(
            url, http_client=client, max_sse_event_size=max_message_bytes
        ) as streams,
    ):
        yield streams


def _leaf(exc: BaseException) -> BaseException:
    """The first error a task group's group of errors holds (itself for any other)."""
    for _ in range(16):
        if not isinstance(exc, BaseExceptionGroup) or not exc.exceptions:
            break
        exc = exc.exceptions[0]
    return exc


def _positive(name: str, label: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ToolDefinitionError(f"MCP connector {name!r}: {label} is a positive number")
