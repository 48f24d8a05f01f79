"""Running a provider's stream to the end from synchronous code, for tests and notebooks."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from larik_jupyter.llm.events import MessageEnd, StreamEvent
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.provider import Provider, ToolSchema


async def _drain(
    provider: Provider, system: str, messages: list[Message], tools: list[ToolSchema]
) -> list[StreamEvent]:
    return [event async for event in provider.stream(system, messages, tools)]


def collect(
    provider: Provider,
    messages: list[Message],
    *,
    system: str = "",
    tools: Sequence[ToolSchema] = (),
) -> list[StreamEvent]:
    """Every event of one call, on a fresh event loop (not for use inside a running loop)."""
    return asyncio.run(_drain(provider, system, list(messages), list(tools)))


def final(events: list[StreamEvent]) -> MessageEnd:
    """The `MessageEnd` that closes `events`."""
    end = events[-1]
    if not isinstance(end, MessageEnd):
        raise AssertionError(f"the stream ended with {end!r}, not a MessageEnd")
    return end
