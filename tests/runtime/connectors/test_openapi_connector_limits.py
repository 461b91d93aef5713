"""The OpenAPI connector against bad input: hostile documents and misbehaving servers.

Every case ends in a clear error (or a bounded result) through the public API; work is
bounded by counters (schema copies made, requests a server saw), not by timing.
"""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_support import PetServer, echo_document, serving

from quickjail.runtime import Tool
from quickjail.runtime.connectors import _openapi_doc, openapi
from quickjail.runtime.connectors._openapi_http import MAX_JSON_DEPTH, Allowlist, read_response
from quickjail.runtime.errors import ConnectorError, ToolDefinitionError

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[PetServer]:
    with serving() as running:
        yield running


async def tools_of(connector: Any) -> dict[str, Tool]:
    return {tool.name: tool for tool in await connector.tools()}


async def call(server: PetServer, op: str, args: dict[str, Any], **options: Any) -> Any:
    async with openapi("odd", echo_document(), base_url=server.url, **options) as c:
        return await (await tools_of(c))[op].call(args)


async def test_a_redirect_on_the_allowlist_is_followed(server: PetServer) -> None:
    result = await call(server, "redirect", {"to": "/echo/next", "status": "307"})
    assert result.status == "success" and result.result["path"] == "/echo/next"
    arrived = await call(server, "chain", {"n": 5})
    assert arrived.result == {"arrived": True}


async def test_a_redirect_off_the_allowlist_fails_and_is_not_followed(server: PetServer) -> None:
    with serving() as other:
        result = await call(server, "redirect", {"to": f"{other.url}/echo/x?k=v"})
        tricks = [
            await call(server, "redirect", {"to": f"http://user:pw@{other.url[7:]}/echo/x"}),
            await call(server, "redirect", {"to": f"{server.url}@{other.url[7:]}/echo/x"}),
        ]
        assert other.requests == []
    assert result.status == "error"
    assert result.error is not None
    assert result.error.endswith(f"a redirect to {other.url}/echo/x is not on the allowlist")
    for refused in tricks:
        assert refused.status == "error" and "not on the allowlist" in (refused.error or "")


async def test_a_sixth_redirect_fails(server: PetServer) -> None:
    result = await call(server, "chain", {"n": 6})
    assert result.status == "error" and "more than 5 redirects" in (result.error or "")
    assert len(server.requests) == 6


async def test_a_response_over_the_byte_limit_fails_rather_than_being_cut(
    server: PetServer,
) -> None:
    declared = await call(server, "big", {})
    assert declared.status == "error"
    assert "is 2,097,164 bytes, over the limit of 1,048,576 bytes" in (declared.error or "")
    streamed = await call(server, "bigChunked", {}, max_response_bytes=100_000)
    assert streamed.status == "error"
    assert "over the limit of 100,000 bytes" in (streamed.error or "")


async def test_a_compressed_body_is_inflated_only_up_to_the_byte_limit(
    server: PetServer,
) -> None:
    small = await call(server, "gzip", {"size": 1_000})
    assert small.status == "success" and small.result == {"data": "0" * 1_000}
    # 64 MiB of JSON in ~64 KiB of gzip: refused once 1 MiB is inflated
    bomb = await call(server, "gzip", {"size": 64 * 1024 * 1024})
    assert bomb.status == "error"
    assert "over the limit of 1,048,576 bytes" in (bomb.error or "")
    other = await call(server, "gzip", {"size": 10, "X-Encoding": "br"})
    assert other.status == "error"
    assert "Content-Encoding 'br' is not supported" in (other.error or "")


