"""What a model's usage costs, from the prices in the model table (`llm/models.py`)."""

from __future__ import annotations

from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.models import Price, model_info


def price_for(model: str) -> Price | None:
    """The price of `model` (`provider:model` or bare name); None when unknown."""
    return model_info(model).price


def cost(model: str, usage: Usage) -> float | None:
    """The dollar cost of `usage` on `model`, or None when the price is unknown (or the
    tokens are only estimated)."""
    price = price_for(model)
    if price is None or usage.estimated:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
