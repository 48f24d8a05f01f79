"""One model call of a turn: the provider's stream forwarded as agent events, the reply stored
as it ended (an interrupted one too, marked so), and the call's usage (estimated when the
server reported none)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping

from larik_jupyter.agent import events as ae
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.builder import MessageBuilder
from larik_jupyter.llm.messages import Message, Usage
from larik_jupyter.llm.provider import Provider, ProviderError, ToolSchema
from larik_jupyter.llm.tokens import estimate_tokens, has_tokens
from larik_jupyter.llm.valid_text import valid_event
from larik_jupyter.tools.base import Tool

# Stores a message (fsynced when the flag says so) and returns it as stored.
Store = Callable[[Message, bool], Message]


async def call_model(
    provider: Provider, system: str, context: list[Message], schemas: list[ToolSchema], *,
    emit: Callable[[ae.AgentEvent], None], store: Store, tools: Mapping[str, Tool],
) -> tuple[ev.MessageEnd, Usage]:
    """Stream one reply; its end event carries the message as stored, with the call's usage
    (`tools`: the tools offered, whose traits say whether a call touches the disk)."""
    builder = MessageBuilder()
    try:
        async for raw in provider.stream(system, context, schemas):
            event = valid_event(raw)
            builder.add(event)
            _forward(event, emit)
            if isinstance(event, ev.MessageEnd):
                usage = event.usage
                if usage.estimated and not has_tokens(usage):
                    # The server reported no usage: count the request and reply ourselves.
                    usage = Usage(
                        input_tokens=estimate_tokens(context, system, schemas),
                        output_tokens=estimate_tokens([event.message]),
                        estimated=True,
                    )
                reply = event.message
                if event.stop_reason == "refusal":
                    reply = reply.model_copy(update={"refused": True})
                # A tool about to touch the disk is a durability boundary; reads are not.
                message = store(reply, _touches_disk(reply, tools))
                return dataclasses.replace(event, message=message), usage
    except asyncio.CancelledError:
        partial = builder.message(interrupted=True)
        store(partial, True)
        emit(ae.AssistantMessage(partial))
        raise
    raise ProviderError(f"The model stream from {provider.name} ended without a message.")


def _forward(event: ev.StreamEvent, emit: Callable[[ae.AgentEvent], None]) -> None:
    if isinstance(event, ev.TextDelta):
        emit(ae.TextDelta(event.text))
    elif isinstance(event, ev.ThinkingDelta) and event.thinking:
        emit(ae.ThinkingDelta(event.thinking))
    elif isinstance(event, ev.Retrying):
        emit(event)
    elif isinstance(event, ev.ContextNotice):
        emit(ae.Notice(event.text, level="warning"))


def _touches_disk(message: Message, tools: Mapping[str, Tool]) -> bool:
    for call in message.tool_uses():
        tool = tools.get(call.name)
        if tool is None or not tool.read_only():
            return True
    return False
