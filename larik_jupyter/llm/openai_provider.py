"""`openai:<model>` and any OpenAI-compatible server, through the official `openai` SDK.

Streams chat completions with tool calls. Our Anthropic-shaped messages are converted:
tool_use blocks become assistant `tool_calls`, tool_result blocks become `tool` role
messages; images in tool results (which a `tool` message cannot carry) follow them in one
user message of `image_url` data URLs. Reasoning streamed as `reasoning_content` /
`reasoning` (DeepSeek, vLLM, Ollama and others) becomes thinking blocks without a signature.
A compatible server gets it back as `reasoning_content` on each assistant message that calls
tools (DeepSeek's thinking mode, https://api-docs.deepseek.com/guides/thinking_mode: "For
turns that do perform tool calls, the reasoning_content must be fully passed back to the API
in all subsequent requests"; on other messages it "will be ignored", so it is not sent);
OpenAI itself gets none. The SDK is imported on first use.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any

from larik_jupyter.llm.context import OPENAI_TOOL_IDS
from larik_jupyter.llm.events import (
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
)
from larik_jupyter.llm.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from larik_jupyter.llm.models import ModelInfo, model_info
from larik_jupyter.llm.openai_tools import openai_function
from larik_jupyter.llm.provider import ToolSchema
from larik_jupyter.llm.retry import RetryPolicy
from larik_jupyter.llm.script import new_tool_id
from larik_jupyter.llm.sdk_provider import SdkProvider
from larik_jupyter.llm.sdk_stream import ChunkDecoder

DEFAULT_MODEL = "gpt-5"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


def _image_part(block: ImageBlock) -> dict[str, Any]:
    source = block.source
    url = (
        source.get("url")
        or f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    )
    return {"type": "image_url", "image_url": {"url": url}}


def _result_text(block: ToolResultBlock) -> str:
    # Chat completions accept only text in tool messages; images follow as a user message.
    text = block.text(image="[image: in the next user message]")
    return f"Error: {text}" if block.is_error else text


def _user_messages(message: Message) -> list[dict[str, Any]]:
    results = message.tool_results()
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b.tool_use_id, "content": _result_text(b)} for b in results
    ]
    images = [
        (b.tool_use_id, i) for b in results if not isinstance(b.content, str)
        for i in b.content if isinstance(i, ImageBlock)
    ]
    if images:
        ids = ", ".join(dict.fromkeys(call for call, _ in images))
        note = {"type": "text", "text": f"Images returned by tool call {ids}:"}
        out.append({"role": "user", "content": [note, *(_image_part(i) for _, i in images)]})
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
    if parts:
        only_text = all(p["type"] == "text" for p in parts)
        content: Any = "".join(p["text"] for p in parts) if only_text else parts
        out.append({"role": "user", "content": content})
    return out


def _assistant_message(message: Message, reasoning: bool) -> dict[str, Any] | None:
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": json.dumps(b.input)},
        }
        for b in message.content
        if isinstance(b, ToolUseBlock)
    ]
    text = message.text()
    if not text and not calls:
        return None
    param: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        param["tool_calls"] = calls
        if reasoning:
            param["reasoning_content"] = "".join(
                b.thinking for b in message.content if isinstance(b, ThinkingBlock)
            )
    return param


def request_messages(
    system: str, messages: list[Message], *, reasoning: bool = False
) -> list[dict[str, Any]]:
    """The conversation in chat completions form, system prompt first; with `reasoning`, an
    assistant message that calls tools carries its thinking back as `reasoning_content`."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message.role == "user":
            out.extend(_user_messages(message))
        elif (param := _assistant_message(message, reasoning)) is not None:
            out.append(param)
    return out


class _Decoder(ChunkDecoder):
    """Chat completion chunks to our events; tool calls end when the finish reason arrives."""

    def __init__(self) -> None:
        super().__init__()
        self._tool_ids: dict[int, str] = {}

    def feed(self, chunk: Any) -> list[StreamEvent]:
        if chunk.usage is not None:
            self.usage, self.usage_seen = _usage(chunk.usage), True
        out: list[StreamEvent] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            reasoning = getattr(delta, "reasoning_content", None) or getattr(
                delta, "reasoning", None
            )
            if isinstance(reasoning, str) and reasoning:
                out += self.emit(ThinkingDelta(thinking=reasoning))
            if delta.content:
                out += self.emit(TextDelta(delta.content))
            for call in delta.tool_calls or []:
                out += self._tool_delta(call)
            if choice.finish_reason:
                out += [self.builder.end_tool(tool_id) for tool_id in self.builder.open_tools()]
                self.stop_reason = _STOP_REASONS.get(choice.finish_reason, choice.finish_reason)
                self.finished = True
        return out

    def _tool_delta(self, call: Any) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        function = call.function
        if call.index not in self._tool_ids:
            # Some compatible servers send no id; the transcript needs one to pair results.
            self._tool_ids[call.index] = call.id or new_tool_id("call_")
            out += self.emit(
                ToolCallStart(self._tool_ids[call.index], (function and function.name) or "")
            )
        if function and function.arguments:
            out += self.emit(ToolCallDelta(self._tool_ids[call.index], function.arguments))
        return out


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0)
    # OpenAI counts cached tokens inside prompt_tokens; we count them apart, like Anthropic.
    return Usage(
        input_tokens=max(0, (raw.prompt_tokens or 0) - cached),
        output_tokens=raw.completion_tokens or 0,
        cache_read_tokens=cached,
    )


class OpenAIProvider(SdkProvider):
    """Streams chat completions from OpenAI or a compatible server at `base_url`.

    `prefix` and `title` name the backend in labels and errors (`ollama`, "Ollama");
    `key_env=None` means the server needs no key.
    """

    sdk_module = "openai"
    client_class = "AsyncOpenAI"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    decoder = _Decoder

    def __init__(
        self,
        model: str,
        *,
        prefix: str = "openai",
        title: str = "OpenAI",
        api_key: str | None = None,
        key_env: str | None = "OPENAI_API_KEY",
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        max_tokens: int | None = None,
        timeout: float = 600.0,
        info: ModelInfo | None = None,
    ) -> None:
        super().__init__(
            model,
            name=f"{prefix}:{model}",
            title=title,
            api_key=api_key,
            key_env=key_env,
            base_url=base_url,
            retry=retry,
            timeout=timeout,
            info=info or model_info(f"{prefix}:{model}"),
        )
        self.max_tokens = max_tokens
        # OpenAI streams no reasoning text; a compatible server that does wants it back.
        self.reasoning_back = prefix != "openai"
        # OpenAI's limit on tool-call ids; a compatible server gets its own ids back.
        self.tool_ids = OPENAI_TOOL_IDS if prefix == "openai" else None

    def __repr__(self) -> str:
        return f"OpenAIProvider({self.name!r}, base_url={self._base_url!r})"

    def request(
        self, system: str, messages: list[Message], tools: list[ToolSchema], *, cache: bool = True
    ) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for one call. OpenAI caches
        prefixes by itself (`cache` changes nothing); a reasoning model gets the configured
        limit as `max_completion_tokens`, the only form it takes, and no sampling
        parameters; any model at most its output limit."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": request_messages(system, messages, reasoning=self.reasoning_back),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            params["tools"] = [openai_function(t) for t in tools]
        if self.max_tokens:
            limit = min(self.max_tokens, self.info.max_output_tokens)
            params["max_completion_tokens" if self.info.reasoning else "max_tokens"] = limit
        return params

    def create(self, client: Any, params: dict[str, Any]) -> Awaitable[Any]:
        """Open a chat completions stream."""
        return client.chat.completions.create(**params)
