"""Compaction: summarise the conversation so the model context shrinks; the transcript does not.

It never sends a request known not to fit the model's window (`room`, estimated with
`llm/tokens.py`). When the request the next step would send fits, the summary is asked for
with it (same tools, system prompt and messages) plus the instruction, so the call reads the
whole conversation from the prompt cache. Otherwise, or when that brings no summary (the model
called a tool instead), the conversation is sent flattened to text, without tools and without
a cache write (no later call repeats that request): whole if it fits; else with each long tool
result cut to its first `SHORT_RESULT` characters; else in parts that fit, oldest first, each
summarised together with the summary so far. The summary then says what was shortened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from larik_jupyter.agent import events as ae
from larik_jupyter.config.model import Config
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.context import without_refused_turns
from larik_jupyter.llm.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from larik_jupyter.llm.models import ModelInfo
from larik_jupyter.llm.provider import Provider, ProviderError, ToolSchema
from larik_jupyter.llm.tokens import CHARS_PER_TOKEN, context_tokens, estimate_tokens, has_tokens
from larik_jupyter.plural import counted
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session

_INSTRUCTION = (
    "Summarise the conversation so far for your own later use: the user's goals, decisions "
    "made, files created or changed and why, commands run and their outcome, and what remains "
    "to do. Be specific (paths, names, numbers). Reply with the summary only."
)
# What a long tool result keeps when the conversation is too long to summarise whole.
SHORT_RESULT = 2000
# Room kept for the reply in a window (at most the model's output limit).
OUTPUT_ROOM = 16_000


def room(info: ModelInfo) -> int:
    """The input tokens a request to the model may take, leaving room for its reply (at most
    a quarter of the window)."""
    window = info.context_window
    return window - min(info.max_output_tokens, OUTPUT_ROOM, window // 4)


def needs_compaction(tokens: int, config: Config, info: ModelInfo) -> bool:
    """True when a context of `tokens` (reported or estimated) reaches the configured share of
    the model's context window (from the model table), or does not leave room for a reply."""
    settings = config.compaction
    if not tokens or not settings.enabled:
        return False
    if settings.max_tokens:
        return tokens >= settings.max_tokens
    return tokens >= min(settings.threshold * info.context_window, room(info))


def request_tokens(
    context: list[Message], last: Usage | None, last_at: int, request: Callable[[], tuple[str, list[ToolSchema]]]
) -> int:
    """About how many tokens the next request takes: the `last` call's reported usage plus an
    estimate of the messages after `last_at`, or (no usage known: after a resume, a
    compaction, or from a server that reports none) an estimate of the whole `request`
    (system prompt and tools)."""
    if has_tokens(last) and last is not None and not last.estimated:
        return context_tokens(last) + estimate_tokens(context[last_at:])
    system, schemas = request()
    return estimate_tokens(context, system, schemas)


def compaction_due(context: list[Message], tokens: int, config: Config, info: ModelInfo, *, only_if_over: bool) -> bool:
    """Whether to compact a context whose next request takes `tokens`: when it comes near the
    window, or (`only_if_over`: right after the prompt) only when it would not fit at all and
    the messages are most of it (a summary cannot shrink the tools or the system prompt).
    Near the window, a context of one message (none, or a summary) is left alone: there is
    nothing to shorten."""
    fits = room(info)
    over = tokens > fits and estimate_tokens(context) > fits // 2
    near = len(context) > 1 and needs_compaction(tokens, config, info)
    return over or (near and not only_if_over)


def _line(role: str, block: object, short: bool) -> tuple[str, bool]:
    """One block of the conversation as a line of text, and whether it was shortened."""
    if isinstance(block, TextBlock):
        return f"{role}: {block.text}", False
    if isinstance(block, ToolUseBlock):
        return f"{role} called {block.name}({block.input})", False
    if isinstance(block, ToolResultBlock):
        text = block.text(image="[image]")
        if short and len(text) > SHORT_RESULT:
            left = len(text) - SHORT_RESULT
            return f"tool result: {text[:SHORT_RESULT]}\n[… {left:,} more characters left out]", True
        return f"tool result: {text}", False
    return "", False