class _OneChunk(httpx.AsyncByteStream):
    """A response body of one raw chunk (an iterator, not a generator: nothing to finalize)."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def __aiter__(self) -> _OneChunk:
        return self

    async def __anext__(self) -> bytes:
        if self._data is None:
            raise StopAsyncIteration
        data, self._data = self._data, None
        return data


async def test_inflating_a_compression_bomb_holds_memory_near_the_byte_limit() -> None:
    packed = gzip.compress(bytes(64 * 1024 * 1024), compresslevel=9)  # ~64 KiB

    response = httpx.Response(200, headers={"content-encoding": "gzip"}, stream=_OneChunk(packed))
    tracemalloc.start()
    try:
        with pytest.raises(ConnectorError, match="over the limit of 1,048,576 bytes"):
            await read_response(response, 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024  # inflating the chunk whole would hold 64 MiB


async def test_a_server_that_does_not_answer_in_time_fails_the_call(server: PetServer) -> None:
    result = await call(server, "slow", {}, timeout=0.5)
    assert result.status == "error"
    assert (result.error or "").endswith("GET /slow: no complete response in 0.5 s")


async def test_deeply_nested_json_fails_with_a_clear_error(server: PetServer) -> None:
    result = await call(server, "deep", {})
    assert result.status == "error"
    assert f"nested deeper than {MAX_JSON_DEPTH}" in (result.error or "")


async def test_a_charset_python_does_not_know_reads_as_utf_8(server: PetServer) -> None:
    result = await call(server, "charset", {})
    assert result.status == "success" and result.result == "h\u00e9llo"


async def test_parameters_no_request_could_carry_are_left_out() -> None:
    doc = echo_document()
    doc["paths"]["/echo/{item}"]["get"]["parameters"] += [
        {"name": "Bad Header", "in": "header", "schema": {"type": "string"}},
        {"name": "x" * 201, "in": "query", "schema": {"type": "string"}},
        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
    ]
    async with openapi("odd", doc, base_url="http://127.0.0.1:9") as c:
        echo = (await tools_of(c))["echo"]
    assert set(echo.input_schema["properties"]) == {
        "item", "item_query", "body_header", "X-Trace", "tags",
    }  # fmt: skip


@pytest.mark.parametrize("item", ["..", ".", ""], ids=["dotdot", "dot", "empty"])
async def test_a_path_parameter_cannot_be_a_dot_segment(server: PetServer, item: str) -> None:
    result = await call(server, "echo", {"item": item})
    assert result.status == "error" and "cannot be" in (result.error or "")
    assert server.requests == []


async def test_a_path_parameter_cannot_change_the_path_structure(server: PetServer) -> None:
    result = await call(server, "echo", {"item": "../../v2/pet/1?x=1#f"})
    assert result.status == "success"
    assert [r["path"] for r in server.requests] == ["/echo/..%2F..%2Fv2%2Fpet%2F1%3Fx%3D1%23f"]
    assert server.requests[0]["query"] == {}


@pytest.mark.parametrize(
    ("url", "admitted"),
    [
        ("https://api.example.com/v1/pets", True),
        ("https://api.example.com/v1", True),
        ("https://api.example.com:443/v1/x", True),
        ("https://API.EXAMPLE.COM/v1/x", True),
        ("https://api.example.com/v10/x", False),
        ("https://api.example.com/v2/x", False),
        ("https://api.example.com/v1/../admin", False),
        ("https://api.example.com/v1/%2e%2e/admin", False),
        ("https://api.example.com/v1/%2E./admin", False),
        ("http://api.example.com/v1/x", False),
        ("https://api.example.com:8443/v1/x", False),
        ("https://u:p@api.example.com/v1/x", False),
        ("https://api.example.com.evil.io/v1/x", False),
        ("https://files.example.com/anything", True),
        ("http://files.example.com/anything", True),
        ("http://files.example.com:8080/anything", False),
        ("http://127.0.0.1:8080/x", True),
        ("http://127.0.0.1:8081/x", False),
        ("ftp://files.example.com/x", False),
    ],
)
def test_the_allowlist_compares_scheme_host_port_and_path_prefix(url: str, admitted: bool) -> None:
    allow = Allowlist(["https://api.example.com/v1", "files.example.com", "127.0.0.1:8080"])
    assert allow.admits(httpx.URL(url)) is admitted


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base_url": "http://127.0.0.1:9", "allow": ["http://127.0.0.2"]}, "not on the allowlist"),
        ({"base_url": "http://u:p@127.0.0.1:9"}, "must not hold credentials"),
        ({"base_url": "ftp://127.0.0.1"}, "http"),
        ({"base_url": "http://127.0.0.1:9", "allow": ["http://h/?q=1"]}, "a query"),
        ({"base_url": "http://127.0.0.1:9", "timeout": 0}, "positive"),
        ({"base_url": "http://127.0.0.1:9", "max_response_bytes": 0}, "positive int"),
        ({"base_url": "http://127.0.0.1:9", "headers": {"X": "a\r\nB: c"}}, "not a valid header"),
    ],
    ids=["base-off-list", "userinfo", "scheme", "allow-query", "timeout", "max-bytes", "crlf"],
)
def test_bad_connector_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        openapi("odd", echo_document(), **options)


def _with_body_schema(schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/things": {
                "post": {
                    "operationId": "make",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": schema}},
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        **extra,
    }


@pytest.mark.parametrize(
    "ref",
    ["other.yaml#/components/schemas/Pet", "https://example.com/pet.json", "pet.json"],
)
def test_an_external_ref_refuses_the_document_naming_it(ref: str) -> None:
    doc = _with_body_schema({"type": "object", "properties": {"pet": {"$ref": ref}}})
    with pytest.raises(ToolDefinitionError) as caught:
        openapi("api", doc, base_url="http://127.0.0.1:9")
    message = str(caught.value)
    assert f"external $ref {ref!r}" in message
    assert "#/paths/~1things/post/requestBody/content/application~1json/schema/properties/pet" in (
        message
    )


async def test_a_recursive_schema_is_cut_where_it_repeats() -> None:
    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
        },
    }
    doc = _with_body_schema(
        {"$ref": "#/components/schemas/Node"}, components={"schemas": {"Node": node}}
    )
    async with openapi("api", doc, base_url="http://127.0.0.1:9") as c:
        tool = (await tools_of(c))["make"]
    body = tool.input_schema["properties"]["body"]
    assert body["properties"]["children"]["items"] == {}  # the repeat takes any value
    assert "children" in tool.typescript_declaration


async def test_a_deep_schema_and_a_yaml_alias_bomb_cost_bounded_work(tmp_path: Path) -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        deep = {"type": "object", "properties": {"a": deep}}
    async with openapi("api", _with_body_schema(deep), base_url="http://127.0.0.1:9") as c:
        tool = (await tools_of(c))["make"]
    assert len(str(tool.input_schema)) < 5_000  # cut at the depth cap
    # a billion laughs: 9 levels of 9 aliases each, 387,420,489 leaves when expanded
    lines = ["openapi: 3.0.3", "info: {title: t, version: '1'}", "paths: {}", "x-bomb:"]
    lines.append('  l0: &l0 ["lol"]')
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"  l{level}: &l{level} [{refs}]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    async with openapi("api", path, base_url="http://127.0.0.1:9") as c:
        assert await c.tools() == ()


def _many_operations(count: int, schema: dict[str, Any]) -> dict[str, Any]:
    paths = {
        f"/op{i}": {
            "post": {
                "operationId": f"op{i}",
                "requestBody": {"content": {"application/json": {"schema": schema}}},
                "responses": {"200": {"description": "ok"}},
            }
        }
        for i in range(count)
    }
    return {"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": paths}


def _counting_copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = _openapi_doc.bounded_schema

    def counted(schema: Any, root: Any = None) -> Any:
        calls.append(1)
        return real(schema, root)

    monkeypatch.setattr(_openapi_doc, "bounded_schema", counted)
    return calls


def test_5000_operations_are_refused_before_any_schema_is_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting_copies(monkeypatch)
    with pytest.raises(ToolDefinitionError, match="over 2,000 operations"):
        openapi("api", _many_operations(5_000, {"type": "object"}), base_url="http://127.0.0.1:9")
    assert calls == []


async def test_schemas_past_the_documents_budget_stop_the_load_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(1_500)}}
    doc = _many_operations(2_000, {"$ref": "#/components/schemas/Wide"})
    doc["components"] = {"schemas": {"Wide": wide}}
    calls = _counting_copies(monkeypatch)
    with pytest.raises(ToolDefinitionError, match="schemas add up to over 400,000 nodes"):
        openapi("api", doc, base_url="http://127.0.0.1:9")
    # each copy keeps ~3,000 nodes: the load stopped after ~134 of 2,000 operations
    assert len(calls) <= _openapi_doc.MAX_SCHEMA_NODES // 3_000 + 2
    # 2,000 small operations load, each a tool
    small = _many_operations(2_000, {"type": "object", "properties": {"x": {"type": "integer"}}})
    async with openapi("api", small, base_url="http://127.0.0.1:9") as c:
        assert len(await c.tools()) == 2_000
