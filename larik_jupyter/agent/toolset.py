"""The tools one agent offers: the built-in ones its `Env` can run, the ones that need the
agent itself (`task`, `skill`), and how a reply's calls are grouped to run."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from larik_jupyter.agent.subagents import Parent, TaskTool
from larik_jupyter.config.layers import LoadedConfig
from larik_jupyter.config.skills import Skill
from larik_jupyter.llm.messages import ToolUseBlock
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.registry import default_tools
from larik_jupyter.tools.skill import SkillTool


def agent_tools(
    env: Env, loaded: LoadedConfig, *, tasks_for: Parent | None, skills: Callable[[], list[Skill]]
) -> dict[str, Tool]:
    """The tools of a turn loop working in `env` on `loaded` by name (MCP tools are added as
    their servers list them): `task` only for a loop that may hand out subagents (`tasks_for`:
    None in a subagent), `skill` only when there are skills (`skills` reads the current ones)."""
    tools = default_tools(env)
    extra: list[Tool] = []
    if tasks_for is not None and loaded.config.max_subagents > 0:
        extra.append(TaskTool(tasks_for))
    if loaded.skills:
        extra.append(SkillTool(skills))
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
