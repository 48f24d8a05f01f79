"""The outline of an entry: the few fields resume needs, decoded without building the rest.

msgspec decodes a line into these structs while validating the whole line's JSON syntax
and the outline's types, skipping text bodies without allocating them; that is what keeps
resume within a small multiple of reading the file (bench/bench_session.py). The full
pydantic `Entry` is built from the line only when someone asks for it. Large fields are
`Raw` so their presence is checked here and their type by pydantic on materialization.
Outlines never form reference cycles, so they are not tracked by the cyclic garbage
collector (`gc=False`): a loaded session adds little to every later collection.
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import Raw, Struct


class TextOutline(Struct, tag="text", gc=False):
    text: Raw


class ThinkingOutline(Struct, tag="thinking", gc=False):
    thinking: Raw


class RedactedThinkingOutline(Struct, tag="redacted_thinking", gc=False):
    data: Raw


class ToolUseOutline(Struct, tag="tool_use", gc=False):
    id: str
    name: str


class ToolResultOutline(Struct, tag="tool_result", gc=False):
    tool_use_id: str


class ImageOutline(Struct, tag="image", gc=False):
    source: Raw


BlockOutline = (
    TextOutline | ThinkingOutline | RedactedThinkingOutline | ToolUseOutline | ToolResultOutline | ImageOutline
)


class MessageOutline(Struct, gc=False):
    role: Literal["user", "assistant"]
    content: list[BlockOutline] = []
    interrupted: bool | None = None

    def is_prompt(self) -> bool:
        """A user message with text and no tool results: the start of a turn."""
        if self.role != "user":
            return False
        text = False
        for block in self.content:
            kind = type(block)
            if kind is ToolResultOutline:
                return False
            text = text or kind is TextOutline
        return text


class MetaOutline(Struct, gc=False):
    cwd: str
    provider: str | None = None
    model: str | None = None
    fork_of: str | None = None
    fork_at: int | None = None


class UsageOutline(Struct, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False


class _EntryBase(Struct, tag_field="type", kw_only=True, gc=False):
    id: str
    parent_id: str | None = None
    time: str | None = None
    model: str | None = None


class MetaEntryOutline(_EntryBase, tag="meta"):
    meta: MetaOutline


class MessageEntryOutline(_EntryBase, tag="message"):
    message: MessageOutline


class CompactionEntryOutline(_EntryBase, tag="compaction"):
    summary: str


class UsageEntryOutline(_EntryBase, tag="usage"):
    usage: UsageOutline
    note: str | None = None
    undone: list[int] | None = None


EntryOutline = MetaEntryOutline | MessageEntryOutline | CompactionEntryOutline | UsageEntryOutline

decode_outline = msgspec.json.Decoder(EntryOutline).decode
"""Decode one line into its outline; raises msgspec.DecodeError or msgspec.ValidationError."""
