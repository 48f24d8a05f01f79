"""Who decides whether a tool call runs: config rules first, then defaults, then the user."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# Tools that only look: allowed by default inside the project (the tools confine paths).
# `todo_write` touches no file; `skill` only reads a skill's folder.
READ_ONLY_TOOLS = frozenset(
    {"read", "glob", "grep", "ls", "inspect_variables", "diagnostics", "todo_write", "skill", "notebook_read"}
)

Decision = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class PermissionRequest:
    """An ask shown to the user: the call, a one-line summary and what it would do."""

    id: str
    tool: str
    input: dict[str, Any]
    summary: str
    detail: str


@dataclass(frozen=True)
class PermissionAnswer:
    """`allow` once, `always` (remembered as a rule in private project settings) or `deny`."""

    decision: Literal["allow", "always", "deny"]
    message: str = ""


# None means nobody can answer right now (a headless run): the call is treated as unanswerable.
Approver = Callable[[PermissionRequest], Awaitable[PermissionAnswer | None]]


def default_decision(tool: str) -> Decision:
    """Reads are allowed; writes, bash, python and anything else ask."""
    return "allow" if tool in READ_ONLY_TOOLS else "ask"


def always_rule(tool: str, tool_input: dict[str, Any], cwd: Path) -> str:
    """The rule an "always allow" answer stores: the exact command or absolute path.

    A relative path pattern would match that name at any depth, so paths are stored absolute.
    """
    if tool == "bash":
        return f"bash({tool_input.get('command', '')})"
    path = tool_input.get("path")
    if isinstance(path, str) and path:
        return f"{tool}({os.path.normpath(cwd / path)})"
    return tool
