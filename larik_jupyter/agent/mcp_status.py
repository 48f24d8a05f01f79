"""What the agent says of its MCP servers: the names their tools get, each server's state,
the notices when one starts or awaits approval, and `/mcp`'s table."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from larik_jupyter import paths
from larik_jupyter.plural import counted

State = Literal["not started", "starting", "running", "failed", "awaiting approval", "stopped"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_NAME_MAX = 64


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>` as the model sees it. Both APIs take tool names matching
    `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's function-calling guide; Anthropic's tool use docs), so
    other characters are squeezed to `_`; a name that had to change (squeezed or cut to 64)
    ends in `_` and 8 hex digits of the SHA-256 of server and tool, so two tools never share
    a name and the same tool always gets the same one."""
    full = f"mcp__{server}__{tool}"
    safe = _UNSAFE.sub("_", full)
    if safe == full and len(full) <= _NAME_MAX:
        return full
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{safe[: _NAME_MAX - 9]}_{digest}"


def log_path(server: str) -> Path:
    """`logs/mcp-<name>.log` in the data dir: the server's stderr."""
    return paths.logs_dir() / f"mcp-{_UNSAFE.sub('_', server)}.log"


@dataclass(frozen=True)
class RemoteTool:
    """A tool a server lists: its own name, description and input schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ServerStatus:
    """What `/mcp` shows about one server."""

    name: str
    state: State
    reason: str = ""
    tools: list[RemoteTool] = field(default_factory=list)
    log: Path | None = None
    # The tools it lists whose input schema no API takes, each as "`name`: why" (not offered).
    left_out: list[str] = field(default_factory=list)


def started_notice(status: ServerStatus) -> str:
    """One line on a server just started: running with its tools, or why it failed."""
    if status.state == "running":
        left = f"; {len(status.left_out)} left out, see `/mcp`" if status.left_out else ""
        return f"MCP server `{status.name}` is running with {counted(len(status.tools), 'tool')}{left}."
    return f"MCP server `{status.name}` failed to start ({status.reason}); see {status.log}."


def awaiting_notice(status: ServerStatus) -> str:
    """What opening an agent says (headless, the whole story) about a server awaiting approval."""
    return f"MCP server `{status.name}` awaits your approval ({status.reason})."


def status_table(statuses: list[ServerStatus]) -> str:
    """`/mcp` as Markdown: each server with its status and tools."""
    if not statuses:
        return "No MCP servers are configured (add them under `mcpServers` in `.mcp.json` or your config)."
    rows = ["| server | status | tools |", "|---|---|---|"]
    for status in statuses:
        state = status.state + (f": {status.reason}" if status.reason else "")
        tools = ", ".join(f"`{tool_name(status.name, t.name)}`" for t in status.tools) or "—"
        if status.left_out:
            tools += "; left out (their input schema is not one any API takes): " + "; ".join(status.left_out)
        rows.append(f"| `{status.name}` | {state.replace('|', '/')} | {tools} |")
    return "\n".join(rows)
