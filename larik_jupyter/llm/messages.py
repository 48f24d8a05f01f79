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
    """A tool's answer. `diff`, `duration`, `subagent`, `hooks` (the notices of the call's
    PreToolUse/PostToolUse hooks), `source` (the cell source a `notebook_run` call ran),
    `answer` (the kernel variable the `answer` tool handed back), `variables` (what a kernel
    call did to the user's variables, see `session/variable_changes.py`) and `receipts` (what
    each join, filter, group or concat of its code did to the rows, `frames/receipt.py`) are ours: stored for
    the transcript views (undo panel, history, export, a branch as a notebook) and never sent
    to a provider."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ContentBlock] = ""
    is_error: bool | None = None
    diff: str | None = None
    duration: float | None = None
    subagent: dict[str, Any] | None = None
    hooks: list[str] | None = None
    source: str | None = None
    answer: str | None = None
    variables: list[dict[str, Any]] | None = None
    receipts: list[dict[str, Any]] | None = None

    def text(self, image: str | None = None) -> str:
        """The result's text: the blocks of a list content joined by lines, an image as the
        `image` placeholder (left out when None), any other block as `[type omitted]`."""
        if isinstance(self.content, str):
            return self.content
        parts = []
        for b in self.content:
            if isinstance(b, TextBlock):
                parts.append(b.text)
            elif isinstance(b, ImageBlock):
                if image is not None:
                    parts.append(image)
            else:
                parts.append(f"[{b.type} omitted]")
        return "\n".join(parts)


ContentBlock = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock | ImageBlock,
    Field(discriminator="type"),
]
ToolResultBlock.model_rebuild()


# Text blocks of a prompt that the front end or the loop added around what the user typed:
# an undo's note, the notebook context, notebook data (attachments). Views fold them.
CONTEXT_PREFIXES = ("<system-note>", "<notebook-context", "<notebook-data")


def is_context_text(text: str) -> bool:
    """Whether a prompt's text block was added for the model, not typed by the user."""
    return text.startswith(CONTEXT_PREFIXES)


class Message(_Model):
    """One message of the conversation. `interrupted` marks a reply cut short; `refused` (ours,
    never sent) a reply the model ended with stop reason `refusal`, whose turn later requests
    leave out (`llm/context.py`); `hooks` (ours,
    never sent) holds the notices of the UserPromptSubmit hooks that ran before a prompt;
    `attachments` (ours, never sent) describes what `--with` attached to a prompt: one
    `{name, kind, size, sha256}` object each (the blocks sent are in `content`); `cells` (ours,
    never sent) holds the cells the user ran in the kernel since the previous prompt, what the
    branch stood on (`{count, source, error?}` each, oldest first)."""

    role: Literal["user", "assistant"]
    content: list[ContentBlock] = Field(default_factory=list)
    interrupted: bool | None = None
    refused: bool | None = None
    hooks: list[str] | None = None
    attachments: list[dict[str, Any]] | None = None
    cells: list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The concatenated text blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def prompt_text(self) -> str:
        """What the user typed: the text blocks that are not added context."""
        return "".join(
            b.text for b in self.content if isinstance(b, TextBlock) and not is_context_text(b.text)
        )

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
    """Token counts of one or more model calls. `estimated`: some counts are our estimate
    (`llm/tokens.py`), because the server reported none; its price is then unknown."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            estimated=self.estimated or other.estimated or None,
        )

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump(mode="json").items() if v}


def user_text(text: str) -> Message:
    """A user prompt message."""
    return Message(role="user", content=[TextBlock(text=text)])


# The result an unanswered tool call gets in what is sent (never in the file).
INTERRUPTED_TOOL_RESULT = "The tool call was interrupted before it returned a result."
NO_VISION_NOTE = "[image omitted: the model in use does not take images]"


def without_images(messages: list[Message]) -> list[Message]:
    """`messages` with every image (also inside tool results) replaced by a text note, for a
    provider or model without vision; messages without images are returned as they are."""

    def blocks(content: list[Any]) -> list[Any]:
        return [TextBlock(text=NO_VISION_NOTE) if isinstance(b, ImageBlock) else b for b in content]

    out: list[Message] = []
    for message in messages:
        content: list[ContentBlock] = []
        changed = False
        for block in message.content:
            if isinstance(block, ImageBlock):
                content.append(TextBlock(text=NO_VISION_NOTE))
                changed = True
            elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str) and any(
                isinstance(b, ImageBlock) for b in block.content
            ):
                content.append(block.model_copy(update={"content": blocks(block.content)}))
                changed = True
            else:
                content.append(block)
        out.append(message.model_copy(update={"content": content}) if changed else message)
    return out
