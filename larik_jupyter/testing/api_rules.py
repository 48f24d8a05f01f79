"""What the real Anthropic and OpenAI APIs refuse, so the test server refuses it too.

Each check returns the message of the 400 the real service answers (or one naming the same
rule) for the first rule a request body breaks, else None. The facts about models here are
written from the vendors' documentation on purpose apart from `llm/models.py`: a wrong entry
in our model table must fail against this server, not agree with it. Each rule names the
page and sentence it comes from.
"""

from __future__ import annotations

import re
from typing import Any

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
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

# https://platform.claude.com/docs/en/about-claude/models/overview ("Max output").
_CLAUDE_OUTPUT = {
    "claude-opus-4-7": 128_000,
    "claude-opus-4-6": 128_000,
    "claude-sonnet-4-6": 128_000,
    "claude-opus-4-5": 64_000,
    "claude-sonnet-4-5": 64_000,
    "claude-haiku-4-5": 64_000,
    "claude-opus-4-1": 32_000,
    "claude-3-5-haiku": 8192,
    "claude-3-haiku": 4096,
}
# https://docs.anthropic.com/en/docs/build-with-claude/adaptive-thinking: "Claude Opus 4.7
# … only support adaptive thinking. Manual extended thinking (thinking.type: "enabled" with
# budget_tokens) is not supported on these models and will return a 400 error."
_ADAPTIVE_ONLY = ("claude-opus-4-7", "claude-opus-5", "claude-mythos", "claude-fable")
# Models without extended thinking (Claude 3.5 and older).
_NO_THINKING = ("claude-3-5", "claude-3-haiku", "claude-3-opus", "claude-3-sonnet")
# https://docs.anthropic.com/en/docs/build-with-claude/vision: "up to 100 images per
# request"; "images larger than 5MB" are rejected; supported formats JPEG, PNG, GIF, WebP.
MAX_IMAGES = 100
MAX_IMAGE_BASE64 = 5 * 1024 * 1024 * 4 // 3
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
# https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching: "You can define up to
# 4 cache breakpoints".
MAX_BREAKPOINTS = 4
# https://platform.openai.com/docs/guides/reasoning: reasoning models (the o-series and
# gpt-5) take `max_completion_tokens`; `max_tokens`, `temperature` and `top_p` are refused.
_REASONING = re.compile(r"^(o1|o3|o4|gpt-5(?!-chat))")
_OPENAI_OUTPUT = {"gpt-5": 128_000, "gpt-4.1": 32_768, "gpt-4o": 16_384, "o3": 100_000, "o4-mini": 100_000}


# Context windows: https://platform.claude.com/docs/en/about-claude/models/overview ("Context
# window: 200K" for every model without a beta header) and https://platform.openai.com/docs/models.
CLAUDE_WINDOW = 200_000
_OPENAI_WINDOW = {
    "gpt-5": 400_000, "gpt-5-chat": 128_000, "gpt-4.1": 1_047_576, "gpt-4o": 128_000,
    "o3": 200_000, "o4-mini": 200_000,
}
# Tokens as this server counts them: four characters of text a token, an image a flat cost.
_CHARS_PER_TOKEN = 4
_IMAGE_TOKENS = 800


def request_tokens(body: Any) -> int:
    """The input tokens of a request body as the test server counts them: the characters of
    its text values over four (keys, ids and signatures aside), each image `_IMAGE_TOKENS`."""
    def walk(value: Any, key: str = "") -> tuple[int, int]:
        if isinstance(value, dict):
            if value.get("type") in ("image", "image_url"):
                return 0, 1
            pairs = [walk(v, k) for k, v in value.items()]
            return sum(c for c, _ in pairs), sum(i for _, i in pairs)
        if isinstance(value, list):
            pairs = [walk(v) for v in value]
            return sum(c for c, _ in pairs), sum(i for _, i in pairs)
        if isinstance(value, str) and key not in ("id", "tool_use_id", "tool_call_id", "signature", "type", "role", "model"):
            return len(value), 0
        return 0, 0

    chars, images = walk({k: v for k, v in body.items() if k in ("system", "messages", "tools")})
    return chars // _CHARS_PER_TOKEN + images * _IMAGE_TOKENS


def anthropic_too_long(body: dict[str, Any], window: int | None = None) -> str | None:
    """The 400 of a request over the model's window (`window`: a compatible server's own, for
    models not Claude's), as the API words it (users report "prompt is too long: 202609
    tokens > 200000 maximum", stackblitz-labs/bolt.diy#401)."""
    limit = CLAUDE_WINDOW if str(body.get("model", "")).startswith("claude") else window
    tokens = request_tokens(body)
    return f"prompt is too long: {tokens} tokens > {limit} maximum" if limit and tokens > limit else None