def _lines(messages: list[Message], short: bool) -> tuple[list[str], int]:
    """The conversation as lines of text, and how many tool results were shortened."""
    lines: list[str] = []
    shortened = 0
    for message in messages:
        for block in message.content:
            line, cut = _line(message.role, block, short)
            if line:
                lines.append(line)
                shortened += cut
    return lines, shortened


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


def _text_request(text: str) -> list[Message]:
    return [Message(role="user", content=[TextBlock(text=text)])]


def _parts(lines: list[str], budget: int) -> list[str]:
    """`lines` joined into parts of at most `budget` characters, oldest first; a line longer
    than a part (a long paste) is split across parts."""
    pieces = [line[i : i + budget] for line in lines for i in range(0, max(len(line), 1), budget)]
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if current and size + len(piece) + 1 > budget:
            parts.append("\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece) + 1
    if current:
        parts.append("\n".join(current))
    return parts


@dataclass(frozen=True)
class Compacted:
    """A summary, and what was shortened to make it (empty when nothing was)."""

    summary: str
    shortened: str = ""


async def _flat(
    provider: Provider, system: str, context: list[Message], ask: str, fits: int
) -> Compacted:
    """The summary of `context` sent as text: whole, with long results cut, or in parts
    (never with a refused turn, which the model would refuse again)."""
    context = without_refused_turns(context)
    for short in (False, True):
        lines, shortened = _lines(context, short)
        request = _text_request("\n".join(lines) + f"\n\n{ask}")
        if estimate_tokens(request, system) <= fits:
            note = (
                f"{counted(shortened, 'long tool result')} {'was' if shortened == 1 else 'were'} cut to their first {SHORT_RESULT:,} "
                "characters to fit the model's window"
                if shortened
                else ""
            )
            return Compacted(await _summary(provider, system, request, [], False), note)
    overhead = estimate_tokens(_text_request(ask), system)
    # Each part leaves a third of its room to the summary so far.
    budget = max(1000, (fits - overhead) * 2 // 3 * CHARS_PER_TOKEN)
    parts = _parts(lines, budget)
    summary = ""
    for n, part in enumerate(parts, 1):
        earlier = f"Summary of the conversation before this part:\n{summary}\n\n" if summary else ""
        text = f"{earlier}The conversation (part {n} of {len(parts)}):\n{part}\n\n{ask}"
        request = _text_request(text[-(fits - overhead) * CHARS_PER_TOKEN :])
        summary = await _summary(provider, system, request, [], False) or summary
    cut = (
        f", after {counted(shortened, 'long tool result')} {'was' if shortened == 1 else 'were'} cut to their first {SHORT_RESULT:,} characters"
        if shortened
        else ""
    )
    note = (
        f"the conversation was over the model's window, so it was summarised in {len(parts)} "
        f"parts, oldest first{cut}"
    )
    return Compacted(summary, note)


async def compact_context(
    provider: Provider,
    system: str,
    context: list[Message],
    tools: list[ToolSchema],
    instructions: str = "",
) -> Compacted:
    """Ask the model for a summary of `context` with requests that fit its window; raises
    ProviderError when it gives none."""
    ask = _INSTRUCTION + (f"\nAlso: {instructions}" if instructions else "")
    fits = room(provider.info)
    result = Compacted("")
    asked = _asking(context, ask)
    if estimate_tokens(asked, system, tools) <= fits:
        result = Compacted(await _summary(provider, system, asked, tools, True))
    if not result.summary:
        result = await _flat(provider, system, context, ask, fits)
    if not result.summary:
        raise ProviderError("Compaction failed: the model returned no summary; try `/compact` again.")
    return result


async def compact_session(
    session: Session, provider: Provider, system: str, context: list[Message], tools: list[ToolSchema],
    instructions: str, emit: Callable[[ae.AgentEvent], None],
) -> str:
    """Summarise `context` into a compaction entry of `session` and return the summary, which
    says (as a warning does) what was shortened for it."""
    done = await compact_context(provider, system, context, tools, instructions)
    summary = done.summary
    if done.shortened:
        emit(ae.Notice(f"Compaction: {done.shortened}.", level="warning"))
        summary += f"\n\n(For this summary {done.shortened}.)"
    session.append(Entry(type="compaction", summary=summary, model=provider.name), sync=True)
    return summary
