"""`mcp:<client>`: the "model" of a session an outside agent drives over MCP.

Such a session's turns are the client's tool calls, not replies of a model larik calls, so
this provider never streams: a prompt sent in that session says how to go on with a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from larik_jupyter.llm.events import StreamEvent
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.models import UNKNOWN
from larik_jupyter.llm.provider import ProviderError, RequestDoor, ToolSchema

PREFIX = "mcp"


class OutsideProvider:
    """The provider named `mcp:<client>`; streaming raises a `ProviderError` saying why."""

    def __init__(self, client: str) -> None:
        self.model = client
        self.name = f"{PREFIX}:{client}"
        self.info = UNKNOWN
        self.http_client_factory: Callable[[], Any] | None = None
        self.door: RequestDoor | None = None  # it sends no request; what goes to the client passes the door itself

    async def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> AsyncIterator[StreamEvent]:
        raise ProviderError(
            f"This session records the tool calls of the outside agent {self.model} (over MCP); "
            "no model answers prompts in it. Choose one with `/model PROVIDER:MODEL` to prompt here."
        )
        yield  # an async generator, as every provider's stream is
