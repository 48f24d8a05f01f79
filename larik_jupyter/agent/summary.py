"""One-line summaries of tool calls for status lines, rows and approvals."""

from __future__ import annotations

import json
from typing import Any

from larik_jupyter.session.plan import plan_of, progress
from larik_jupyter.session.tool_names import SKILL_TOOL, TODO_WRITE

_MAX = 80


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX else text[: _MAX - 1] + "…"


def summarize_call(name: str, tool_input: dict[str, Any]) -> str:
    """`bash: pytest -q`, `edit: src/app.py`, `python: df.describe()`, `todo_write: 1/3 done`."""
    if name == TODO_WRITE and (todos := plan_of(tool_input)) is not None:
        return f"{name}: {progress(todos)}"
    if name == SKILL_TOOL and isinstance(skill := tool_input.get("name"), str):
        return f"{name}: {_clip(skill)}"
    for key in ("command", "path", "pattern", "code", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {_clip(value)}"
    if not tool_input:
        return name
    return f"{name}: {_clip(json.dumps(tool_input, ensure_ascii=False))}"


# Tools whose approval preview (agent/preview.py) is the call's own text: the command, the code.
_CALL_PREVIEWS = frozenset({"bash", "python"})


def asked_label(tool: str, summary: str) -> str:
    """How an approval, and the status and tool row around it, name a pending call: by its
    summary, or by the tool alone when the preview already shows the call's text, so the code
    appears once."""
    return tool if tool in _CALL_PREVIEWS else summary


def changed_by(tool: str) -> str:
    """Who made a file change the checkpoints did not capture, in words."""
    return "the shell" if tool in ("bash", "") else f"the tool `{tool}`"
