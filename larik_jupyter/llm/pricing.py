"""What a model's usage costs, from the prices in the model table (`llm/models.py`)."""

from __future__ import annotations

from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.models import Price, model_info

# The provider prefix of the offline scripted models (`scripted:<file>`, `scripted:demo`).
SCRIPTED = "scripted"


def price_for(model: str) -> Price | None:
    """The price of `model` (`provider:model` or bare name); None when unknown."""
    return model_info(model).price


def cost(model: str, usage: Usage) -> float | None:
    """The dollar cost of `usage` on `model`, or None when the price is unknown (or the
    tokens are only estimated); no tokens cost nothing, whatever the price (a turn stopped
    before the model answered says "$0.00", as its session does), and neither does a scripted
    model, so every view of a scripted session says "$0.00"."""
    if not (usage.input_tokens or usage.output_tokens or usage.cache_read_tokens or usage.cache_write_tokens):
        return 0.0
    if model.startswith(f"{SCRIPTED}:"):
        return 0.0  # an offline script: nothing is paid, whatever tokens it says it used

    price = price_for(model)
    if price is None or usage.estimated:
        return None
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000


def cost_label(cost: float | None) -> str:
    """How every view shows a cost: "price unknown" when the price is unknown, "$0.00" when
    free, dollars to the cent from a cent up ("$1,234.56"), and under a cent to a hundredth of
    one ("$0.0045"; "<$0.0001" below that), so a cheap turn does not read as free."""
    if cost is None:
        return "price unknown"
    if cost == 0 or cost >= 0.00995:
        return f"${cost:,.2f}"
    return f"${cost:.4f}" if cost >= 0.00005 else "<$0.0001"
