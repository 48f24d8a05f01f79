"""How a turn ended: what `Agent.run` returns and `%larik -o NAME` binds in the kernel."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.agent.events import TurnStatus
from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.pricing import cost_label

_TEXT_PREVIEW = 40


@dataclass(repr=False)
class TurnOutcome:
    """One turn's result: `status` (done, interrupted, error, blocked, max_steps), the reply's
    final `text`, `error`, `usage` and `cost` (None when the model's price is unknown), the
    `session_id`, the `prompt` sent, and `value`: the kernel object the agent handed back with
    the `answer` tool (that very object, not a copy), whose variable name is `answer`."""

    turn: int
    status: TurnStatus
    text: str = ""
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    session_id: str = ""
    prompt: str = ""
    value: Any = None
    answer: str | None = None

    def __repr__(self) -> str:
        text = " ".join(self.text.split())
        if len(text) > _TEXT_PREVIEW:
            text = text[: _TEXT_PREVIEW - 1] + "…"
        bits = [self.status, f"turn {self.turn}"]
        if self.answer is not None:
            bits.append(f"value={self.answer} ({type(self.value).__name__})")
        if self.cost is not None:
            bits.append(cost_label(self.cost))
        return f"<TurnOutcome {' '.join(bits)}: {text!r}>"
