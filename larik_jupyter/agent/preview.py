"""What an approval shows: the tool's own preview of the call (its `preview` trait)."""

from __future__ import annotations

from typing import Any

from larik_jupyter.errors import LarikError, exception_text
from larik_jupyter.tools.base import Tool, os_error_text
from larik_jupyter.tools.env import Env


def preview_change(env: Env, tool: Tool, tool_input: dict[str, Any]) -> str:
    """A read-only preview of the call; never touches the disk, never raises: a preview that
    fails says why instead (the call itself then fails with its own error result)."""
    try:
        return tool.preview(env, tool_input)
    except LarikError as exc:
        return f"(no preview: {exc})"
    except OSError as exc:
        return f"(no preview: {os_error_text(exc)})"
    except Exception as exc:
        return f"(no preview: {exception_text(exc)})"
