"""Token counts estimated from text, for when a server reports none and before a request is
sent (compaction must not send a request known not to fit the model's window).

The estimate leans high on purpose: three characters a token (English prose runs near four,
code and JSON nearer three). An image costs what Anthropic's vision page says ("tokens =
(width px * height px)/750", at most about 1,600 for an image it has to scale down,
https://docs.anthropic.com/en/docs/build-with-claude/vision): a PNG's size is read from its
header; any other image counts a token per 100 characters of its base64 data, within those
bounds.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from larik_jupyter.image_size import image_size
from larik_jupyter.llm.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from larik_jupyter.llm.provider import ToolSchema

CHARS_PER_TOKEN = 3
IMAGE_TOKENS = 1600
# What each message and block adds besides its text (role, type, ids, framing).
_OVERHEAD = 8


def image_tokens(block: ImageBlock) -> int:
    """About how many tokens an image costs (see the module's docstring)."""
    data = str(block.source.get("data") or "")
    if not data:
        return IMAGE_TOKENS
    try:
        head = base64.b64decode(data[:32])
    except ValueError:
        head = b""
    if (size := image_size(head)) is not None:
        return max(1, min(IMAGE_TOKENS, size.width * size.height // 750))
    return max(1, min(IMAGE_TOKENS, len(data) // 100))


def _block_chars(block: Any) -> tuple[int, int]:
    """The characters and image tokens of one block."""
    if isinstance(block, TextBlock):
        return len(block.text), 0
    if isinstance(block, ThinkingBlock):
        return len(block.thinking) + len(block.signature or ""), 0
    if isinstance(block, RedactedThinkingBlock):
        return len(block.data), 0
    if isinstance(block, ToolUseBlock):
        return len(block.id) + len(block.name) + len(json.dumps(block.input)), 0
    if isinstance(block, ImageBlock):
        return 0, image_tokens(block)
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return len(block.tool_use_id) + len(block.content), 0
        chars, images = len(block.tool_use_id), 0
        for inner in block.content:
            c, i = _block_chars(inner)
            chars, images = chars + c, images + i
        return chars, images
    return 0, 0


def estimate_tokens(
    messages: Sequence[Message], system: str = "", tools: Sequence[ToolSchema] = ()
) -> int:
    """About how many input tokens a request of `messages`, `system` and `tools` takes."""
    chars = len(system) + sum(
        len(t.name) + len(t.description) + len(json.dumps(t.input_schema)) for t in tools
    )
    images = blocks = 0
    for message in messages:
        blocks += 1 + len(message.content)
        for block in message.content:
            c, i = _block_chars(block)
            chars, images = chars + c, images + i
    return chars // CHARS_PER_TOKEN + images + blocks * _OVERHEAD


def has_tokens(usage: Usage | None) -> bool:
    """Whether `usage` counts any tokens (a server that sends no usage leaves all at 0)."""
    return usage is not None and bool(
        usage.input_tokens or usage.output_tokens or usage.cache_read_tokens or usage.cache_write_tokens
    )


def context_tokens(usage: Usage) -> int:
    """The tokens a call's usage says its context took, its reply included."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens + usage.output_tokens
