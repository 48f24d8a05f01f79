"""An MCP server (stdio, plain JSON-RPC with no SDK, so it can send what the SDK would not)
whose tools have schemas OpenAI or Anthropic refuse as they are, and one no API takes."""

from __future__ import annotations

import json
import sys
from typing import Any

LONG = "A tool with a very long description. " + "It says a lot. " * 100
TOOLS: list[dict[str, Any]] = [
    {"name": "fine", "description": "Return text unchanged.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "untyped", "description": "No top-level type.",
     "inputSchema": {"properties": {"text": {"type": "string"}}}},
    {"name": "bare_object", "description": "An object parameter without properties.",
     "inputSchema": {"type": "object", "properties": {"options": {"type": "object"}}}},
    {"name": "bare_array", "description": "An array parameter without items.",
     "inputSchema": {"type": "object", "properties": {"paths": {"type": "array"}}}},
    {"name": "wordy", "description": LONG, "inputSchema": {"type": "object", "properties": {}}},
    {"name": "hopeless", "description": "Its input is not an object.",
     "inputSchema": {"type": "string", "enum": ["a", "b"]}},
]


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return None  # a notification
    if method == "initialize":
        version = request.get("params", {}).get("protocolVersion", "2025-06-18")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "odd", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        args = request.get("params", {}).get("arguments") or {}
        result = {"content": [{"type": "text", "text": json.dumps(args)}], "isError": False}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
