"""``mcp(...)``: the public way to connect an MCP server, importable without the SDK.

The ``mcp`` SDK is an optional dependency (the ``connectors`` or ``mcp`` extra): this module
names the defaults and checks nothing needs it until a connector is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from quickjail.runtime.errors import ConnectorError

if TYPE_CHECKING:
    from ._mcp import McpConnector

__all__ = ["MAX_MESSAGE_BYTES", "MAX_RESULT_CHARS", "MAX_TOOLS", "mcp"]

MAX_TOOLS: Final = 10_000
MAX_RESULT_CHARS: Final = 1_000_000
MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024


def mcp(
    name: str,
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    headers: Mapping[str, str] | None = None,
    description: str = "",
    timeout: float = 60.0,
    max_tools: int = MAX_TOOLS,
    max_result_chars: int = MAX_RESULT_CHARS,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> McpConnector:
    """Connect an MCP server: its tools become the namespace ``name`` in code mode.

    Nothing starts until the first use (a listing or a call); then one session is held until
    :meth:`~Connector.aclose`. A server that dies fails the calls in flight at once with an
    error naming it, and the next call starts a new session.

    Args:
        name: The namespace (an identifier): a program calls ``name.tool(args)``.
        command: The server's program and arguments (run without a shell, in a process
            group of its own, ended at close); its environment is the SDK's safe default
            (``PATH``, ``HOME``, ...) plus ``env``.
        url: A streamable HTTP endpoint instead (``headers`` are sent with every request).
        env: Extra environment variables for ``command``.
        cwd: The working directory of ``command``.
        headers: HTTP headers for ``url`` (an ``Authorization``, say).
        description: A line on what the server is, for the code-mode description.
        timeout: Seconds for starting a session, for one page of the listing, and for one
            call (a call still running then fails and is cancelled).
        max_tools: A server listing more tools than this is refused.
        max_result_chars: A call whose value is larger (as JSON) fails, saying so.
        max_message_bytes: One message from the server larger than this closes the session
            (the calls in flight fail, saying so); it bounds the host's memory per message.

    Each MCP tool becomes a tool named by
    :func:`~quickjail.runtime.connectors._base.identifier_names` (``create-issue`` →
    ``create_issue``; a name taken already gets ``_2``), its original name kept as its title
    and in its description; its schemas are bounded copies. A result's value: see
    :mod:`quickjail.runtime.connectors._mcp_values`.

    Raises:
        ToolDefinitionError: The arguments are not as described.
    """
    try:
        from ._mcp import McpConnector
    except ImportError as exc:
        raise ConnectorError(
            f"MCP connector {name!r} needs the MCP SDK: pip install 'quickjail[connectors]' ({exc})"
        ) from None
    return McpConnector(
        name,
        command=command,
        url=url,
        env=env,
        cwd=cwd,
        headers=headers,
        description=description,
        timeout=timeout,
        max_tools=max_tools,
        max_result_chars=max_result_chars,
        max_message_bytes=max_message_bytes,
    )
