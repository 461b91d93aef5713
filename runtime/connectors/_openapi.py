"""The OpenAPI connector's public face: :func:`openapi`, and where its secret goes.

``openapi("pets", "petstore.yaml", base_url="https://pets.example/v2",
auth=bearer("PETS_TOKEN"))`` gives a namespace whose ``getPetById({petId: 1})`` makes that
request on the host with httpx and resolves to the response's JSON. The secret is read from
the thread's variables at each call and added on the host; the tools declare it as a required
secret variable, so a thread checks it is set and redacts its value from everything it returns.
httpx is imported only when a connector is made (the ``connectors`` extra).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from quickjail.runtime.errors import ToolDefinitionError

from ._base import Connector

__all__ = ["MAX_RESPONSE_BYTES", "ApiAuth", "api_key", "bearer", "openapi"]

MAX_RESPONSE_BYTES: Final = 1024 * 1024
_TOKEN_RE: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name


@dataclass(frozen=True, slots=True)
class ApiAuth:
    """Where a secret goes in each request: see :func:`bearer` and :func:`api_key`.

    Attributes:
        variable: The runtime variable (a secret) holding the value.
        location: ``"header"`` or ``"query"``.
        name: The header or query parameter's name.
        prefix: Put before the value (``"Bearer "``).
    """

    variable: str
    location: Literal["header", "query"]
    name: str
    prefix: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.variable, str) or not self.variable:
            raise ToolDefinitionError("an auth variable needs a non-empty name")
        if self.location not in ("header", "query"):
            raise ToolDefinitionError("auth goes in a 'header' or the 'query'")
        if not isinstance(self.name, str) or not self.name:
            raise ToolDefinitionError("an auth header or query parameter needs a name")
        if self.location == "header" and not _TOKEN_RE.match(self.name):
            raise ToolDefinitionError(f"{self.name!r} is not a valid header name")


def bearer(variable: str) -> ApiAuth:
    """``Authorization: Bearer <value of the secret variable>`` on each request."""
    return ApiAuth(variable, "header", "Authorization", "Bearer ")


def api_key(variable: str, *, header: str | None = None, query: str | None = None) -> ApiAuth:
    """The secret variable's value as an API key, in ``header=`` or as the ``query=`` parameter
    (one of them; default: the ``X-API-Key`` header)."""
    if header is not None and query is not None:
        raise ToolDefinitionError("api_key: give header= or query=, not both")
    if query is not None:
        return ApiAuth(variable, "query", query)
    return ApiAuth(variable, "header", header or "X-API-Key")


def openapi(
    name: str,
    spec: Mapping[str, Any] | str | os.PathLike[str],
    *,
    base_url: str,
    allow: Iterable[str] | None = None,
    auth: ApiAuth | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    description: str = "",
) -> Connector:
    """An HTTP API described by an OpenAPI 3.0/3.1 document, as a namespace of tools.

    Each operation becomes a tool named by its ``operationId`` (else ``method_path``), mapped
    to an identifier (:func:`identifier_names`). Its argument is one object: the path, query
    and header parameters by name and ``body`` for a JSON request body; a query or header
    parameter whose name is taken (by a path parameter, or ``body``) gets ``_query`` or
    ``_header`` after it. Its value is the 2xx response's JSON (typed by the document's
    response schema), its text, or ``None``; any other status fails with
    ``HTTP 404 Not Found: <the body's first 500 characters>``.

    Args:
        name: The namespace (an identifier).
        spec: The document: a dict, or the path of a JSON or YAML file (at most 10 MiB).
            ``$ref`` resolves only inside it; an external one refuses the document.
        base_url: What each operation's path is appended to (``https://host/v2``).
        allow: URL prefixes and hosts requests and redirects may go to (default: only
            ``base_url``'s prefix); ``base_url`` must be one of them.
        auth: :func:`bearer` or :func:`api_key`: the secret variable read at each call and
            added on the host, only to requests to ``base_url``'s origin.
        headers: Fixed headers every request carries (added on the host).
        timeout: Seconds a whole call may take, redirects included.
        max_response_bytes: A larger response fails the call (it is not cut short).
        description: A line on what the API is.

    Raises:
        ToolDefinitionError: A bad argument, or a document that is not OpenAPI 3.0/3.1, is
            too large (over 2,000 operations), or has an external ``$ref``.
    """
    try:
        from ._openapi_connector import OpenAPIConnector
    except ImportError as exc:  # pragma: no cover - the 'connectors' extra brings httpx
        raise ToolDefinitionError(
            f"the OpenAPI connector needs httpx: install quickjail[connectors] ({exc})"
        ) from exc

    return OpenAPIConnector(
        name,
        spec,
        base_url=base_url,
        allow=allow,
        auth=auth,
        headers=headers,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        description=description,
    )
