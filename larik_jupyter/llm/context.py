"""The model context a provider is sent, made from the transcript as stored.

The transcript keeps every block as streamed; what a request carries is shaped here, by rules
that hold for every provider, so that any state a session can reach makes a request the APIs
accept:

- A turn the model refused (`Message.refused`, stop reason `refusal`) is left out, from its
  prompt on: Anthropic's streaming-refusals page says "you must reset the conversation
  context by removing or updating the turn that was refused before continuing. Attempting to
  continue without resetting will result in continued refusals."
- Every tool call is answered in the next message (an interrupted one by an error result),
  results come first in their message, a result whose call is not in the context becomes
  text, and a prompt that follows tool results directly (the turn was cut during its tools)
  comes after a placeholder reply: with thinking on, Anthropic refuses a request whose last
  tool results follow an assistant message without thinking.
- An assistant message never ends with a thinking block (a reply stopped after its thinking):
  Anthropic answers "The final block in an assistant message cannot be `thinking`."
- Tool-call ids are what the target API takes (`tool_ids`): Anthropic's pattern
  `^[a-zA-Z0-9_-]+$`, OpenAI's 40 characters; a compatible server gets its own ids back. An id
  from elsewhere (a Kimi-style `functions.read:0`, vLLM's 46-character `chatcmpl-tool-…`) is
  mapped to one that is, the same way every time, so the cached prefix stays byte-identical.
- Text blocks that are only whitespace are left out (Anthropic refuses them: "text content
  blocks must contain non-whitespace text"); images go as text notes to a model without
  vision.
- The images of one request stay within the model's count and byte limits
  (`ModelInfo.max_images`, `max_image_bytes`): the oldest are replaced by a note saying where
  they came from, those of the newest tool result or of the newest prompt (its attachments)
  only when they alone are over the limits, and then the user is told
  (`newest_images_omitted`). The cut moves in steps (a quarter of the count limit, an eighth
  of the byte limit), so the requests between two steps keep a byte-identical prefix for the
  prompt cache.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Collection, Iterator
from typing import Any

from larik_jupyter.llm.messages import (
    INTERRUPTED_TOOL_RESULT,
    ContentBlock,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    without_images,
)
from larik_jupyter.llm.models import ModelInfo

# What an assistant message with nothing to send says instead, so the roles keep alternating.
NO_REPLY = "(no reply)"
# The tool-call ids each API takes, as their 400s say: Anthropic "tool_use.id: String should
# match pattern '^[a-zA-Z0-9_-]+$'"; OpenAI "Invalid 'messages[2].tool_calls[0].id': string
# too long. Expected a string with maximum length 40".
ANTHROPIC_TOOL_IDS = re.compile(r"^[a-zA-Z0-9_-]+$")
OPENAI_TOOL_IDS = re.compile(r"^.{1,40}$", re.DOTALL)
_TOOL_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def is_blank(block: Any) -> bool:
    """A text block with nothing but whitespace in it."""
    return isinstance(block, TextBlock) and not block.text.strip()


def wire_tool_id(tool_id: str, accepted: re.Pattern[str]) -> str:
    """`tool_id` unchanged when `accepted` matches it, else its safe characters (at most 31),
    `_` and 8 hex digits of its SHA-256: an id both APIs take, and two ids never meet."""
    if accepted.match(tool_id):
        return tool_id
    digest = hashlib.sha256(tool_id.encode()).hexdigest()[:8]
    return f"{_TOOL_ID_UNSAFE.sub('_', tool_id)[:31]}_{digest}"


def iter_images(messages: list[Message]) -> Iterator[tuple[int, ImageBlock]]:
    """Every image of `messages` (also inside tool results), oldest first, with its
    message's index."""
    for index, message in enumerate(messages):
        for block in message.content:
            if isinstance(block, ImageBlock):
                yield index, block
            elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
                for inner in block.content:
                    if isinstance(inner, ImageBlock):
                        yield index, inner


