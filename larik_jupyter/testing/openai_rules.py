"""What the real OpenAI Chat Completions API (and DeepSeek's, which follows it) refuses, so the
test server refuses it too: a reasoning model's parameters, the output limit, the tools'
names, descriptions and schemas, the messages' calls and results, DeepSeek's reasoning passed
back, and the context window. Each rule names the page and sentence (or the reported 400) it
comes from; what both APIs share is `api_rules.py`'s.
"""

from __future__ import annotations

import re
from typing import Any

from larik_jupyter.testing.api_rules import (
    content_blocks,
    prefixed,
    request_tokens,
    tool_names_problem,
)

# OpenAI's limits as its 400s state them: "Invalid 'messages[68].tool_calls[0].id': string
# too long. Expected a string with maximum length 40" (anomalyco/opencode#12653) and "Invalid
# 'tools[13].function.description': string too long. Expected a string with maximum length
# 1024" (getsentry/sentry-mcp#106).
MAX_CALL_ID = 40
# OpenAI's own models (a compatible server serving other names keeps its own id rules).
_OPENAI_MODEL = re.compile(r"^(gpt-|o\d|chatgpt-)")
MAX_DESCRIPTION = 1024
# DeepSeek's thinking mode (https://api-docs.deepseek.com/guides/thinking_mode): "For turns
# that do perform tool calls, the reasoning_content must be fully passed back to the API in all
# subsequent requests"; its 400 (the-open-agent/openagent#2206) follows.
_DEEPSEEK_THINKING = re.compile(r"^deepseek-(?!chat)")
# https://platform.openai.com/docs/guides/reasoning: reasoning models (the o-series and
# gpt-5) take `max_completion_tokens`; `max_tokens`, `temperature` and `top_p` are refused.
_REASONING = re.compile(r"^(o1|o3|o4|gpt-5(?!-chat))")
_OPENAI_OUTPUT = {"gpt-5": 128_000, "gpt-4.1": 32_768, "gpt-4o": 16_384, "o3": 100_000, "o4-mini": 100_000}
# Context windows: https://platform.openai.com/docs/models.
_OPENAI_WINDOW = {
    "gpt-5": 400_000, "gpt-5-chat": 128_000, "gpt-4.1": 1_047_576, "gpt-4o": 128_000,
    "o3": 200_000, "o4-mini": 200_000,
}


def openai_too_long(body: dict[str, Any], window: int | None = None) -> str | None:
    """The 400 (`context_length_exceeded`) of a request over the model's window (`window`: a
    compatible server's own, for models not OpenAI's), as users report it ("This model's
    maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens.
    Please reduce the length of the messages.", webtimemachine/wtm2#579)."""
    limit = prefixed(str(body.get("model", "")), _OPENAI_WINDOW) or window
    tokens = request_tokens(body)
    if not limit or tokens <= limit:
        return None
    return (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages."
    )


def openai_problem(body: dict[str, Any]) -> str | None:
    """The first rule of Chat Completions (https://platform.openai.com/docs/api-reference/chat)
    that `body` breaks, as the API would say it; None when the API accepts it."""
    model = str(body.get("model", ""))
    if _REASONING.match(model):
        for name in ("max_tokens", "temperature", "top_p"):
            if name in body:
                better = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
                return f"Unsupported parameter: '{name}' is not supported with this model.{better}"
    limit = prefixed(model, _OPENAI_OUTPUT)
    asked = body.get("max_completion_tokens") or body.get("max_tokens")
    if limit is not None and isinstance(asked, int) and asked > limit:
        return f"max_tokens is too large: {asked}. This model supports at most {limit} completion tokens"
    if "stream_options" in body and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    if problem := tool_names_problem((t.get("function") or {}).get("name") for t in body.get("tools") or []):
        return problem
    for i, tool in enumerate(body.get("tools") or []):
        if problem := _openai_function(i, tool.get("function") or {}):
            return problem
    if _DEEPSEEK_THINKING.match(model):
        for message in body.get("messages") or []:
            if message.get("tool_calls") and "reasoning_content" not in message:
                return "The `reasoning_content` in the thinking mode must be passed back to the API."
    return _openai_messages(body.get("messages") or [], _OPENAI_MODEL.match(model) is not None)


def _openai_function(index: int, function: dict[str, Any]) -> str | None:
    """A function tool's description and parameters schema, as OpenAI checks them."""
    description = str(function.get("description") or "")
    if len(description) > MAX_DESCRIPTION:
        return (
            f"Invalid 'tools[{index}].function.description': string too long. Expected a string "
            f"with maximum length {MAX_DESCRIPTION}, but got a string with length {len(description)} instead."
        )
    name = function.get("name")
    schema = function.get("parameters")
    if schema is None:
        return None
    # The 400s as users report them: "schema must be a JSON Schema of 'type: "object"', got
    # 'type: "None"'" (browserbase/stagehand#1159); "In context=(), object schema missing
    # properties" (spring-projects/spring-ai#4776); "In context=('properties', 'paths'), array
    # schema missing items" (sigoden/aichat#1049, mark3labs/mcp-filesystem-server#23).
    if not isinstance(schema, dict) or schema.get("type") != "object":
        got = schema.get("type") if isinstance(schema, dict) else None
        return (
            f"Invalid schema for function '{name}': schema must be a JSON Schema of "
            f"'type: \"object\"', got 'type: \"{got}\"'."
        )
    if found := _schema_problem(schema, ()):
        return f"Invalid schema for function '{name}': {found}"
    return None


def _schema_problem(schema: Any, context: tuple[str, ...]) -> str | None:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind == "object" and "properties" not in schema:
        return f"In context={context!r}, object schema missing properties."
    if kind == "array" and "items" not in schema:
        return f"In context={context!r}, array schema missing items."
    for name, inner in (schema.get("properties") or {}).items():
        if found := _schema_problem(inner, (*context, "properties", name)):
            return found
    return _schema_problem(schema.get("items"), (*context, "items"))


def _openai_messages(messages: list[dict[str, Any]], openai: bool) -> str | None:
    """The message rules of chat completions; `openai`: OpenAI's own limits too."""
    for m, message in enumerate(messages):
        role = message.get("role")
        parts = content_blocks(message.get("content"))
        if role != "user" and any(p.get("type") == "image_url" for p in parts):
            return f"messages[{m}]: Image URLs are only allowed for messages with role 'user'"
        if role == "tool":
            call = message.get("tool_call_id")
            opened = [
                c.get("id")
                for earlier in messages[:m]
                if earlier.get("role") == "assistant"
                for c in earlier.get("tool_calls") or []
            ]
            if call not in opened:
                return (
                    f"messages[{m}]: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
        calls = [c.get("id") for c in message.get("tool_calls") or []]
        for k, call in enumerate(calls):
            if openai and len(str(call)) > MAX_CALL_ID:
                return (
                    f"Invalid 'messages[{m}].tool_calls[{k}].id': string too long. Expected a string "
                    f"with maximum length {MAX_CALL_ID}, but got a string with length {len(str(call))} instead."
                )
        if calls:
            answered = []
            for later in messages[m + 1 :]:
                if later.get("role") != "tool":
                    break
                answered.append(later.get("tool_call_id"))
            if any(c not in answered for c in calls) and m + 1 < len(messages):
                return (
                    f"messages[{m}]: An assistant message with 'tool_calls' must be followed by "
                    "tool messages responding to each 'tool_call_id'."
                )
    return None
