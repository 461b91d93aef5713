"""Connectors: tool sources beyond ``define_tool`` that code mode reaches as namespaces.

``mcp(name, command=[...] | url=...)`` connects an MCP server; ``openapi(name, spec, ...)``
an HTTP API described by an OpenAPI document, with ``bearer(...)`` or ``api_key(...)`` naming
the secret variable its requests authenticate with. Each is a :class:`Connector`: give it to
:func:`~quickjail.runtime.code_mode_tool` and a program calls ``name.tool(args)``.
"""

from ._base import Connector
from ._mcp_api import mcp
from ._openapi import ApiAuth, api_key, bearer, openapi

__all__ = ["ApiAuth", "Connector", "api_key", "bearer", "mcp", "openapi"]