def image_key(block: ImageBlock) -> str:
    """What identifies an image's content: its base64 data, or its URL."""
    return str(block.source.get("data") or block.source.get("url") or "")


def image_size(block: ImageBlock) -> int:
    """The characters an image adds to a request (its base64 data; a URL costs its length)."""
    return len(image_key(block))


def _kept_messages(messages: list[Message]) -> set[int]:
    """The indexes of the messages whose images the budget never drops: the newest prompt
    (its attachments) and the newest message of tool results."""
    kept: set[int] = set()
    for wanted in (Message.is_prompt, lambda m: bool(m.tool_results())):
        found = next((i for i in range(len(messages) - 1, -1, -1) if wanted(messages[i])), None)
        if found is not None:
            kept.add(found)
    return kept


def _oldest(blocks: list[ImageBlock], count: int, excess: int) -> int:
    """How many of `blocks`, oldest first, to leave out: at least `count`, and enough to
    shed `excess` characters (all of them if they cannot)."""
    n = shed = 0
    while n < len(blocks) and (n < count or shed < excess):
        shed += image_size(blocks[n])
        n += 1
    return n


def images_to_omit(
    messages: list[Message], info: ModelInfo, refused: Collection[str] = ()
) -> tuple[list[ImageBlock], int]:
    """The oldest images (besides those `refused`: a request carrying them was refused) to
    leave out so the rest fit the model's count and byte limits, and how many of them are of
    the newest prompt or tool results: those go only when the others are not enough. The
    others' cut moves in steps of a quarter of `max_images` and an eighth of
    `max_image_bytes`."""
    found = [(i, b) for i, b in iter_images(messages) if image_key(b) not in refused]
    kept = _kept_messages(messages)
    droppable = [b for i, b in found if i not in kept]
    newest = [b for i, b in found if i in kept]
    over = len(found) - info.max_images
    excess = sum(image_size(b) for _, b in found) - info.max_image_bytes
    if over <= 0 and excess <= 0:
        return [], 0
    count_step, byte_step = max(1, info.max_images // 4), max(1, info.max_image_bytes // 8)
    stepped = _oldest(
        droppable,
        math.ceil(over / count_step) * count_step if over > 0 else 0,
        math.ceil(excess / byte_step) * byte_step if excess > 0 else 0,
    )
    omit = droppable[:stepped]
    over -= len(omit)
    excess -= sum(image_size(b) for b in omit)
    if over <= 0 and excess <= 0:
        return omit, 0
    lost = _oldest(newest, over, excess)
    return omit + newest[:lost], lost


def newest_images_omitted(messages: list[Message], info: ModelInfo, refused: Collection[str] = ()) -> int:
    """How many images of the newest prompt or tool results `model_context` leaves out: only
    when they alone are over the model's limits (the caller tells the user)."""
    if not info.vision:
        return 0
    return images_to_omit(_paired(without_refused_turns(messages)), info, refused)[1]


def _origins(messages: list[Message]) -> dict[str, str]:
    return {
        call.id: f"the {call.name} call {call.id}" for m in messages for call in m.tool_uses()
    }


def _note(origin: str) -> TextBlock:
    return TextBlock(
        text=f"[image omitted from this request to stay within the model's image limits; "
        f"it came from {origin}]"
    )


def without_refused_turns(messages: list[Message]) -> list[Message]:
    """`messages` without each refused turn: the refused reply and everything back to the
    prompt that started its turn."""
    if not any(m.refused for m in messages):
        return messages
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.refused:
            start = next((i for i in range(len(out) - 1, -1, -1) if out[i].is_prompt()), len(out))
            del out[start:]
            continue
        out.append(message)
    return out


def _unanswered(calls: list[str]) -> list[ContentBlock]:
    return [
        ToolResultBlock(tool_use_id=c, content=INTERRUPTED_TOOL_RESULT, is_error=True) for c in calls
    ]


def _stray(result: ToolResultBlock) -> TextBlock:
    return TextBlock(
        text=f"[the result of tool call {result.tool_use_id}, whose call is not in this "
        f"conversation any more]\n{result.text(image='[image]')}"
    )


def _paired(messages: list[Message]) -> list[Message]:
    """`messages` with every tool call answered first thing in the next message, stray
    results as text, a placeholder reply between tool results and a following user message,
    and no assistant message ending in thinking."""
    out: list[Message] = []
    calls: list[str] = []  # the ids the previous assistant message called, still unanswered
    for message in messages:
        if message.role == "assistant":
            if calls:
                out.append(Message(role="user", content=_unanswered(calls)))
            content = list(message.content)
            # Blank text goes anyway, so thinking before it would end the message.
            while content and (
                isinstance(content[-1], ThinkingBlock | RedactedThinkingBlock) or is_blank(content[-1])
            ):
                content.pop()
            if len(content) != len(message.content):
                message = message.model_copy(update={"content": content})
            calls = [c.id for c in message.tool_uses()]
            out.append(message)
            continue
        if out and out[-1].role == "user" and out[-1].tool_results():
            out.append(Message(role="assistant", content=[TextBlock(text=NO_REPLY)]))
        results = {r.tool_use_id: r for r in message.tool_results()}
        if calls or results:
            answers = [results.get(c) or _unanswered([c])[0] for c in calls]
            rest = [
                _stray(b) if isinstance(b, ToolResultBlock) else b
                for b in message.content
                if not (isinstance(b, ToolResultBlock) and b.tool_use_id in calls)
            ]
            content = [*answers, *rest]
            if content != message.content:
                message = message.model_copy(update={"content": content})
        calls = []
        out.append(message)
    if calls:
        out.append(Message(role="user", content=_unanswered(calls)))
    return out


def _wire_ids(block: Any, accepted: re.Pattern[str] | None) -> Any:
    if accepted is None:
        return block
    if isinstance(block, ToolUseBlock) and (safe := wire_tool_id(block.id, accepted)) != block.id:
        return block.model_copy(update={"id": safe})
    if isinstance(block, ToolResultBlock) and (safe := wire_tool_id(block.tool_use_id, accepted)) != block.tool_use_id:
        return block.model_copy(update={"tool_use_id": safe})
    return block


def model_context(
    messages: list[Message],
    info: ModelInfo,
    refused: Collection[str] = (),
    tool_ids: re.Pattern[str] | None = None,
) -> list[Message]:
    """`messages` as a request may carry them (see the module's docstring); images whose
    `image_key` is in `refused` (a request carrying them was refused) are left out too, and
    tool-call ids `tool_ids` does not match are mapped (None: sent as they are)."""
    messages = _paired(without_refused_turns(messages))
    if not info.vision:
        messages = without_images(messages)
    omit = {id(b) for b in images_to_omit(messages, info, refused)[0]}
    origins = _origins(messages) if omit or refused else {}

    def keep(block: Any, origin: str) -> Any:
        if not isinstance(block, ImageBlock):
            return block
        if image_key(block) in refused or id(block) in omit:
            return _note(origin)
        return block

    out: list[Message] = []
    for message in messages:
        content: list[ContentBlock] = []
        for block in message.content:
            if is_blank(block):
                continue
            if isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
                origin = origins.get(block.tool_use_id, f"tool call {block.tool_use_id}")
                inner = [keep(b, origin) for b in block.content if not is_blank(b)]
                block = block.model_copy(update={"content": inner})
            else:
                block = keep(block, "a prompt's attachments")
            content.append(_wire_ids(block, tool_ids))
        same = len(content) == len(message.content) and all(
            a is b for a, b in zip(content, message.content, strict=True)
        )
        out.append(message if same else message.model_copy(update={"content": content}))
    return out
