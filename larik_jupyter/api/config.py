"""The project's config as the open session follows it (`Agent.config`): what its shared config
declares awaiting approval, approving it, and reading the config again when a file changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.agent.mcp_status import awaiting_notice
from larik_jupyter.config.layers import PendingApproval
from larik_jupyter.config.update import approve as approve_pending

if TYPE_CHECKING:
    from larik_jupyter.agent.loop import AgentLoop


class SessionConfig:
    """Approvals and config reloads of the open session."""

    def __init__(self, loop: AgentLoop) -> None:
        self._loop = loop

    def pending(self) -> list[PendingApproval]:
        """What the project's shared config declares that awaits the user's approval."""
        return list(self._loop.loaded.pending)

    def awaiting_notices(self) -> list[str]:
        """The opening notices saying only that an MCP server awaits approval (for a card)."""
        mcp = self._loop.mcp
        return [awaiting_notice(status) for status in mcp.awaiting] if mcp is not None else []

    def approve(self, name: str) -> list[str]:
        """Approve a pending MCP server, hook, allow rule or LSP server (`name` or `kind:name`,
        pinned to its definition's hash) and apply it to this agent now; returns notices."""
        approve_pending(self._loop.options.cwd, name)
        return self._loop.reload_config()

    def follow(self) -> list[str]:
        """Read the config again when one of its files changed since it was read (allow and
        deny rules the person set meanwhile): it applies from the next call. Returns notices."""
        return self._loop.reload_config() if self._loop.loaded.changed() else []
