"""An MCP server written with the official SDK's low-level server, for the connector's tests.

Run as ``python _mcp_server.py [--http PORT [--json]] [--child] [--listing LISTING]``
(``normal``, ``hostile``, ``many:N``, ``endless``): over stdio by default, or over streamable
HTTP on ``127.0.0.1:PORT`` (answers as server-sent events, or as JSON bodies with ``--json``).
Its tools cover the value rules (structured content, JSON text, plain text, non-text blocks),
``isError``, a call that never answers, a server that dies mid-call, a line that never ends,
and (``--child``) a process the server started; the other listings are hostile (names that
are no identifiers and collide, deep, huge and recursive schemas) or long (``many:N`` tools
over pages of 500).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

# the protocol's own stdout, saved before the SDK points descriptor 1 at the standard error:
# ``flood`` writes a line that never ends on it
WIRE_FD = os.dup(1)
PAGE = 500
CHILD: list[int] = []  # a process this server started and never ends (with --child)

NUMBER_PAIR: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
TEXT_ARG: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def normal_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name="add",
            description="Add two numbers.",
            input_schema=NUMBER_PAIR,
            output_schema={
                "type": "object",
                "properties": {"sum": {"type": "number"}},
                "required": ["sum"],
            },
        ),
        types.Tool(name="echo", description="Answer the text as text.", input_schema=TEXT_ARG),
        types.Tool(name="two_texts", description="Answer two text blocks.", input_schema=NO_ARGS),
        types.Tool(name="picture", description="Answer one image.", input_schema=NO_ARGS),
        types.Tool(name="fail", description="Answer isError.", input_schema=TEXT_ARG),
        types.Tool(name="sleep_forever", description="Never answer.", input_schema=NO_ARGS),
        types.Tool(name="die", description="Exit mid-call.", input_schema=NO_ARGS),
        types.Tool(name="pid", description="The server's process id.", input_schema=NO_ARGS),
        types.Tool(
            name="big_text",
            description="Answer a text of `size` characters.",
            input_schema={
                "type": "object",
                "properties": {"size": {"type": "integer"}},
                "required": ["size"],
            },
        ),
        types.Tool(name="flood", description="Write a line that never ends.", input_schema=NO_ARGS),
        types.Tool(
            name="header",
            description="The value of an HTTP request header (over HTTP), or null.",
            input_schema=TEXT_ARG,
        ),
        types.Tool(
            name="child_pid",
            description="The process id of a child the server started (with --child).",
            input_schema=NO_ARGS,
        ),
    ]


def deep_schema(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"inner": node}}
    return node


def hostile_tools() -> list[types.Tool]:
    recursive = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
            }
        },
    }
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 50} for i in range(5000)},
    }
    return [
        types.Tool(name="create-issue", description="A dashed name.", input_schema=NO_ARGS),
        types.Tool(name="create_issue", description="Collides once mapped.", input_schema=NO_ARGS),
        types.Tool(name="2fa", description="Starts with a digit.", input_schema=NO_ARGS),
        types.Tool(name="class", description="A reserved word.", input_schema=NO_ARGS),
        types.Tool(name="deep", description="A deep schema.", input_schema=deep_schema(60)),
        types.Tool(name="recursive", description="A recursive schema.", input_schema=recursive),
        types.Tool(name="huge", description="y" * 1_000_000, input_schema=huge),
    ]


async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    name, args = params.name, params.arguments or {}
    if name == "add":
        total = args["a"] + args["b"]
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps({"sum": total}))],
            structured_content={"sum": total},
        )
    if name == "echo":
        return types.CallToolResult(content=[types.TextContent(text=args["text"])])
    if name == "two_texts":
        return types.CallToolResult(
            content=[types.TextContent(text="first"), types.TextContent(text="second")]
        )
    if name == "picture":
        return types.CallToolResult(
            content=[types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")]
        )
    if name == "fail":
        return types.CallToolResult(content=[types.TextContent(text=args["text"])], is_error=True)
    if name == "sleep_forever":
        await anyio.sleep_forever()
    if name == "die":
        os._exit(3)
    if name == "pid":
        return types.CallToolResult(content=[], structured_content={"pid": os.getpid()})
    if name == "header":
        request = getattr(ctx, "request", None)
        value = request.headers.get(args["text"]) if request is not None else None
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(value))])
    if name == "child_pid":
        return types.CallToolResult(content=[], structured_content={"pid": CHILD[0]})
    if name == "big_text":
        return types.CallToolResult(content=[types.TextContent(text="z" * int(args["size"]))])
    if name == "flood":
        chunk = b'{"jsonrpc":"2.0","id":' + b"1" * (1 << 20)
        while True:  # until the client closes the pipe (the write then fails: exit)
            try:
                await anyio.to_thread.run_sync(os.write, WIRE_FD, chunk)
            except OSError:
                os._exit(0)
    return types.CallToolResult(
        content=[types.TextContent(text=f"called {name} with {json.dumps(args)}")]
    )


def make_server(listing: str) -> Server[Any]:
    if listing == "normal":
        tools = normal_tools()
    elif listing == "hostile":
        tools = [*hostile_tools(), *normal_tools()]
    elif listing.startswith("many:"):
        count = int(listing.split(":", 1)[1])
        tools = [
            types.Tool(name=f"tool_{i}", description=f"Tool number {i}.", input_schema=NO_ARGS)
            for i in range(count)
        ]
    elif listing == "endless":
        tools = []
    else:
        raise SystemExit(f"unknown listing {listing!r}")

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> Any:
        if listing == "endless":  # a page of nothing and a next cursor, forever
            return types.ListToolsResult(tools=[], next_cursor="again")
        start = int(params.cursor) if params is not None and params.cursor else 0
        page = tools[start : start + PAGE]
        more = start + PAGE < len(tools)
        return types.ListToolsResult(tools=page, next_cursor=str(start + PAGE) if more else None)

    return Server("quickjail-test-server", on_list_tools=list_tools, on_call_tool=call)


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--listing", default="normal")
    parser.add_argument("--json", action="store_true", help="answer HTTP POSTs with JSON, not SSE")
    parser.add_argument("--child", action="store_true", help="start a child that sleeps on")
    options = parser.parse_args()
    if options.child:
        import subprocess

        sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
        CHILD.append(subprocess.Popen(sleeper, stdin=subprocess.DEVNULL).pid)
    server = make_server(options.listing)
    if options.http is None:
        anyio.run(serve_stdio, server)
        return
    import uvicorn

    app = server.streamable_http_app(json_response=options.json)
    uvicorn.run(app, host="127.0.0.1", port=options.http, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
