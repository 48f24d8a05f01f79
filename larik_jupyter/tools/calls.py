"""Stored tool calls in words, for every view of a session (the turn view, `/history`, the
export, the sidebar, the ledger, status lines, a branch's steps): each call is said by its
tool's own class (`Tool.summary`, `cells_named`, `plan_set`, `skill_loaded`), from its input
alone, so a transcript reads the same with or without an agent; a call of any other tool (an
MCP server's, a subagent's) by its input (`input_summary`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from larik_jupyter.llm.messages import Message
from larik_jupyter.session.call_summary import CellPosition, input_summary
from larik_jupyter.session.plan import Todo
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.registry import builtin_tool
from larik_jupyter.tools.skill import SkillTool


def tool_class(name: str) -> type[Tool] | None:
    """The class of the built-in tool (or `skill`) called `name`; None for any other name."""
    return SkillTool if name == SkillTool.name else builtin_tool(name)


def summarize_call(name: str, tool_input: Mapping[str, Any], position: CellPosition | None = None) -> str:
    """`bash: pytest -q`, `python: df.describe()…`, `notebook_edit: replace cell 3 ("df.groupby…")`:
    the call in one line; `position` numbers notebook cells as they stand in the open notebook."""
    cls = tool_class(name)
    return cls.summary(tool_input, position) if cls is not None else input_summary(name, tool_input)


def cells_named(name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The ids of the cells a call names (`cell id calc`), for its summary's hover; None: none."""
    cls = tool_class(name)
    return cls.cells_named(tool_input) if cls is not None else None


def cell_run(name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The id of the notebook cell a call runs, as its tool says (`Tool.cell_run`)."""
    cls = tool_class(name)
    return cls.cell_run(tool_input) if cls is not None else None


def plan_set(name: str, tool_input: Mapping[str, Any]) -> list[Todo] | None:
    """The plan a call sets (a view shows its checklist once it is done); None: none."""
    cls = tool_class(name)
    return cls.plan_set(tool_input) if cls is not None else None


def skill_loaded(name: str, tool_input: Mapping[str, Any]) -> str | None:
    """The skill a call loads (a view says so once it is done); None: none."""
    cls = tool_class(name)
    return cls.skill_loaded(tool_input) if cls is not None else None


def numbered_calls(messages: Iterable[Message], position: CellPosition | None = None) -> dict[str, str]:
    """Each tool call of `messages` by its id, as people name it: `call 3 (`python: df.head()`)`,
    numbered from 1 in the session's order (what `/egress --show N` takes)."""
    calls = [use for message in messages for use in message.tool_uses()]
    return {use.id: f"call {n} (`{summarize_call(use.name, use.input, position)}`)" for n, use in enumerate(calls, 1)}
