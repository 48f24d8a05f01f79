"""The agent's tools: files, search, shell and (inside a kernel) Python.

The names below load on first access, so a light module of this package (what `%load_ext`
imports) does not bring in the message models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.errors import ToolError
    from larik_jupyter.tools.base import Tool, ToolResult
    from larik_jupyter.tools.env import Env
    from larik_jupyter.tools.registry import default_tools, tool_schemas

__all__ = ["Env", "Tool", "ToolError", "ToolResult", "default_tools", "tool_schemas"]

_LAZY = {
    "Env": "larik_jupyter.tools.env",
    "Tool": "larik_jupyter.tools.base",
    "ToolError": "larik_jupyter.errors",
    "ToolResult": "larik_jupyter.tools.base",
    "default_tools": "larik_jupyter.tools.registry",
    "tool_schemas": "larik_jupyter.tools.registry",
}


__getattr__ = lazy_names(__name__, _LAZY)
