"""The open session's MCP and language servers with their state (`Agent.servers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.agent.mcp_status import ServerStatus
from larik_jupyter.lsp.manager import ServerState

if TYPE_CHECKING:
    from larik_jupyter.agent.loop import AgentLoop


class SessionServers:
    """The servers the open session started."""

    def __init__(self, loop: AgentLoop) -> None:
        self._loop = loop

    def mcp(self) -> list[ServerStatus]:
        """The MCP servers with their state (a server that died while idle shows as failed)."""
        return self._loop.mcp.check() if self._loop.mcp is not None else []

    def lsp(self) -> list[ServerState]:
        """The language servers with their state."""
        return self._loop.lsp.states()
