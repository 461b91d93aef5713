"""What every connector shares: its namespace, its lifetime and the event loop it owns.

A connector's tools talk to something long-lived (an MCP session, an HTTP connection pool) that
is bound to one event loop, while its calls come from whichever loop or thread runs the
program. So each connector owns a small thread with its own loop (an anyio blocking portal),
started on first use and stopped by :meth:`Connector.aclose`; every remote operation runs
there, and a caller waits for it without blocking its own loop. Cancelling the caller cancels
the operation.
"""

from __future__ import annotations

import abc
import contextlib
import keyword
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, Self, TypeVar

import anyio
import anyio.from_thread

from quickjail.runtime._tool import Tool
from quickjail.runtime._typescript_decl import is_export_name
from quickjail.runtime.errors import ConnectorError, RuntimeClosedError, ToolDefinitionError

__all__ = ["RESERVED_NAMESPACES", "Connector", "identifier_names"]

T = TypeVar("T")

#: Names code mode itself defines in a program: no connector may take them.
RESERVED_NAMESPACES: Final = frozenset({"tools", "search", "describe", "snippets"})
_NOT_IDENT_RE: Final = re.compile(r"[^A-Za-z0-9_$]")


def identifier_names(names: Iterable[str]) -> dict[str, str]:
    """Map a source's tool names to distinct JavaScript identifiers, in order.

    ``create-issue`` → ``create_issue``, ``2fa`` → ``_2fa``, a reserved word gets a trailing
    ``_``, and a name that collides with an earlier one gets ``_2``, ``_3``, ... The first
    tool keeps the plain name, so the mapping is stable for a stable listing.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = _NOT_IDENT_RE.sub("_", name)[:64] or "_"
        if base[0].isdigit():
            base = "_" + base
        if not is_export_name(base) or keyword.iskeyword(base):
            base += "_"
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate)
        out[name] = candidate
    return out


class Connector(abc.ABC):
    """A tool source (an MCP server, an OpenAPI service) seen by code mode as one namespace.

    Give it to :func:`~quickjail.runtime.code_mode_tool` with local tools; a program then
    calls ``name.tool(args)``. It connects on first use, lists its tools once, and is closed
    by the :class:`~quickjail.runtime.Runtime` holding the code-mode tool (or by
    :meth:`aclose` / ``async with``). Closing is idempotent; a closed connector refuses use.
    """

    def __init__(self, name: str, *, description: str = "") -> None:
        if not isinstance(name, str) or not is_export_name(name) or keyword.iskeyword(name):
            raise ToolDefinitionError(f"a connector's name must be an identifier, not {name!r}")
        if name in RESERVED_NAMESPACES:
            raise ToolDefinitionError(
                f"a connector cannot be named {name!r}: code mode defines it "
                f"(reserved: {', '.join(sorted(RESERVED_NAMESPACES))})"
            )
        if not isinstance(description, str):
            raise ToolDefinitionError("a connector's description must be a str")
        self._name = name
        self._description = description
        self._lock = threading.Lock()
        self._stack: contextlib.ExitStack | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._tools: tuple[Tool, ...] | None = None
        self._closed = False

    @property
    def name(self) -> str:
        """The namespace a program calls this source's tools under."""
        return self._name

    @property
    def description(self) -> str:
        """A line on what the source is, for the code-mode tool's description."""
        return self._description

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` (or :meth:`close`) ran."""
        return self._closed

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {self._name!r} ({state})>"

    async def tools(self) -> tuple[Tool, ...]:
        """The source's tools, each named by its identifier in the namespace (listed once).

        Raises:
            ConnectorError: The source cannot be reached or listed (a later call tries again).
            RuntimeClosedError: The connector is closed.
        """
        if self._tools is None:
            listed = tuple(await self.in_loop(self._list_tools))
            names = [t.name for t in listed]
            if len(set(names)) != len(names):
                raise ConnectorError(f"connector {self._name!r} listed a tool name twice")
            self._tools = listed
        return self._tools

    def forget_tools(self) -> None:
        """Drop the cached listing: the next :meth:`tools` lists the source again."""
        self._tools = None

    @abc.abstractmethod
    async def _list_tools(self) -> list[Tool]:
        """Connect if needed and list the tools (runs in the connector's own loop)."""

    async def _shutdown(self) -> None:  # noqa: B027 - most connectors hold nothing more
        """Release what the connector holds (runs in its own loop, once, at close)."""

    def _ensure_portal(self) -> anyio.from_thread.BlockingPortal:
        with self._lock:
            if self._closed:
                raise RuntimeClosedError(f"connector {self._name!r} is closed")
            if self._portal is None:
                stack = contextlib.ExitStack()
                self._portal = stack.enter_context(anyio.from_thread.start_blocking_portal())
                self._stack = stack
            return self._portal

    async def in_loop(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await fn(*args)`` in the connector's own loop and wait for it here.

        Works from any event loop or worker thread; cancelling the caller cancels ``fn``.
        """
        portal = self._ensure_portal()
        future = portal.start_task_soon(fn, *args)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            future.cancel()
            raise

    async def aclose(self) -> None:
        """Stop the source's sessions and the connector's loop (idempotent)."""
        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Synchronous :meth:`aclose` (not from inside the connector's own loop)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            portal, stack = self._portal, self._stack
            self._portal = self._stack = None
        if portal is not None and stack is not None:
            try:
                portal.call(self._shutdown)
            finally:
                stack.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
