"""Compaction: summarise the conversation so the model context shrinks; the transcript does not."""

from __future__ import annotations

from larik_jupyter.config.model import Config
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from larik_jupyter.llm.provider import Provider, ProviderError

# Context windows by model-name prefix; unknown models use the default.
_WINDOWS = {"claude": 200_000, "gpt-5": 400_000, "gpt-4.1": 1_000_000, "gpt-4o": 128_000}
_DEFAULT_WINDOW = 128_000

_INSTRUCTION = (
    "Summarise the conversation so far for your own later use: the user's goals, decisions "
    "made, files created or changed and why, commands run and their outcome, and what remains "
    "to do. Be specific (paths, names, numbers). Reply with the summary only."
)


def context_window(model: str) -> int:
    name = model.rpartition(":")[2]
    matches = [p for p in _WINDOWS if name.startswith(p)]
    return _WINDOWS[max(matches, key=len)] if matches else _DEFAULT_WINDOW


def needs_compaction(last: Usage | None, config: Config, model: str) -> bool:
    """True when the last model call used more than the configured share of the window."""
    settings = config.compaction
    if last is None or not settings.enabled:
        return False
    used = last.input_tokens + last.cache_read_tokens + last.cache_write_tokens + last.output_tokens
    if settings.max_tokens:
        return used >= settings.max_tokens
    return used >= settings.threshold * context_window(model)


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


async def compact_context(
    provider: Provider, system: str, context: list[Message], instructions: str = ""
) -> str:
    """Ask the model for a summary of `context`; raises ProviderError when it gives none."""
    ask = _INSTRUCTION + (f"\nAlso: {instructions}" if instructions else "")
    request = [
        Message(role="user", content=[TextBlock(text=f"{_as_text(context)}\n\n{ask}")])
    ]
    summary = ""
    async for event in provider.stream(system, request, []):
        if isinstance(event, ev.MessageEnd):
            summary = event.message.text().strip()
    if not summary:
        raise ProviderError("Compaction failed: the model returned no summary; try `/compact` again.")
    return summary
