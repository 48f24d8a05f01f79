"""`anthropic:<model>`: the Messages API through the official `anthropic` SDK, streamed.

Thinking blocks are kept with their signatures and sent back unchanged. Prompt caching: the
system prompt (after the tools) and the last block of each of the last three user messages
carry `cache_control` (the API allows four breakpoints). Every request ends with a user
message and the conversation only grows, so the previous call's request ends exactly at the
second-newest user message: its breakpoint reads that call's prefix however many blocks the
last step added (a breakpoint finds a cached prefix only up to 20 blocks back). The third
covers a call that failed in between. Extended thinking follows the model table: `budget`
models get `{"type": "enabled", "budget_tokens": N}` (at least 1024, below `max_tokens`),
`adaptive` ones `{"type": "adaptive"}`; `max_tokens` never exceeds the model's output limit.
The SDK is imported on first use.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from larik_jupyter.llm.context import ANTHROPIC_TOOL_IDS, NO_REPLY
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
from larik_jupyter.llm.models import ModelInfo, model_info
from larik_jupyter.llm.provider import ToolSchema
from larik_jupyter.llm.retry import RetryPolicy
from larik_jupyter.llm.sdk_provider import SdkProvider
from larik_jupyter.llm.sdk_stream import ChunkDecoder

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MAX_TOKENS = 16000
# https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking: "The minimum
# budget is 1,024 tokens"; "budget_tokens must be set to a value less than max_tokens".
MIN_THINKING_BUDGET = 1024
# Room for the answer after the thinking budget.
ANSWER_ROOM = 4096
# https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching: "You can define up
# to 4 cache breakpoints"; one goes on the system prompt.
HISTORY_BREAKPOINTS = 3
_CACHE = {"type": "ephemeral"}


def _block_param(block: ContentBlock) -> dict[str, Any] | None:
    """The API form of one stored block; None for blocks the API would reject."""
    if isinstance(block, TextBlock):
        # "text content blocks must contain non-whitespace text"
        return {"type": "text", "text": block.text} if block.text.strip() else None
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


def request_messages(messages: list[Message], *, cache: bool = True) -> list[dict[str, Any]]:
    """The conversation in Messages API form (roles alternating), with cache breakpoints on
    the last block of each of the last `HISTORY_BREAKPOINTS` user messages (none without
    `cache`)."""
    params: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        content = [p for p in map(_block_param, message.content) if p is not None]
        if not content and message.role == "assistant" and index < len(messages) - 1:
            # Nothing the API takes (only blank text or unsigned thinking): "all messages must
            # have non-empty content except for the optional final assistant message", so it
            # says this instead of vanishing (the roles keep alternating).
            content = [{"type": "text", "text": NO_REPLY}]
        if params and content and params[-1]["role"] == message.role:
            # Two user messages in a row (a prompt whose call failed, then the next one; a
            # compaction summary, then the prompt): one turn, so the roles alternate.
            params[-1]["content"].extend(content)
        elif content:
            params.append({"role": message.role, "content": content})
    if cache:
        users = [p for p in params if p["role"] == "user"]
        for param in users[-HISTORY_BREAKPOINTS:]:
            param["content"][-1]["cache_control"] = _CACHE
    return params


def thinking_params(info: ModelInfo, max_tokens: int, budget: int | None) -> dict[str, Any]:
    """`max_tokens` and `thinking` for a call with the configured thinking `budget` (None:
    thinking off): what the model's thinking mode takes, within its output limit."""
    ceiling = info.max_output_tokens
    if not budget or info.thinking == "none":
        return {"max_tokens": min(max_tokens, ceiling)}
    budget = max(budget, MIN_THINKING_BUDGET)
    total = min(ceiling, max(max_tokens, budget + ANSWER_ROOM))
    if info.thinking == "adaptive":
        return {"max_tokens": total, "thinking": {"type": "adaptive"}}
    budget = min(budget, total - min(ANSWER_ROOM, total // 2))
    return {"max_tokens": total, "thinking": {"type": "enabled", "budget_tokens": budget}}


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
            self.usage, self.usage_seen = _usage(chunk.message.usage, self.usage), True
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
    tool_ids = ANTHROPIC_TOOL_IDS
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
        info: ModelInfo | None = None,
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
            info=info or model_info(f"anthropic:{model}"),
        )
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self.thinking_budget = thinking_budget

    def __repr__(self) -> str:
        return f"AnthropicProvider({self.model!r}, base_url={self._base_url!r})"

    def request(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for one call."""
        params: dict[str, Any] = {
            "model": self.model,
            **thinking_params(self.info, self.max_tokens, self.thinking_budget),
            "messages": request_messages(messages, cache=cache),
            "stream": True,
        }
        if system:
            params["system"] = [{"type": "text", "text": system}]
            if cache:
                params["system"][0]["cache_control"] = _CACHE
        if tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        return params

    def create(self, client: Any, params: dict[str, Any]) -> Awaitable[Any]:
        """Open a Messages API stream."""
        return client.messages.create(**params)
