"""The agent's tools: files, search, shell and (inside a kernel) Python."""

from __future__ import annotations

from larik_jupyter.tools.base import Tool, ToolError, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.registry import default_tools, tool_schemas

__all__ = ["Env", "Tool", "ToolError", "ToolResult", "default_tools", "tool_schemas"]
