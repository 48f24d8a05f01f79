"""A small MCP server for the tests, written with the `mcp` SDK's server API (stdio)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("tiny")


@server.tool()
def echo(text: str) -> str:
    """Return `text` unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def write_note(path: str, text: str) -> str:
    """Write `text` to the file `path` (relative to the server's working directory)."""
    Path(path).write_text(text, encoding="utf-8")
    return f"wrote {len(text)} characters to {path}"


@server.tool()
def crash() -> str:
    """Exit the server process at once, mid-call."""
    print("tiny server: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def hang(seconds: float) -> str:
    """Block for `seconds` without answering (its log says when it starts)."""
    print(f"tiny server: hanging for {seconds:g} s", file=sys.stderr, flush=True)
    time.sleep(seconds)
    return "woke up"


if __name__ == "__main__":
    print("tiny server: starting", file=sys.stderr, flush=True)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
