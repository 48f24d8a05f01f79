"""Builds the assistant message from stream events, so an interrupted reply keeps what streamed."""

from __future__ import annotations

import json
from typing import Any

from larik_jupyter.llm import events as ev
from larik_jupyter.llm.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)


class ReplyBuilder:
    """Accumulates deltas in stream order; `partial()` is the message so far, marked interrupted."""

    def __init__(self) -> None:
        self._blocks: list[ContentBlock] = []
        self._tool_json: dict[str, str] = {}

    def feed(self, event: ev.StreamEvent) -> None:
        if isinstance(event, ev.TextDelta):
            last = self._blocks[-1] if self._blocks else None
            if isinstance(last, TextBlock):
                last.text += event.text
            else:
                self._blocks.append(TextBlock(text=event.text))
        elif isinstance(event, ev.ThinkingDelta):
            last = self._blocks[-1] if self._blocks else None
            if not isinstance(last, ThinkingBlock):
                last = ThinkingBlock(thinking="")
                self._blocks.append(last)
            last.thinking += event.thinking
            if event.signature:
                last.signature = (last.signature or "") + event.signature
        elif isinstance(event, ev.ToolCallStart):
            self._blocks.append(ToolUseBlock(id=event.id, name=event.name, input={}))
            self._tool_json[event.id] = ""
        elif isinstance(event, ev.ToolCallDelta):
            self._tool_json[event.id] = self._tool_json.get(event.id, "") + event.partial_json
        elif isinstance(event, ev.ToolCallEnd):
            for block in self._blocks:
                if isinstance(block, ToolUseBlock) and block.id == event.id:
                    block.input = dict(event.input)

    def partial(self) -> Message:
        """What streamed so far; tool calls whose input never completed keep what parsed."""
        blocks: list[ContentBlock] = []
        for block in self._blocks:
            if isinstance(block, ToolUseBlock) and not block.input:
                block.input = _parse_partial(self._tool_json.get(block.id, ""))
            if isinstance(block, TextBlock) and not block.text:
                continue
            blocks.append(block)
        return Message(role="assistant", content=blocks, interrupted=True)


def _parse_partial(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
