"""One table of model facts: limits, thinking mode, reasoning rules, images, cache minimum, prices.

Requests (`max_tokens`, thinking, the OpenAI token parameter), compaction (the context
window), the model context's image budget and `/usage` (prices) all read it. Entries are
keyed by model-id prefix and the longest matching prefix wins, so dated snapshots
(`claude-sonnet-4-5-20250929`) share their family's facts. Only the `anthropic` and `openai`
providers look models up here: a local server (`ollama:`, `openai-compatible:`) serving a
model called `gpt-4o` is not OpenAI's, so it gets the conservative default. Config can
change an entry (`models` in docs/format.md): `with_overrides`.

Sources, checked December 2026 (where a figure could not be confirmed the comment says so
and the value is the conservative one):
- https://platform.claude.com/docs/en/about-claude/models/overview and each model's
  overview page ("Context window: … · Max output: …").
- https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching ("The minimum
  cacheable prompt length is: 4096 tokens for Claude Opus 4.6, Claude Opus 4.5 …; 1024
  tokens for Claude Sonnet 4.6, Claude Sonnet 4.5, Claude Opus 4.1, Claude Opus 4, Claude
  Sonnet 4 …; 4096 tokens for Claude Haiku 4.5; 2048 tokens for Claude Haiku 3.5 and
  Claude Haiku 3").
- https://docs.anthropic.com/en/docs/build-with-claude/adaptive-thinking ("Claude Opus 4.7
  … only support adaptive thinking. Manual extended thinking (thinking.type: "enabled" with
  budget_tokens) is not supported on these models and will return a 400 error";
  "thinking.type: "enabled" and budget_tokens are deprecated on Claude Opus 4.6 and Claude
  Sonnet 4.6").
- https://docs.anthropic.com/en/docs/build-with-claude/vision ("up to 100 images per
  request" for 200k-context models on the API; the request size limit is 32 MB).
- https://platform.openai.com/docs/models (context windows, max output tokens),
  https://platform.openai.com/docs/guides/reasoning (reasoning models take
  `max_completion_tokens` and reject `temperature` / `top_p`),
  https://platform.openai.com/docs/guides/prompt-caching ("Caching is enabled automatically
  for prompts that are 1024 tokens or longer", hits "in increments of 128 tokens").
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

ThinkingMode = Literal["none", "budget", "adaptive"]
MB = 1_000_000


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(frozen=True)
class ModelInfo:
    """What one model accepts and costs.

    `thinking`: "none" (no extended thinking), "budget" (`{"type": "enabled",
    "budget_tokens": N}`) or "adaptive" (`{"type": "adaptive"}`). `reasoning`: OpenAI's
    reasoning-model rules (`max_completion_tokens`, no `temperature` / `top_p`).
    `max_images` and `max_image_bytes` bound the images (base64 characters) of one request;
    `cache_min_tokens` is the shortest prefix the provider's prompt cache stores.
    """

    context_window: int
    max_output_tokens: int
    thinking: ThinkingMode = "none"
    reasoning: bool = False
    vision: bool = True
    max_images: int = 100
    max_image_bytes: int = 20 * MB
    cache_min_tokens: int = 4096
    price: Price | None = None


# Any model nobody can vouch for (a local server's, a new id): a window most servers offer,
# an answer length every model takes, no thinking or reasoning parameters, no images
# (local servers' models mostly take none; `vision` in config turns them on).
UNKNOWN = ModelInfo(context_window=128_000, max_output_tokens=4096, vision=False, max_images=20)
# A Claude or OpenAI model id missing from the table: both vendors' current models take
# images; the rest stays as conservative as UNKNOWN.
_UNKNOWN_VENDOR = dataclasses.replace(UNKNOWN, vision=True, max_images=100)


def _claude(
    output: int, thinking: ThinkingMode, cache_min: int, price: Price, window: int = 200_000
) -> ModelInfo:
    # 200k-context models on the API: up to 100 images per request; the request size limit
    # is 32 MB, so images may take 20 MB of base64 and the conversation the rest.
    return ModelInfo(window, output, thinking, cache_min_tokens=cache_min, price=price)


def _openai(window: int, output: int, price: Price, *, reasoning: bool) -> ModelInfo:
    # Not sure of OpenAI's per-request image count (its vision guide names up to 500 images
    # and a 50 MB payload); 100 and 20 MB are the conservative values.
    return ModelInfo(window, output, reasoning=reasoning, cache_min_tokens=1024, price=price)


_OPUS_4 = Price(15.0, 75.0, 1.5, 18.75)
_OPUS_45 = Price(5.0, 25.0, 0.5, 6.25)
_SONNET = Price(3.0, 15.0, 0.3, 3.75)

MODELS: dict[str, ModelInfo] = {
    # Opus 4.7 and later Opus models: adaptive thinking only. Max output 128K (as 4.6);
    # the cache minimum is not on the page we could read: 4096, the highest any model has.
    # The 4.6 and 4.7 pages say 1M context; 200k is what every Claude 4 model takes without
    # a beta header, so compaction plans for that.
    "claude-opus-4-7": _claude(128_000, "adaptive", 4096, _OPUS_45),
    "claude-opus-4-6": _claude(128_000, "adaptive", 4096, _OPUS_45),
    # Sonnet 4.6: the caching page says 1024; users report caching only from 2048, so 2048.
    "claude-sonnet-4-6": _claude(128_000, "adaptive", 2048, _SONNET),
    "claude-opus-4-5": _claude(64_000, "budget", 4096, _OPUS_45),
    "claude-opus-4-1": _claude(32_000, "budget", 1024, _OPUS_4),
    "claude-opus-4": _claude(32_000, "budget", 1024, _OPUS_4),
    "claude-sonnet-4-5": _claude(64_000, "budget", 1024, _SONNET),
    "claude-sonnet-4": _claude(64_000, "budget", 1024, _SONNET),
    "claude-haiku-4-5": _claude(64_000, "budget", 4096, Price(1.0, 5.0, 0.1, 1.25)),
    "claude-3-7-sonnet": _claude(64_000, "budget", 1024, _SONNET),
    "claude-3-5-sonnet": _claude(8192, "none", 1024, _SONNET),
    "claude-3-5-haiku": _claude(8192, "none", 2048, Price(0.8, 4.0, 0.08, 1.0)),
    "claude-3-haiku": _claude(4096, "none", 2048, Price(0.25, 1.25, 0.03, 0.3)),
    "gpt-5": _openai(400_000, 128_000, Price(1.25, 10.0, 0.125, 1.25), reasoning=True),
    "gpt-5-mini": _openai(400_000, 128_000, Price(0.25, 2.0, 0.025, 0.25), reasoning=True),
    "gpt-5-nano": _openai(400_000, 128_000, Price(0.05, 0.4, 0.005, 0.05), reasoning=True),
    # gpt-5-chat-latest is the non-reasoning chat model behind ChatGPT.
    "gpt-5-chat": _openai(128_000, 16_384, Price(1.25, 10.0, 0.125, 1.25), reasoning=False),
    "gpt-4.1": _openai(1_047_576, 32_768, Price(2.0, 8.0, 0.5, 2.0), reasoning=False),
    "gpt-4.1-mini": _openai(1_047_576, 32_768, Price(0.4, 1.6, 0.1, 0.4), reasoning=False),
    "gpt-4.1-nano": _openai(1_047_576, 32_768, Price(0.1, 0.4, 0.025, 0.1), reasoning=False),
    "gpt-4o": _openai(128_000, 16_384, Price(2.5, 10.0, 1.25, 2.5), reasoning=False),
    "gpt-4o-mini": _openai(128_000, 16_384, Price(0.15, 0.6, 0.075, 0.15), reasoning=False),
    "o1": _openai(200_000, 100_000, Price(15.0, 60.0, 7.5, 15.0), reasoning=True),
    "o3": _openai(200_000, 100_000, Price(2.0, 8.0, 0.5, 2.0), reasoning=True),
    "o3-mini": _openai(200_000, 100_000, Price(1.1, 4.4, 0.55, 1.1), reasoning=True),
    "o4-mini": _openai(200_000, 100_000, Price(1.1, 4.4, 0.275, 1.1), reasoning=True),
}
_VENDORS = ("", "anthropic", "openai")
# The fields a config `models` entry may set (prices stay the table's: see `with_overrides`).
OVERRIDABLE = tuple(f.name for f in dataclasses.fields(ModelInfo) if f.name != "price")


def _longest_prefix(name: str, table: dict[str, Any]) -> str | None:
    matches = [prefix for prefix in table if name.startswith(prefix)]
    return max(matches, key=len) if matches else None


def model_info(spec: str, overrides: dict[str, Any] | None = None) -> ModelInfo:
    """The facts of `spec` (`provider:model` or a bare model id), with config `overrides`
    (model id or prefix -> fields) applied; unknown models get conservative defaults."""
    provider, sep, name = spec.partition(":")
    if not sep:
        provider, name = "", spec
    if provider in _VENDORS:
        key = _longest_prefix(name, MODELS)
        info = MODELS[key] if key else _UNKNOWN_VENDOR
    else:
        info = UNKNOWN
    return with_overrides(info, name, overrides)


def with_overrides(info: ModelInfo, name: str, overrides: dict[str, Any] | None) -> ModelInfo:
    """`info` with the fields of the longest `overrides` key that `name` starts with. Prices
    are not overridable: sessions are priced wherever they are read (CLI, server), where
    another project's config may apply."""
    key = _longest_prefix(name, overrides or {})
    if key is None:
        return info
    entry: Any = (overrides or {})[key]
    fields = entry.model_dump() if hasattr(entry, "model_dump") else dict(entry)
    changes = {k: v for k, v in fields.items() if k in OVERRIDABLE and v is not None}
    return dataclasses.replace(info, **changes)
