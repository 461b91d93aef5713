"""Connectors: tool sources beyond ``define_tool`` that code mode reaches as namespaces.

``mcp(name, command=[...] | url=...)`` connects an MCP server; ``openapi(name, spec, ...)``
an HTTP API described by an OpenAPI document. Each is a :class:`Connector`: give it to
:func:`~quickjail.runtime.code_mode_tool` and a program calls ``name.tool(args)``.
"""

from ._base import Connector
from ._mcp_api import mcp

__all__ = ["Connector", "mcp"]
