"""Cost of a session's usage for priced models; unknown models have no cost."""

from __future__ import annotations

import pytest

from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.pricing import cost, price_for

MILLION = Usage(
    input_tokens=1_000_000,
    output_tokens=1_000_000,
    cache_read_tokens=1_000_000,
    cache_write_tokens=1_000_000,
)


@pytest.mark.parametrize(
    ("model", "dollars"),
    [
        ("anthropic:claude-sonnet-4-5-20250929", 3 + 15 + 0.3 + 3.75),
        ("anthropic:claude-opus-4-5", 5 + 25 + 0.5 + 6.25),
        ("anthropic:claude-opus-4-1", 15 + 75 + 1.5 + 18.75),
        ("openai:gpt-5-mini", 0.25 + 2 + 0.025 + 0.25),
        ("openai:o3-mini", 1.1 + 4.4 + 0.55 + 1.1),
        ("gpt-4o", 2.5 + 10 + 1.25 + 2.5),
    ],
)
def test_known_models_are_priced_by_their_family(model: str, dollars: float) -> None:
    assert cost(model, MILLION) == pytest.approx(dollars)


@pytest.mark.parametrize(
    "model", ["ollama:gpt-4o", "openai-compatible:llama", "openai:unknown-model"]
)
def test_unknown_or_local_models_have_no_cost(model: str) -> None:
    assert price_for(model) is None
    assert cost(model, MILLION) is None


def test_a_scripted_model_costs_nothing_in_every_view_whatever_tokens_it_reports() -> None:
    from larik_jupyter.llm.pricing import cost_label

    reported = Usage(input_tokens=120, output_tokens=30)
    assert cost_label(cost("scripted:demo", reported)) == cost_label(cost("scripted:demo", Usage())) == "$0.00"
    assert cost_label(cost("scripted:/tmp/s.json", reported)) == "$0.00"
    assert cost_label(cost("mystery:model", reported)) == "price unknown"  # made false: an unknown real model
