"""What the real Anthropic and OpenAI APIs refuse, so the test server refuses it too: what
both rule sets are read with (a tool's name and id, a request's tokens as this server counts
them, a model's entry in a table of prefixes, a message's content blocks) and a body without
its cache breakpoints. Each API's own rules are in `anthropic_rules.py` and `openai_rules.py`.

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

def without_breakpoints(value: Any) -> Any:
    """`value` (a request body or part of one) without `cache_control` markers, which are not
    part of the prefix a prompt cache matches."""
    if isinstance(value, dict):
        return {k: without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_breakpoints(v) for v in value]
    return value


def prefixed(model: str, table: dict[str, int]) -> int | None:
    """The entry of `table` whose key is the longest prefix of `model`, or None."""
    keys = [k for k in table if model.startswith(k)]
    return table[max(keys, key=len)] if keys else None


def content_blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content blocks (none when it is a plain string)."""
    return content if isinstance(content, list) else []


def tool_names_problem(names: Any) -> str | None:
    """The 400 of tool names that break the pattern both APIs hold them to, or repeat."""
    seen: set[str] = set()
    for i, name in enumerate(names):
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if name in seen:
            return "tools: Tool names must be unique."
        seen.add(name)
    return None
