"""The OpenAPI connector's class: each operation of an OpenAPI 3.0/3.1 document as a tool.

``openapi("pets", "petstore.yaml", base_url="https://pets.example/v2",
auth=bearer("PETS_TOKEN"))`` gives a namespace whose ``getPetById({petId: 1})`` makes that
request on the host with httpx and resolves to the response's JSON. The guest never sees the
URL's secret parts: the secret is read from the thread's variables at each call and added
on the host; the tools declare it as a required secret variable, so a thread checks it is set
and redacts its value from everything it returns.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, quote_plus

import anyio
import httpx

from quickjail.runtime._result import ToolResult
from quickjail.runtime._tool import Tool, Variable, schema_tool
from quickjail.runtime.errors import ConnectorError, ToolDefinitionError

from ._base import Connector, identifier_names
from ._openapi import MAX_RESPONSE_BYTES, ApiAuth
from ._openapi_doc import Operation, document_summary, load_document, read_operations
from ._openapi_http import (
    MAX_REDIRECTS,
    Allowlist,
    decode_body,
    read_response,
    same_origin,
    status_error,
    with_auth,
)

if TYPE_CHECKING:
    from quickjail.runtime._state import ThreadState

__all__ = ["OpenAPIConnector"]

_TEMPLATE_RE: Final = re.compile(r"\{([^{}/]+)\}")
_HEADER_VALUE_RE: Final = re.compile(r"^[\t\x20-\x7e]*$")
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})


class OpenAPIConnector(Connector):
    """An HTTP API described by an OpenAPI document, as a namespace of operations.

    Made by :func:`openapi`; see there. Holds one ``httpx.AsyncClient`` in its own loop,
    closed with the connector.
    """

    def __init__(
        self,
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
    ) -> None:
        super().__init__(name, description=description)
        if auth is not None and not isinstance(auth, ApiAuth):
            raise ToolDefinitionError(
                "auth= takes connectors.bearer(...) or connectors.api_key(...)"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ToolDefinitionError("timeout must be a number of seconds")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ToolDefinitionError("timeout must be a positive number of seconds")
        if (
            isinstance(max_response_bytes, bool)
            or not isinstance(max_response_bytes, int)
            or max_response_bytes < 1
        ):
            raise ToolDefinitionError("max_response_bytes must be a positive int")
        self._base = _base_url(base_url)
        self._allow = Allowlist([base_url] if allow is None else _entries(allow))
        if not self._allow.admits(self._base):
            raise ToolDefinitionError(f"base_url {base_url!r} is not on the allowlist (allow=)")
        self._headers = _fixed_headers(headers)
        self._auth = auth
        self._timeout = float(timeout)
        self._max_bytes = max_response_bytes
        self._client: httpx.AsyncClient | None = None
        reserved_headers = {k.lower() for k in self._headers}
        reserved_query: set[str] = set()
        if auth is not None:
            if auth.location == "header":
                reserved_headers.add(auth.name.lower())
            else:
                reserved_query.add(auth.name)
        doc = load_document(spec)
        where = "the OpenAPI document" if isinstance(spec, Mapping) else repr(os.fspath(spec))
        operations = read_operations(doc, where, reserved_headers, reserved_query)
        if not description:  # the document's own title and summary line
            self._description = document_summary(doc)
        names = identifier_names(op.name for op in operations)
        variables = (
            (Variable(auth.variable, type="secret", required=True, description=f"{name} auth"),)
            if auth is not None
            else ()
        )
        self._prepared = [self._tool(op, names[op.name], variables) for op in operations]

    @property
    def base_url(self) -> str:
        """The URL every operation's path is appended to."""
        return str(self._base)

    def _tool(self, op: Operation, ident: str, variables: tuple[Variable, ...]) -> Tool:
        connector = self

        async def execute(state: ThreadState | None, args: dict[str, Any]) -> ToolResult:
            secret: str | None = None
            if connector._auth is not None:
                variable = connector._auth.variable
                secret = await state.env(variable) if state is not None else None
                if secret is None:
                    return ToolResult.failure(f"variable {variable!r} is not set")
            try:
                value = await connector.in_loop(connector._call, op, args, secret)
            except ConnectorError as exc:  # the message is for the model, as it is
                return ToolResult.failure(str(exc))
            return ToolResult.success(value)

        return schema_tool(
            name=ident,
            title=op.name if op.name != ident else None,
            description=op.description,
            execute=execute,
            variables=variables,
            schemas=(op.input_schema, op.output_schema),
        )

    async def _list_tools(self) -> list[Tool]:
        return list(self._prepared)

    async def _shutdown(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _call(self, op: Operation, args: dict[str, Any], secret: str | None) -> Any:
        """Make ``op``'s request (in the connector's loop) and return its value."""
        url, headers, content = self._request_parts(op, args)
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False,
                timeout=httpx.Timeout(self._timeout),
                trust_env=False,  # no proxy, no .netrc credentials from the environment
                headers={"Accept-Encoding": "gzip, deflate"},  # what read_response inflates
            )
        client = self._client
        method = op.method
        label = f"{op.method} {op.path[:200]}"
        start = url
        try:
            with anyio.fail_after(self._timeout):
                for hop in range(MAX_REDIRECTS + 1):
                    what = "the request's URL" if hop == 0 else "a redirect to"
                    self._allow.check(url, what)
                    sent_url, sent_headers = with_auth(
                        self._auth, secret if same_origin(url, start) else None, url, headers
                    )
                    request = client.build_request(
                        method, sent_url, headers=sent_headers, content=content
                    )
                    response = await client.send(request, stream=True)
                    try:
                        location = response.headers.get("location")
                        if response.status_code in _REDIRECTS and location is not None:
                            if hop == MAX_REDIRECTS:
                                raise ConnectorError(
                                    f"{label}: more than {MAX_REDIRECTS} redirects"
                                )
                            url = _redirect(url, location)
                            status = response.status_code
                            if (status == 303 and method != "HEAD") or (
                                status in (301, 302) and method == "POST"
                            ):
                                method, content = "GET", None
                                headers = httpx.Headers(headers)
                                headers.pop("content-type", None)
                            continue
                        body = await read_response(response, self._max_bytes)
                    finally:
                        await response.aclose()
                    if not response.is_success:
                        raise status_error(response, body)
                    return decode_body(response, body)
        except (TimeoutError, httpx.TimeoutException):
            raise ConnectorError(f"{label}: no complete response in {self._timeout:g} s") from None
        except httpx.HTTPError as exc:
            message = f"{label}: {type(exc).__name__}: {str(exc)[:300]}"
            raise ConnectorError(_scrubbed(message, secret)) from None
        except ConnectorError as exc:
            scrubbed = _scrubbed(str(exc), secret)
            if scrubbed != str(exc):  # a server that echoed the key in an error body
                raise ConnectorError(scrubbed) from None
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _request_parts(
        self, op: Operation, args: dict[str, Any]
    ) -> tuple[httpx.URL, httpx.Headers, bytes | None]:
        """The URL, headers and body of ``op`` called with (validated) ``args``."""
        segments: dict[str, str] = {}
        query: list[tuple[str, str | int | float | bool | None]] = []
        headers = httpx.Headers(self._headers)
        for param in op.parameters:
            if param.key not in args or args[param.key] is None:
                continue
            value = args[param.key]
            if param.location == "path":
                text = json.dumps(value) if param.as_json else _joined(value)
                if text in ("", ".", ".."):
                    raise ConnectorError(f"path parameter {param.key!r} cannot be {text!r}")
                segments[param.name] = quote(text, safe="")
            elif param.location == "query":
                if param.as_json:
                    query.append((param.name, json.dumps(value)))
                elif isinstance(value, list) and param.explode:
                    query.extend((param.name, _scalar(v)) for v in value)
                else:
                    query.append((param.name, _joined(value)))
            else:
                text = json.dumps(value) if param.as_json else _joined(value)
                if not _HEADER_VALUE_RE.match(text):
                    raise ConnectorError(
                        f"header parameter {param.key!r} holds a character a header cannot"
                    )
                headers[param.name] = text
        path = _TEMPLATE_RE.sub(lambda m: segments.get(m.group(1), m.group(0)), op.path)
        url = httpx.URL(str(self._base).rstrip("/") + path)
        if query:
            url = url.copy_merge_params(query)
        content: bytes | None = None
        if "body" in args and op.body != "none":
            content = json.dumps(args["body"], ensure_ascii=False).encode()
            headers["content-type"] = "application/json"
        return url, headers, content


