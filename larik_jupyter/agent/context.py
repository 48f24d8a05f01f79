"""The model context handed to the provider, derived from the session's replayed state."""

from __future__ import annotations

from larik_jupyter.llm.messages import Message
from larik_jupyter.session.state import State


def model_context(state: State) -> list[Message]:
    """The messages after the latest compaction, with unanswered tool calls answered."""
    return list(state.context_for_model())
