"""What an agent is configured with once (`AgentOptions`), handed as one object from the front
end through `api.Agent` and `open_agent` to the turn loop; a session switch (resume, fork,
new) reuses it, `dataclasses.replace` changing what changes (the model, the MCP servers)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict, Unpack

from larik_jupyter.agent.mcp import McpManager
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.egress.kernel_rules import KernelRules
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.host import KernelHost


@dataclass(frozen=True, kw_only=True)
class AgentOptions:
    """An agent's configuration. `cwd`: its directory (absolute); `model`: `provider:model`
    (None: the configured one, or a resumed session's own); `yes`: allow calls that would ask;
    `approver`: async callback answering asks; `host`: what a Jupyter kernel offers (namespace,
    display, open notebooks, cell runner: `tools/host.py`; None: the kernel-only tools say they
    need a kernel); `protect`: python code that changes an existing kernel variable always asks
    first; `tools`: `Tool`s of your own, offered after the built-in ones; `mcp`: the MCP servers
    of an agent this one replaces in the same directory, reused; `for_turns` False: open the
    session only to act on it (`larik-jupyter undo`): refused with `SessionLockedError` when
    another process holds it, no MCP server starts, a model that cannot be set up fails a turn;
    `egress_rules`: the notebook's egress rules every session of the agent shares (a kernel's,
    held by all its agents)."""

    cwd: Path
    model: str | None = None
    yes: bool = False
    approver: Approver | None = None
    host: KernelHost | None = None
    protect: bool = False
    tools: Sequence[Tool] = ()
    mcp: McpManager | None = None
    for_turns: bool = True
    egress_rules: KernelRules = field(default_factory=KernelRules)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(self.tools))  # frozen: a list given stays the caller's


class OptionKeywords(TypedDict, total=False):
    """`AgentOptions` as the keywords of `Agent(...)` (all but `cwd`)."""

    model: str | None
    yes: bool
    approver: Approver | None
    host: KernelHost | None
    protect: bool
    tools: Sequence[Tool]
    mcp: McpManager | None
    for_turns: bool
    egress_rules: KernelRules


def agent_options(cwd: str | os.PathLike[str] | None, **keywords: Unpack[OptionKeywords]) -> AgentOptions:
    """The options the keywords of `Agent(...)` name, in `cwd` (default: the current directory)."""
    return AgentOptions(cwd=Path(os.path.abspath(os.fspath(cwd or os.getcwd()))), **keywords)
