"""Assembles the final assistant `Message` from the stream events of one model call.

Every provider feeds its events through a `MessageBuilder`, so a cut stream yields the
same partial message whichever backend produced it; a front end can feed the events it
received into one too, to keep what was shown when the user interrupts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.llm.events import (
    MessageEnd,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from larik_jupyter.llm.messages import (
    ContentBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)


@dataclass
class _PendingTool:
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)


def parse_tool_input(raw: str) -> dict[str, Any]:
    """The tool input decoded from its streamed JSON text.

    Text that is not a JSON object is kept under `_raw_arguments` rather than dropped,
    so the model is shown what it sent when the tool rejects it.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"_raw_arguments": raw}
    return value if isinstance(value, dict) else {"_raw_arguments": raw}


class MessageBuilder:
    """Collects deltas into content blocks, in the order the model produced them."""

    def __init__(self) -> None:
        self._blocks: list[ContentBlock] = []
        self._tools: dict[str, _PendingTool] = {}

    def add(self, event: StreamEvent) -> None:
        """Apply one event; events other than content deltas are ignored."""
        if isinstance(event, TextDelta):
            last = self._blocks[-1] if self._blocks else None
            if isinstance(last, TextBlock):
                last.text += event.text
            elif event.text:
                self._blocks.append(TextBlock(text=event.text))
        elif isinstance(event, ThinkingDelta):
            self._add_thinking(event)
        elif isinstance(event, ToolCallStart):
            self._tools[event.id] = _PendingTool(event.id, event.name)
        elif isinstance(event, ToolCallDelta):
            self._tools[event.id].fragments.append(event.partial_json)
        elif isinstance(event, ToolCallEnd):
            self._tools.pop(event.id, None)
            self._blocks.append(ToolUseBlock(id=event.id, name=event.name, input=event.input))

    def _add_thinking(self, event: ThinkingDelta) -> None:
        last = self._blocks[-1] if self._blocks else None
        # A signature closes a thinking block: thinking text after it starts a new one.
        if not isinstance(last, ThinkingBlock) or (last.signature and event.thinking):
            last = ThinkingBlock(thinking="")
            self._blocks.append(last)
        last.thinking += event.thinking
        if event.signature:
            last.signature = (last.signature or "") + event.signature

    def add_redacted_thinking(self, data: str) -> None:
        """Keep an encrypted thinking block; it is sent back unchanged."""
        self._blocks.append(RedactedThinkingBlock(data=data))

    def end_tool(self, tool_id: str) -> ToolCallEnd:
        """The end event of a streamed tool call, with its input parsed (also recorded)."""
        pending = self._tools[tool_id]
        event = ToolCallEnd(pending.id, pending.name, parse_tool_input("".join(pending.fragments)))
        self.add(event)
        return event

    def open_tools(self) -> list[str]:
        """Ids of tool calls started but not yet ended, in start order."""
        return list(self._tools)

    def message(self, *, interrupted: bool = False) -> Message:
        """The assistant message so far.

        Tool calls whose input never finished streaming are left out: their input is
        unknown, so they could not be run or answered.
        """
        return Message(
            role="assistant",
            content=[block.model_copy() for block in self._blocks],
            interrupted=True if interrupted else None,
        )


def cut_short(label: str, builder: MessageBuilder, usage: Usage, reason: str) -> MessageEnd:
    """The end of a stream cut midway: the partial message, marked interrupted."""
    return MessageEnd(
        builder.message(interrupted=True),
        "interrupted",
        usage,
        error=f"The reply from {label} was cut off midway ({reason}); the partial message is kept.",
    )
