"""The `todo_write` tool: replace the task plan the user sees as a checklist."""

from __future__ import annotations

from typing import Any

from larik_jupyter.session.plan import checklist, parse_todos, progress
from larik_jupyter.session.tool_names import TODO_WRITE
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env


class TodoWriteTool(Tool):
    name = TODO_WRITE
    writes = frozenset()
    description = (
        "Replace the task plan shown to the user as a checklist. Send the whole list every "
        "time (it replaces the previous one): each item has content and a status of pending, "
        "in_progress or completed, at most one in_progress. Use it for work of three or more "
        "steps; mark an item in_progress before starting it and completed as soon as it is done."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The whole plan, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "What to do, imperative."},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                    },
                    "required": ["content", "status"],
                },
            },
        },
        "required": ["todos"],
    }

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        todos = parse_todos(args)
        return ToolResult(f"Plan updated ({progress(todos)}):\n{checklist(todos)}")