def openai_too_long(body: dict[str, Any], window: int | None = None) -> str | None:
    """The 400 (`context_length_exceeded`) of a request over the model's window (`window`: a
    compatible server's own, for models not OpenAI's), as users report it ("This model's
    maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens.
    Please reduce the length of the messages.", webtimemachine/wtm2#579)."""
    limit = _prefixed(str(body.get("model", "")), _OPENAI_WINDOW) or window
    tokens = request_tokens(body)
    if not limit or tokens <= limit:
        return None
    return (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages."
    )


def without_breakpoints(value: Any) -> Any:
    """`value` (a request body or part of one) without `cache_control` markers, which are not
    part of the prefix a prompt cache matches."""
    if isinstance(value, dict):
        return {k: without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_breakpoints(v) for v in value]
    return value


def _prefixed(model: str, table: dict[str, int]) -> int | None:
    keys = [k for k in table if model.startswith(k)]
    return table[max(keys, key=len)] if keys else None


def _blocks(content: Any) -> list[dict[str, Any]]:
    return content if isinstance(content, list) else []


def _all_blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every content block of the request, also inside tool results, with its place."""
    out: list[tuple[str, dict[str, Any]]] = []
    for i, block in enumerate(_blocks(body.get("system"))):
        out.append((f"system.{i}", block))
    for m, message in enumerate(body.get("messages") or []):
        for b, block in enumerate(_blocks(message.get("content"))):
            place = f"messages.{m}.content.{b}"
            out.append((place, block))
            if block.get("type") == "tool_result":
                out += [(f"{place}.content.{k}", inner) for k, inner in enumerate(_blocks(block.get("content")))]
    return out


def anthropic_problem(body: dict[str, Any]) -> str | None:
    """The first rule of the Messages API (https://docs.anthropic.com/en/api/messages) that
    `body` breaks, as the API would say it; None when it is a request the API accepts."""
    return (
        _anthropic_params(body)
        or _anthropic_turns(body)
        or _anthropic_thinking_loop(body)
        or _anthropic_blocks(body)
        or _tool_names(t.get("name") for t in body.get("tools") or [])
    )


def _anthropic_thinking_loop(body: dict[str, Any]) -> str | None:
    """extended-thinking with tool use: while thinking is on, the assistant message whose
    tool calls the last message answers must start with its thinking. The API's words, as
    users report them (e.g. anthropics/claude-code#11978, OpenRouterTeam/ai-sdk-provider#162)."""
    thinking = body.get("thinking")
    messages = body.get("messages") or []
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return None
    if len(messages) < 2 or not any(b.get("type") == "tool_result" for b in _blocks(messages[-1].get("content"))):
        return None
    m = len(messages) - 2
    first = (_blocks(messages[m].get("content")) or [{}])[0].get("type")
    if first in ("thinking", "redacted_thinking"):
        return None
    return (
        f"messages.{m}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
        "recommend you include thinking blocks from previous turns. To avoid this requirement, "
        "disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )


def _anthropic_params(body: dict[str, Any]) -> str | None:
    model = str(body.get("model", ""))
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Field required"
    limit = _prefixed(model, _CLAUDE_OUTPUT)
    if limit is not None and max_tokens > limit:
        return (
            f"max_tokens: {max_tokens} > {limit}, which is the maximum allowed number of "
            f"output tokens for {model}"
        )
    thinking = body.get("thinking")
    if not isinstance(thinking, dict):
        return None
    kind = thinking.get("type")
    if model.startswith(_NO_THINKING) and kind != "disabled":
        return f"thinking: extended thinking is not supported by {model}"
    if kind == "enabled":
        if model.startswith(_ADAPTIVE_ONLY):
            return (
                f'thinking.type: "enabled" is not supported for {model}; use thinking.type '
                '"adaptive"'
            )
        budget = thinking.get("budget_tokens")
        # extended-thinking: "The minimum budget is 1,024 tokens"; "budget_tokens must be
        # set to a value less than max_tokens".
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    elif kind == "adaptive" and set(thinking) != {"type"}:
        return "thinking.adaptive: takes no budget_tokens"
    return None


def _anthropic_turns(body: dict[str, Any]) -> str | None:
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        return "messages: the first message must use the user role"
    for m, message in enumerate(messages):
        content = message.get("content")
        if not content and not (m == len(messages) - 1 and message.get("role") == "assistant"):
            # api/messages: all messages "must have non-empty content except for the optional
            # final assistant message".
            return f"messages.{m}: all messages must have non-empty content except for the optional final assistant message"
        if m and message.get("role") == messages[m - 1].get("role"):
            return f"messages.{m}: roles must alternate between \"user\" and \"assistant\""
        blocks = _blocks(content)
        if message.get("role") == "assistant" and blocks and blocks[-1].get("type") in ("thinking", "redacted_thinking"):
            # As users report it (tailcallhq/forgecode#2107): a reply stopped after its thinking.
            return f"messages.{m}: The final block in an assistant message cannot be `thinking`."
        if message.get("role") == "user":
            # tool use docs: each tool_result must answer a tool_use of the previous message;
            # the API's words as users report them (anthropics/claude-code#13460).
            before = _blocks(messages[m - 1].get("content")) if m else []
            asked = {b.get("id") for b in before if b.get("type") == "tool_use"}
            stray = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result" and b.get("tool_use_id") not in asked]
            if stray:
                return (
                    f"messages.{m}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{stray[0]}. Each `tool_result` block must have a corresponding `tool_use` block "
                    "in the previous message."
                )
        calls = [b["id"] for b in blocks if b.get("type") == "tool_use"]
        if not calls:
            continue
        # tool use docs: "Tool result blocks must immediately follow their corresponding
        # tool use blocks in the message history" and "must come FIRST in the content array".
        after = _blocks(messages[m + 1].get("content")) if m + 1 < len(messages) else None
        if after is None:
            continue
        results = [b.get("tool_use_id") for b in after if b.get("type") == "tool_result"]
        missing = [c for c in calls if c not in results]
        if missing:
            return (
                f"messages.{m + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}"
            )
        kinds = [b.get("type") for b in after]
        if kinds[: len(results)] != ["tool_result"] * len(results):
            return f"messages.{m + 1}: tool_result blocks must come first in the content array"
    return None


def _anthropic_blocks(body: dict[str, Any]) -> str | None:
    images = breakpoints = 0
    for place, block in _all_blocks(body):
        kind = block.get("type")
        if "cache_control" in block:
            breakpoints += 1
            if kind in ("thinking", "redacted_thinking"):
                return f"{place}.thinking.cache_control: Extra inputs are not permitted"
        if kind == "text" and not str(block.get("text", "")).strip():
            # api/messages: "text content blocks must contain non-whitespace text"
            return f"{place}: text content blocks must contain non-whitespace text"
        if kind == "thinking" and not block.get("signature"):
            return f"{place}.thinking.signature: Field required"
        # A tool call's id, as users report the API's words (CommandCodeAI/command-code#323,
        # HKUDS/nanobot#4356): "tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'".
        for key, field in (("tool_use", "id"), ("tool_result", "tool_use_id")):
            if kind == key and not TOOL_ID.match(str(block.get(field, ""))):
                return f"{place}.{key}.{field}: String should match pattern '^[a-zA-Z0-9_-]+$'"
        if kind == "image":
            images += 1
            source = block.get("source") or {}
            if source.get("type") == "base64":
                if source.get("media_type") not in IMAGE_TYPES:
                    return f"{place}.source.base64.media_type: Input should be {', '.join(IMAGE_TYPES)}"
                if len(str(source.get("data", ""))) > MAX_IMAGE_BASE64:
                    return f"{place}.source.base64: image exceeds 5 MB maximum"
    if images > MAX_IMAGES:
        return f"messages: Too many images in the request ({images}); at most {MAX_IMAGES} are allowed"
    if breakpoints > MAX_BREAKPOINTS:
        return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
    return None


def _tool_names(names: Any) -> str | None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if name in seen:
            return "tools: Tool names must be unique."
        seen.add(name)
    return None


def openai_problem(body: dict[str, Any]) -> str | None:
    """The first rule of Chat Completions (https://platform.openai.com/docs/api-reference/chat)
    that `body` breaks, as the API would say it; None when the API accepts it."""
    model = str(body.get("model", ""))
    if _REASONING.match(model):
        for name in ("max_tokens", "temperature", "top_p"):
            if name in body:
                better = " Use 'max_completion_tokens' instead." if name == "max_tokens" else ""
                return f"Unsupported parameter: '{name}' is not supported with this model.{better}"
    limit = _prefixed(model, _OPENAI_OUTPUT)
    asked = body.get("max_completion_tokens") or body.get("max_tokens")
    if limit is not None and isinstance(asked, int) and asked > limit:
        return f"max_tokens is too large: {asked}. This model supports at most {limit} completion tokens"
    if "stream_options" in body and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    if problem := _tool_names((t.get("function") or {}).get("name") for t in body.get("tools") or []):
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
        parts = _blocks(message.get("content"))
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
