"""The tools one agent offers: the built-in ones its `Env` can run, the ones that need the
agent itself (`task`, `skill`), and how a reply's calls are grouped to run."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from larik_jupyter.agent.subagents import TaskTool
from larik_jupyter.llm.messages import ToolUseBlock
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.registry import default_tools
from larik_jupyter.tools.skill import SkillTool

if TYPE_CHECKING:
    from larik_jupyter.agent.loop import AgentLoop


def agent_tools(loop: AgentLoop) -> dict[str, Tool]:
    """The tools of the turn loop `loop` by name (MCP tools are added as their servers list them): a
    subagent gets no `task` of its own, skills only when there are some."""
    tools = default_tools(loop.env)
    extra: list[Tool] = []
    if loop.parent is None and loop.loaded.config.max_subagents > 0:
        extra.append(TaskTool(loop))
    if loop.loaded.skills:
        extra.append(SkillTool(lambda: loop.loaded.skills))
    return tools | {tool.name: tool for tool in extra}


def concurrent_batches(
    calls: list[ToolUseBlock], tools: Mapping[str, Tool]
) -> Iterator[list[ToolUseBlock]]:
    """The calls in order, with neighbouring calls of a `concurrent` tool grouped to run
    together; every other call is a batch of its own."""
    batch: list[ToolUseBlock] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is not None and tool.concurrent:
            batch.append(call)
            continue
        if batch:
            yield batch
            batch = []
        yield [call]
    if batch:
        yield batch
