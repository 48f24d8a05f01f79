"""The narrow provider interface every model backend implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from larik_jupyter.errors import LarikError
from larik_jupyter.llm.events import StreamEvent
from larik_jupyter.llm.messages import Message


class ProviderError(LarikError):
    """A model call failed; the message is one sentence meant for the user."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ToolSchema:
    """A tool offered to the model: name, description and JSON schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


class Provider(Protocol):
    """Streams one model call. `name` is the `provider:model` label shown to the user."""

    name: str
    model: str

    def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema]
    ) -> AsyncIterator[StreamEvent]:
        """Yield events; the last is always a `MessageEnd` unless a `ProviderError` is raised."""
        ...
