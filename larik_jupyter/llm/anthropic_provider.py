"""`anthropic:<model>`: the Messages API through the official `anthropic` SDK, streamed.

Thinking blocks are kept with their signatures and sent back unchanged; the system
prompt and the newest message carry `cache_control`, so each call reads the previous
call's prefix from Anthropic's prompt cache. The SDK is imported on first use.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from larik_jupyter.llm.events import (
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
)
from larik_jupyter.llm.messages import (
    ContentBlock,
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
from larik_jupyter.llm.retry import RetryPolicy
from larik_jupyter.llm.sdk_provider import SdkProvider
from larik_jupyter.llm.sdk_stream import ChunkDecoder

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 16000
_CACHE = {"type": "ephemeral"}


def _block_param(block: ContentBlock) -> dict[str, Any] | None:
    """The API form of one stored block; None for blocks the API would reject."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ThinkingBlock):
        # An unsigned thinking block (from an interrupted stream) cannot be verified by
        # the API and is refused, so it stays in the transcript but is not sent.
        if not block.signature:
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ImageBlock):
        return {"type": "image", "source": block.source}
    if isinstance(block, ToolResultBlock):
        param: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
        if isinstance(block.content, str):
            param["content"] = block.content
        else:
            param["content"] = [p for p in map(_block_param, block.content) if p is not None]
        if block.is_error:
            param["is_error"] = True
        return param
    return None


def request_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation in Messages API form, with a cache breakpoint on the newest block.

    The transcript is append-only, so everything sent now is the stable prefix of the
    next call; marking the end of it lets the next call read it from the cache.
    """
    params: list[dict[str, Any]] = []
    for message in messages:
        content = [p for p in map(_block_param, message.content) if p is not None]
        if content:
            params.append({"role": message.role, "content": content})
    for param in reversed(params):
        cacheable = [
            b for b in param["content"] if b["type"] not in ("thinking", "redacted_thinking")
        ]
        if cacheable:
            cacheable[-1]["cache_control"] = _CACHE
            break
    return params


def _usage(raw: Any, usage: Usage) -> Usage:
    """`usage` updated with the non-null counts of an SDK usage object."""
    fields = {
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        "cache_read_input_tokens": "cache_read_tokens",
        "cache_creation_input_tokens": "cache_write_tokens",
    }
    updates = {
        ours: getattr(raw, theirs)
        for theirs, ours in fields.items()
        if getattr(raw, theirs, None) is not None
    }
    return usage.model_copy(update=updates)


class _Decoder(ChunkDecoder):
    """Raw Messages API stream events to our events."""

    def __init__(self) -> None:
        super().__init__()
        self._tool_ids: dict[int, str] = {}

    def feed(self, chunk: Any) -> list[StreamEvent]:
        kind = chunk.type
        if kind == "message_start":
            self.usage = _usage(chunk.message.usage, self.usage)
        elif kind == "content_block_start":
            return self._start(chunk.index, chunk.content_block)
        elif kind == "content_block_delta":
            return self._delta(chunk.index, chunk.delta)
        elif kind == "content_block_stop" and chunk.index in self._tool_ids:
            return [self.builder.end_tool(self._tool_ids.pop(chunk.index))]
        elif kind == "message_delta":
            self.stop_reason = chunk.delta.stop_reason or self.stop_reason
            self.usage = _usage(chunk.usage, self.usage)
        elif kind == "message_stop":
            self.finished = True
        return []

    def _start(self, index: int, block: Any) -> list[StreamEvent]:
        if block.type == "text" and block.text:
            return self.emit(TextDelta(block.text))
        if block.type == "thinking" and block.thinking:
            return self.emit(ThinkingDelta(thinking=block.thinking))
        if block.type == "redacted_thinking":
            self.builder.add_redacted_thinking(block.data)
        elif block.type == "tool_use":
            self._tool_ids[index] = block.id
            return self.emit(ToolCallStart(block.id, block.name))
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        if delta.type == "text_delta":
            return self.emit(TextDelta(delta.text))
        if delta.type == "thinking_delta":
            return self.emit(ThinkingDelta(thinking=delta.thinking))
        if delta.type == "signature_delta":
            return self.emit(ThinkingDelta(signature=delta.signature))
        if delta.type == "input_json_delta" and index in self._tool_ids:
            return self.emit(ToolCallDelta(self._tool_ids[index], delta.partial_json))
        return []


class AnthropicProvider(SdkProvider):
    """Streams Claude models; `thinking_budget` turns on extended thinking."""

    sdk_module = "anthropic"
    client_class = "AsyncAnthropic"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    decoder = _Decoder

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        key_env: str = "ANTHROPIC_API_KEY",
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int | None = None,
        thinking_budget: int | None = None,
        timeout: float = 600.0,
    ) -> None:
        super().__init__(
            model,
            name=f"anthropic:{model}",
            title="Anthropic",
            api_key=api_key,
            key_env=key_env,
            base_url=base_url,
            retry=retry,
            timeout=timeout,
        )
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self.thinking_budget = thinking_budget

    def __repr__(self) -> str:
        return f"AnthropicProvider({self.model!r}, base_url={self._base_url!r})"

    def request(
        self, system: str, messages: list[Message], tools: list[ToolSchema]
    ) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for one call."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": request_messages(messages),
            "stream": True,
        }
        if system:
            params["system"] = [{"type": "text", "text": system, "cache_control": _CACHE}]
        if tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        if self.thinking_budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            # The API requires room for an answer beyond the thinking budget.
            params["max_tokens"] = max(self.max_tokens, self.thinking_budget + 4096)
        return params

    def create(self, client: Any, params: dict[str, Any]) -> Awaitable[Any]:
        """Open a Messages API stream."""
        return client.messages.create(**params)
