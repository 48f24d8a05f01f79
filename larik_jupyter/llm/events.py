"""The stream of events a provider yields for one model call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.llm.messages import Message, Usage


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    thinking: str = ""
    signature: str = ""


@dataclass(frozen=True)
class ToolCallStart:
    id: str
    name: str


@dataclass(frozen=True)
class ToolCallDelta:
    id: str
    partial_json: str


@dataclass(frozen=True)
class ToolCallEnd:
    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Retrying:
    """The provider is about to retry after a transient failure; shown to the user."""

    attempt: int
    max_attempts: int
    wait_seconds: float
    reason: str


@dataclass(frozen=True)
class ContextNotice:
    """Something the provider left out of the request that the user should know about."""

    text: str


@dataclass(frozen=True)
class MessageEnd:
    """The final assistant message, exactly what the session stores.

    `stop_reason` is the provider's (`end_turn`, `tool_use`, `max_tokens`, ...) or
    `interrupted` when the stream was cut; then `error` says why and
    `message.interrupted` is true.
    """

    message: Message
    stop_reason: str
    usage: Usage
    error: str | None = None


StreamEvent = (
    TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | ToolCallEnd | Retrying | ContextNotice | MessageEnd
)
