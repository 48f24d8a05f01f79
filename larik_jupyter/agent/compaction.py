"""Compaction: summarise the conversation so the model context shrinks; the transcript does not.

The summary is asked for with the request the next step would send (same tools, system
prompt and messages) plus the instruction, so the call reads the whole conversation from
the prompt cache. Only when that brings no summary (the model called a tool instead) is the
conversation sent again flattened to text, without tools and without a cache write (no
later call repeats that request).
"""

from __future__ import annotations

from larik_jupyter.config.model import Config
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from larik_jupyter.llm.models import ModelInfo
from larik_jupyter.llm.provider import Provider, ProviderError, ToolSchema

_INSTRUCTION = (
    "Summarise the conversation so far for your own later use: the user's goals, decisions "
    "made, files created or changed and why, commands run and their outcome, and what remains "
    "to do. Be specific (paths, names, numbers). Reply with the summary only."
)


def needs_compaction(last: Usage | None, config: Config, info: ModelInfo) -> bool:
    """True when the last model call used more than the configured share of the model's
    context window (from the model table)."""
    settings = config.compaction
    if last is None or not settings.enabled:
        return False
    used = last.input_tokens + last.cache_read_tokens + last.cache_write_tokens + last.output_tokens
    if settings.max_tokens:
        return used >= settings.max_tokens
    return used >= settings.threshold * info.context_window


def _as_text(messages: list[Message]) -> str:
    """Flatten the context into a transcript the model can summarise without tool schemas."""
    lines: list[str] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                lines.append(f"{message.role}: {block.text}")
            elif isinstance(block, ToolUseBlock):
                lines.append(f"{message.role} called {block.name}({block.input})")
            elif isinstance(block, ToolResultBlock):
                content = block.content if isinstance(block.content, str) else "[blocks]"
                lines.append(f"tool result: {content[:2000]}")
    return "\n".join(lines)


def _asking(context: list[Message], ask: str) -> list[Message]:
    """`context` with `ask` as the next user message (added to the last one if that is a
    user message, so the roles keep alternating)."""
    if context and context[-1].role == "user":
        last = context[-1]
        return [*context[:-1], last.model_copy(update={"content": [*last.content, TextBlock(text=ask)]})]
    return [*context, Message(role="user", content=[TextBlock(text=ask)])]


async def _summary(
    provider: Provider, system: str, request: list[Message], tools: list[ToolSchema], cache: bool
) -> str:
    summary = ""
    async for event in provider.stream(system, request, tools, cache=cache):
        if isinstance(event, ev.MessageEnd):
            summary = event.message.text().strip()
    return summary


async def compact_context(
    provider: Provider,
    system: str,
    context: list[Message],
    tools: list[ToolSchema],
    instructions: str = "",
) -> str:
    """Ask the model for a summary of `context`; raises ProviderError when it gives none."""
    ask = _INSTRUCTION + (f"\nAlso: {instructions}" if instructions else "")
    summary = await _summary(provider, system, _asking(context, ask), tools, True)
    if not summary:
        flat = [Message(role="user", content=[TextBlock(text=f"{_as_text(context)}\n\n{ask}")])]
        summary = await _summary(provider, system, flat, [], False)
    if not summary:
        raise ProviderError("Compaction failed: the model returned no summary; try `/compact` again.")
    return summary
