"""A call as permission rules read it, for tests that decide calls against rules directly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from larik_jupyter.config.rules import CallSubject
from larik_jupyter.tools.registry import builtin_tool


def subject(tool: str, tool_input: Mapping[str, Any]) -> CallSubject:
    """What rules read of a call of `tool` with `tool_input`, as the tool itself says
    (`Tool.rule_subject`); a tool that is not built in (an MCP server's) by its name only."""
    cls = builtin_tool(tool)
    return cls().rule_subject(tool_input) if cls is not None else CallSubject((tool,))
