"""The narrow provider interface every model backend implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from larik_jupyter.errors import LarikError
from larik_jupyter.llm.events import StreamEvent
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.models import ModelInfo


class ProviderError(LarikError):
    """A model call failed; the message is one sentence meant for the user. `detail` is the
    API's own message, when it gave one."""

    def __init__(self, message: str, *, status: int | None = None, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Destination:
    """Where a request goes: the provider's `provider:model` name and its server's URL
    (None: no server, as for the scripted model, whose requests never leave the process)."""

    name: str
    base_url: str | None


class RequestDoor(Protocol):
    """The last step before a request leaves (the egress door, `egress/door.py`): it takes
    the model context a provider is about to send, lets out what the policy allows, builds
    the body with `build(system, messages)`, records it, and returns the body."""

    def pass_request(
        self,
        destination: Destination,
        system: str,
        messages: list[Message],
        build: Callable[[str, list[Message]], dict[str, Any]],
    ) -> dict[str, Any]: ...


def request_body(
    door: RequestDoor | None,
    destination: Destination,
    system: str,
    messages: list[Message],
    build: Callable[[str, list[Message]], dict[str, Any]],
) -> dict[str, Any]:
    """The body of one request: through `door` when the provider has one (every agent's
    provider does), else built as it is."""
    if door is None:
        return build(system, messages)
    return door.pass_request(destination, system, messages, build)


@dataclass(frozen=True)
class ToolSchema:
    """A tool offered to the model: name, description and JSON schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


class Provider(Protocol):
    """Streams one model call. `name` is the `provider:model` label shown to the user; `info`
    is the model's entry of the model table (`llm/models.py`): its capabilities (vision,
    thinking, caching, limits), read there, never probed. `http_client_factory`, when set (a
    debug trace), makes the HTTP clients its calls use; a provider without HTTP ignores it.
    `door` is the egress door every request it sends passes last (`request_body`)."""

    name: str
    model: str
    info: ModelInfo
    http_client_factory: Callable[[], Any] | None
    door: RequestDoor | None

    def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> AsyncIterator[StreamEvent]:
        """Yield events; the last is always a `MessageEnd` unless a `ProviderError` is raised.
        `cache` False: no later call repeats this request's prefix, so write no cache."""
        ...
