"""Provider-neutral messages. Block and field names follow the Anthropic Messages API.

Unknown keys are kept (``extra="allow"``) so a reader of a newer file writes them back
unchanged when entries are copied.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        """The JSON form with empty (None) fields omitted."""
        return self.model_dump(mode="json", exclude_none=True)


class TextBlock(_Model):
    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(_Model):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Model):
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolUseBlock(_Model):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ImageBlock(_Model):
    type: Literal["image"] = "image"
    source: dict[str, Any]


class ToolResultBlock(_Model):
    """A tool's answer. `diff`, `duration`, `subagent` and `hooks` (the notices of the call's
    PreToolUse/PostToolUse hooks) are ours: stored for the transcript views (undo panel,
    history, export) and never sent to a provider."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ContentBlock] = ""
    is_error: bool | None = None
    diff: str | None = None
    duration: float | None = None
    subagent: dict[str, Any] | None = None
    hooks: list[str] | None = None

    def text(self) -> str:
        """The result's text (the text blocks of a list content, joined)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


ContentBlock = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock,
    Field(discriminator="type"),
]
ToolResultBlock.model_rebuild()


class Message(_Model):
    """One message of the conversation. `interrupted` marks a reply cut short; `hooks` (ours,
    never sent) holds the notices of the UserPromptSubmit hooks that ran before a prompt."""

    role: Literal["user", "assistant"]
    content: list[ContentBlock] = Field(default_factory=list)
    interrupted: bool | None = None
    hooks: list[str] | None = None

    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]

    def is_prompt(self) -> bool:
        """A user message with text and no tool results: the start of a turn."""
        return (
            self.role == "user"
            and any(isinstance(b, TextBlock) for b in self.content)
            and not any(isinstance(b, ToolResultBlock) for b in self.content)
        )


class Usage(_Model):
    """Token counts of one or more model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(mode="json").items() if v}


def user_text(text: str) -> Message:
    """A user prompt message."""
    return Message(role="user", content=[TextBlock(text=text)])
