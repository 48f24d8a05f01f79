"""The `todo_write` tool: replace the task plan the user sees as a checklist; a transcript's
current plan (the input of its last such call that succeeded)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from larik_jupyter.llm.messages import Message
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.session.plan import Todo, checklist, parse_todos, plan_of, progress
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env


class TodoWriteTool(Tool):
    name = "todo_write"
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

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        """`todo_write: 1/3 done`."""
        todos = plan_of(args)
        return f"{cls.name}: {progress(todos)}" if todos is not None else super().summary(args, position)

    @classmethod
    def plan_set(cls, args: Mapping[str, Any]) -> list[Todo] | None:
        return plan_of(args)


def current_plan(messages: Iterable[Message]) -> list[Todo] | None:
    """The plan of a transcript: the input of its last `todo_write` call that succeeded, or
    None when it has none (a plan lives only in the transcript, so a fork or rewind has its own)."""
    calls: dict[str, Mapping[str, Any]] = {}
    plan: list[Todo] | None = None
    for message in messages:
        for use in message.tool_uses():
            if use.name == TodoWriteTool.name:
                calls[use.id] = use.input
        for result in message.tool_results():
            given = calls.pop(result.tool_use_id, None)
            # An invalid input that still succeeded (another writer's file) changes nothing.
            todos = plan_of(given) if given is not None and not result.is_error else None
            if todos is not None:
                plan = todos
    return plan
