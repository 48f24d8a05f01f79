"""The model context a provider is sent, made from the transcript as stored.

The transcript keeps every block as streamed; what a request carries is shaped here so the
APIs accept it: text blocks that are only whitespace are left out (Anthropic refuses them:
"text content blocks must contain non-whitespace text"), images go as text notes to a model
without vision, and the images of one request stay within the model's count and byte limits
(`ModelInfo.max_images`, `max_image_bytes`): the oldest are replaced by a note saying where
they came from. The cut moves in steps of a quarter of the limit, so the requests between
two steps keep a byte-identical prefix for the prompt cache.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator
from typing import Any

from larik_jupyter.llm.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    without_images,
)
from larik_jupyter.llm.models import ModelInfo


def is_blank(block: Any) -> bool:
    """A text block with nothing but whitespace in it."""
    return isinstance(block, TextBlock) and not block.text.strip()


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


def images_to_omit(messages: list[Message], info: ModelInfo, refused: Collection[str] = ()) -> int:
    """How many of the oldest images (besides those `refused`: a request carrying them was
    refused) to leave out so the rest fit the model's count and byte limits, rounded up to a
    step of a quarter of `max_images`."""
    found = [(i, b) for i, b in iter_images(messages) if image_key(b) not in refused]
    total = sum(image_size(block) for _, block in found)
    too_big = 0
    for _, block in found:
        if total <= info.max_image_bytes:
            break
        total -= image_size(block)
        too_big += 1
    over = max(0, len(found) - info.max_images, too_big)
    if over:
        step = max(1, info.max_images // 4)
        over = min(len(found), math.ceil(over / step) * step)
    return over


def _origins(messages: list[Message]) -> dict[str, str]:
    return {
        call.id: f"the {call.name} call {call.id}" for m in messages for call in m.tool_uses()
    }


def _note(origin: str) -> TextBlock:
    return TextBlock(
        text=f"[image omitted from this request to stay within the model's image limits; "
        f"it came from {origin}]"
    )


def model_context(
    messages: list[Message], info: ModelInfo, refused: Collection[str] = ()
) -> list[Message]:
    """`messages` as a request may carry them (see the module's docstring); images whose
    `image_key` is in `refused` (a request carrying them was refused) are left out too."""
    if not info.vision:
        messages = without_images(messages)
    omit = images_to_omit(messages, info, refused)
    origins = _origins(messages) if omit or refused else {}
    seen = 0

    def keep(block: Any, origin: str) -> Any:
        nonlocal seen
        if not isinstance(block, ImageBlock):
            return block
        if image_key(block) in refused:
            return _note(origin)
        seen += 1
        return _note(origin) if seen <= omit else block

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
            content.append(block)
        same = len(content) == len(message.content) and all(
            a is b for a, b in zip(content, message.content, strict=True)
        )
        out.append(message if same else message.model_copy(update={"content": content}))
    return out
