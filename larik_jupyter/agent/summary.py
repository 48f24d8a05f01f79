"""One-line summaries of tool calls for status lines, rows and approvals."""

from __future__ import annotations

import json
from typing import Any

_MAX = 80


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX else text[: _MAX - 1] + "…"


def summarize_call(name: str, tool_input: dict[str, Any]) -> str:
    """`bash: pytest -q`, `edit: src/app.py`, `python: df.describe()`."""
    for key in ("command", "path", "pattern", "code", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {_clip(value)}"
    if not tool_input:
        return name
    return f"{name}: {_clip(json.dumps(tool_input, ensure_ascii=False))}"


def changed_by(tool: str) -> str:
    """Who made a file change the checkpoints did not capture, in words."""
    return "the shell" if tool in ("bash", "") else f"the tool `{tool}`"
