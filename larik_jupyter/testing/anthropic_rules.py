"""What the real Anthropic Messages API refuses, so the test server refuses it too: the
model's output limit and thinking modes, the order of turns and of a tool call's result, the
blocks (ids, images, cache breakpoints) and the context window. Each rule names the page and
sentence it comes from; what both APIs share is `api_rules.py`'s.
"""

from __future__ import annotations

from typing import Any

from larik_jupyter.testing.api_rules import (
    TOOL_ID,
    content_blocks,
    prefixed,
    request_tokens,
    tool_names_problem,
)

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
# The context window: https://platform.claude.com/docs/en/about-claude/models/overview
# ("Context window: 200K" for every model without a beta header).
CLAUDE_WINDOW = 200_000


def anthropic_too_long(body: dict[str, Any], window: int | None = None) -> str | None:
    """The 400 of a request over the model's window (`window`: a compatible server's own, for
    models not Claude's), as the API words it (users report "prompt is too long: 202609
    tokens > 200000 maximum", stackblitz-labs/bolt.diy#401)."""
    limit = CLAUDE_WINDOW if str(body.get("model", "")).startswith("claude") else window
    tokens = request_tokens(body)
    return f"prompt is too long: {tokens} tokens > {limit} maximum" if limit and tokens > limit else None


def _all_blocks(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every content block of the request, also inside tool results, with its place."""
    out: list[tuple[str, dict[str, Any]]] = []
    for i, block in enumerate(content_blocks(body.get("system"))):
        out.append((f"system.{i}", block))
    for m, message in enumerate(body.get("messages") or []):
        for b, block in enumerate(content_blocks(message.get("content"))):
            place = f"messages.{m}.content.{b}"
            out.append((place, block))
            if block.get("type") == "tool_result":
                out += [(f"{place}.content.{k}", inner) for k, inner in enumerate(content_blocks(block.get("content")))]
    return out


def anthropic_problem(body: dict[str, Any]) -> str | None:
    """The first rule of the Messages API (https://docs.anthropic.com/en/api/messages) that
    `body` breaks, as the API would say it; None when it is a request the API accepts."""
    return (
        _anthropic_params(body)
        or _anthropic_turns(body)
        or _anthropic_thinking_loop(body)
        or _anthropic_blocks(body)
        or tool_names_problem(t.get("name") for t in body.get("tools") or [])
    )


def _anthropic_thinking_loop(body: dict[str, Any]) -> str | None:
    """extended-thinking with tool use: while thinking is on, the assistant message whose
    tool calls the last message answers must start with its thinking. The API's words, as
    users report them (e.g. anthropics/claude-code#11978, OpenRouterTeam/ai-sdk-provider#162)."""
    thinking = body.get("thinking")
    messages = body.get("messages") or []
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "adaptive"):
        return None
    if len(messages) < 2 or not any(b.get("type") == "tool_result" for b in content_blocks(messages[-1].get("content"))):
        return None
    m = len(messages) - 2
    first = (content_blocks(messages[m].get("content")) or [{}])[0].get("type")
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
    limit = prefixed(model, _CLAUDE_OUTPUT)
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
        blocks = content_blocks(content)
        if message.get("role") == "assistant" and blocks and blocks[-1].get("type") in ("thinking", "redacted_thinking"):
            # As users report it (tailcallhq/forgecode#2107): a reply stopped after its thinking.
            return f"messages.{m}: The final block in an assistant message cannot be `thinking`."
        if message.get("role") == "user":
            # tool use docs: each tool_result must answer a tool_use of the previous message;
            # the API's words as users report them (anthropics/claude-code#13460).
            before = content_blocks(messages[m - 1].get("content")) if m else []
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
        after = content_blocks(messages[m + 1].get("content")) if m + 1 < len(messages) else None
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