def _scrubbed(message: str, secret: str | None) -> str:
    """``message`` without the secret (as it is, and percent-encoded as in a query): the
    thread redacts it too, this keeps it out of a message even where no thread runs."""
    if not secret:
        return message
    for form in {secret, quote(secret, safe=""), quote_plus(secret)}:
        message = message.replace(form, "[REDACTED]")
    return message


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_scalar(v) for v in value)
    return _scalar(value)


def _redirect(url: httpx.URL, location: str) -> httpx.URL:
    try:
        return url.join(location)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise ConnectorError(f"a redirect to an invalid URL {location[:200]!r}") from None


def _base_url(base_url: Any) -> httpx.URL:
    if not isinstance(base_url, str) or not base_url:
        raise ToolDefinitionError("base_url must be an http(s) URL")
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise ToolDefinitionError(f"base_url {base_url!r} is not a URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ToolDefinitionError(f"base_url {base_url!r} must be an http(s) URL")
    if url.userinfo:
        raise ToolDefinitionError("base_url must not hold credentials: use auth=")
    if url.query or url.fragment:
        raise ToolDefinitionError("base_url must not have a query or a fragment")
    return url


def _entries(allow: Iterable[str]) -> list[str]:
    if isinstance(allow, str):
        return [allow]
    try:
        return list(allow)
    except TypeError as exc:
        raise ToolDefinitionError("allow= takes URL prefixes or hosts") from exc


def _fixed_headers(headers: Mapping[str, str] | None) -> httpx.Headers:
    if headers is None:
        return httpx.Headers()
    if not isinstance(headers, Mapping):
        raise ToolDefinitionError("headers= takes a mapping of str to str")
    for key, value in headers.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ToolDefinitionError("headers= takes a mapping of str to str")
        if not key or not _HEADER_VALUE_RE.match(value) or not _HEADER_VALUE_RE.match(key):
            raise ToolDefinitionError(f"headers=: {key!r} is not a valid header")
    return httpx.Headers(dict(headers))
