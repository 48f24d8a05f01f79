"""Prices of the main Anthropic and OpenAI models, in US dollars per million tokens."""

from __future__ import annotations

from dataclasses import dataclass

from larik_jupyter.llm.messages import Usage


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_write: float


# Keyed by model-name prefix; the longest matching prefix wins, so dated snapshots
# (`claude-sonnet-4-5-20250929`) share their family's price.
_PRICES: dict[str, Price] = {
    "claude-opus-4-1": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4": Price(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4-5": Price(5.0, 25.0, 0.5, 6.25),
    "claude-sonnet-4": Price(3.0, 15.0, 0.3, 3.75),
    "claude-3-7-sonnet": Price(3.0, 15.0, 0.3, 3.75),
    "claude-3-5-sonnet": Price(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": Price(1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": Price(0.8, 4.0, 0.08, 1.0),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.3),
    "gpt-5": Price(1.25, 10.0, 0.125, 1.25),
    "gpt-5-mini": Price(0.25, 2.0, 0.025, 0.25),
    "gpt-5-nano": Price(0.05, 0.4, 0.005, 0.05),
    "gpt-4.1": Price(2.0, 8.0, 0.5, 2.0),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1, 0.4),
    "gpt-4.1-nano": Price(0.1, 0.4, 0.025, 0.1),
    "gpt-4o": Price(2.5, 10.0, 1.25, 2.5),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075, 0.15),
    "o3": Price(2.0, 8.0, 0.5, 2.0),
    "o3-mini": Price(1.1, 4.4, 0.55, 1.1),
    "o1": Price(15.0, 60.0, 7.5, 15.0),
    "o4-mini": Price(1.1, 4.4, 0.275, 1.1),
}


def price_for(model: str) -> Price | None:
    """The price of `model` (`provider:name` or bare name); None when unknown."""
    provider, _, name = model.rpartition(":")
    if provider not in ("", "anthropic", "openai"):
        return None
    matches = [prefix for prefix in _PRICES if name.startswith(prefix)]
    return _PRICES[max(matches, key=len)] if matches else None


def cost(model: str, usage: Usage) -> float | None:
    """The dollar cost of `usage` on `model`, or None when the price is unknown."""
    price = price_for(model)
    if price is None:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
