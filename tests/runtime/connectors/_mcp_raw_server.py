"""A hostile MCP server written without the SDK (the SDK's own server refuses to send such
things): it answers the handshake, then lists tools and answers calls with data MCP does not
allow or that no client should trust, as ``--mode`` says."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

OBJECT: dict[str, Any] = {"type": "object"}


def tools(mode: str) -> list[dict[str, Any]]:
    if mode == "odd-schemas":
        return [
            {"name": "props_not_a_map", "inputSchema": {"type": "object", "properties": 5}},
            {"name": "ok", "inputSchema": OBJECT},
        ]
    if mode == "odd-names":
        return [
            {"name": "x" * 10_000, "inputSchema": OBJECT},
            {"name": "", "inputSchema": OBJECT},
            {"name": "ok", "inputSchema": OBJECT},
        ]
    return [{"name": "ok", "inputSchema": OBJECT}]


def answer(mode: str, request: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        result: Any = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    elif method == "tools/list":
        if mode == "not-a-listing":
            result = {"tools": 5}
        else:
            result = {"tools": tools(mode)}
    elif method == "tools/call":
        if mode == "not-a-result":
            result = {"content": "text, not a list of blocks"}
        else:
            result = {"content": [{"type": "text", "text": "fine"}]}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="odd-schemas")
    mode = parser.parse_args().mode
    for line in sys.stdin:
        if mode == "garbage":
            sys.stdout.write("this is not JSON\n{]\n")
        reply = answer(mode, json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
