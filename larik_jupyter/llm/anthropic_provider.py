"""`anthropic:<model>`: the Messages API through the official `anthropic` SDK, streamed.

Thinking blocks are kept with their signatures and sent back unchanged; the system
prompt and the newest message carry `cache_control`, so each call reads the previous
call's prefix from Anthropic's prompt cache. The SDK is imported on first use.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from larik_jupyter.llm.api_errors import ApiTarget, closed_early, translate
from larik_jupyter.llm.builder import MessageBuilder, cut_short
from larik_jupyter.llm.events import (
    MessageEnd,
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
from larik_jupyter.llm.provider import ProviderError, ToolSchema
from larik_jupyter.llm.retry import RetryPolicy, TransientError, with_retries

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_BASE_URL = "https://api.anthropic.com"
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
        cacheable = [b for b in param["content"] if b["type"] not in ("thinking", "redacted_thinking")]
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
    updates = {ours: getattr(raw, theirs) for theirs, ours in fields.items() if getattr(raw, theirs, None) is not None}
    return usage.model_copy(update=updates)


class AnthropicProvider:
    """Streams Claude models; `thinking_budget` turns on extended thinking."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        key_env: str = "ANTHROPIC_API_KEY",
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int = 16000,
        thinking_budget: int | None = None,
        timeout: float = 600.0,
    ) -> None:
        key = api_key or os.environ.get(key_env)
        if not key:
            raise ProviderError(
                f"{key_env} is not set; set it to your Anthropic API key, "
                "or choose another model with provider:model."
            )
        self.model = model
        self.name = f"anthropic:{model}"
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self._timeout = timeout
        self._key = key
        self._base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        self._target = ApiTarget("Anthropic", self.name, model, self._base_url, key_env, key)
        self._clients: dict[int, Any] = {}

    def __repr__(self) -> str:
        return f"AnthropicProvider({self.model!r}, base_url={self._base_url!r})"

    def _client(self) -> Any:
        # An httpx client's connections belong to one event loop; each loop gets its own.
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._clients:
            import anthropic

            self._clients = {
                loop_id: anthropic.AsyncAnthropic(
                    api_key=self._key, base_url=self._base_url, max_retries=0, timeout=self._timeout
                )
            }
        return self._clients[loop_id]

    def request(self, system: str, messages: list[Message], tools: list[ToolSchema]) -> dict[str, Any]:
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
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
            ]
        if self.thinking_budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return params

    def stream(
        self, system: str, messages: list[Message], tools: list[ToolSchema]
    ) -> AsyncIterator[StreamEvent]:
        """Stream one call, retrying transient failures before any output."""
        params = self.request(system, messages, tools)
        return with_retries(self.name, self.retry, lambda: self._attempt(params))

    def _failure(self, exc: BaseException) -> Exception:
        import anthropic

        failure = translate(exc, anthropic, self._target)
        if failure is None:
            raise exc
        return failure

    async def _attempt(self, params: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        try:
            stream = await self._client().messages.create(**params)
        except Exception as exc:
            raise self._failure(exc) from None
        builder = MessageBuilder()
        usage = Usage()
        stop_reason: str | None = None
        finished = False
        streamed = False
        tool_ids: dict[int, str] = {}
        try:
            async for event in stream:
                out: list[StreamEvent] = []
                kind = event.type
                if kind == "message_start":
                    usage = _usage(event.message.usage, usage)
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "text" and block.text:
                        out.append(TextDelta(block.text))
                    elif block.type == "thinking" and block.thinking:
                        out.append(ThinkingDelta(thinking=block.thinking))
                    elif block.type == "redacted_thinking":
                        builder.add_redacted_thinking(block.data)
                    elif block.type == "tool_use":
                        tool_ids[event.index] = block.id
                        out.append(ToolCallStart(block.id, block.name))
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        out.append(TextDelta(delta.text))
                    elif delta.type == "thinking_delta":
                        out.append(ThinkingDelta(thinking=delta.thinking))
                    elif delta.type == "signature_delta":
                        out.append(ThinkingDelta(signature=delta.signature))
                    elif delta.type == "input_json_delta" and event.index in tool_ids:
                        out.append(ToolCallDelta(tool_ids[event.index], delta.partial_json))
                elif kind == "content_block_stop" and event.index in tool_ids:
                    yield builder.end_tool(tool_ids.pop(event.index))
                    streamed = True
                elif kind == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    usage = _usage(event.usage, usage)
                elif kind == "message_stop":
                    finished = True
                for item in out:
                    builder.add(item)
                    streamed = True
                    yield item
        except Exception as exc:
            failure = self._failure(exc)
            if not streamed:
                raise failure from None
            reason = failure.reason if isinstance(failure, TransientError) else str(failure)
            yield cut_short(self.name, builder, usage, reason)
            return
        finally:
            await stream.close()
        if not finished:
            if not streamed:
                raise closed_early(self._target)
            yield cut_short(self.name, builder, usage, "the connection closed before the reply was complete")
            return
        yield MessageEnd(builder.message(), stop_reason or "end_turn", usage)

