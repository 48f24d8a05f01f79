"""Plans: the checklist a `todo_write` call sets (`tools/plan.py` reads a transcript's current one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from larik_jupyter.errors import LarikError, first_problem

Status = Literal["pending", "in_progress", "completed"]

_BOX = {"completed": "[x]", "in_progress": "[ ]", "pending": "[ ]"}


class PlanError(LarikError):
    """A `todo_write` input that is not a valid plan; the message says what to fix."""


class Todo(BaseModel):
    """One item of a plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str = Field(min_length=1)
    status: Status


class _Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    todos: list[Todo]


def parse_todos(tool_input: Mapping[str, Any]) -> list[Todo]:
    """The plan a `todo_write` input sets; raises `PlanError` naming the first problem."""
    try:
        todos = _Plan.model_validate(dict(tool_input)).todos
    except ValidationError as exc:
        where, what = first_problem(exc, "input")
        raise PlanError(
            f"todo_write input is invalid at {where}: {what}; each item needs a "
            "non-empty content and a status of pending, in_progress or completed."
        ) from None
    active = [t.content for t in todos if t.status == "in_progress"]
    if len(active) > 1:
        raise PlanError(
            f"todo_write got {len(active)} items in_progress ({', '.join(active)}); "
            "at most one item may be in_progress, so mark the others pending or completed."
        )
    return todos


def plan_of(tool_input: Mapping[str, Any]) -> list[Todo] | None:
    """The plan a recorded `todo_write` input sets, or None when it is not a valid one."""
    try:
        return parse_todos(tool_input)
    except PlanError:
        return None


def checklist(todos: list[Todo]) -> str:
    """The plan as a Markdown task list; the item in progress is bold and marked so."""
    if not todos:
        return "_(the plan is empty)_"
    lines = []
    for todo in todos:
        text = " ".join(todo.content.split())
        if todo.status == "in_progress":
            text = f"**{text}** _(in progress)_"
        lines.append(f"- {_BOX[todo.status]} {text}")
    return "\n".join(lines)


def progress(todos: list[Todo]) -> str:
    """`2/5 done`."""
    done = sum(t.status == "completed" for t in todos)
    return f"{done}/{len(todos)} done"
