"""Token totals per `provider:model` and what they cost: the session state and each prompt's
summary add up usage entries the same way."""

from __future__ import annotations

from dataclasses import dataclass, field

from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.pricing import cost as price_cost
from larik_jupyter.session.outline import UsageOutline


@dataclass
class Tally:
    """Tokens per `provider:model`, which is what prices are looked up by."""

    tokens: dict[str, list[int]] = field(default_factory=dict)
    # The models some of whose counts are estimates (the server reported none): unpriced.
    estimated: set[str] = field(default_factory=set)

    def add(self, model: str, usage: UsageOutline) -> None:
        """Count `usage` for `model`; a usage entry with no tokens (a `/model` switch, an
        undo's note) prices nothing and adds no row."""
        if not (usage.input_tokens or usage.output_tokens or usage.cache_read_tokens or usage.cache_write_tokens):
            return
        row = self.tokens.setdefault(model, [0, 0, 0, 0])
        row[0] += usage.input_tokens
        row[1] += usage.output_tokens
        row[2] += usage.cache_read_tokens
        row[3] += usage.cache_write_tokens
        if usage.estimated:
            self.estimated.add(model)

    def usage(self) -> Usage:
        i, o, r, w = (sum(column) for column in zip(*self.tokens.values(), strict=False)) if self.tokens else (0,) * 4
        return Usage(
            input_tokens=i, output_tokens=o, cache_read_tokens=r, cache_write_tokens=w,
            estimated=bool(self.estimated) or None,
        )

    def cost(self) -> float | None:
        """Dollars, or None when some model's price is unknown."""
        if self.estimated:
            return None
        total = 0.0
        for model, (i, o, r, w) in self.tokens.items():
            spent = price_cost(model, Usage(input_tokens=i, output_tokens=o, cache_read_tokens=r, cache_write_tokens=w))
            if spent is None:
                return None
            total += spent
        return total
