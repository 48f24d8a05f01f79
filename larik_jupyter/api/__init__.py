"""The public surface: what front ends and scripts use of larik_jupyter. Front ends import
this, `records`, the event types (`agent.events`) and the wire modules, nothing else of the
core (`tests/test_import_layers.py`); each name loads on first access."""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.agent.options import AgentOptions
    from larik_jupyter.agent.outcome import TurnOutcome
    from larik_jupyter.agent.turn import PromptExtras, TurnOptions
    from larik_jupyter.agent.undo import RewindStopped
    from larik_jupyter.agent.undo_report import UndoReport
    from larik_jupyter.api.agent import Agent
    from larik_jupyter.run_sync import run_sync

_WHERE = {
    "Agent": "larik_jupyter.api.agent",
    "AgentOptions": "larik_jupyter.agent.options",
    "PromptExtras": "larik_jupyter.agent.turn",
    "RewindStopped": "larik_jupyter.agent.undo",
    "TurnOptions": "larik_jupyter.agent.turn",
    "TurnOutcome": "larik_jupyter.agent.outcome",
    "UndoReport": "larik_jupyter.agent.undo_report",
    "run_sync": "larik_jupyter.run_sync",
}
__all__ = sorted(_WHERE)  # noqa: PLE0605
__getattr__ = lazy_names(__name__, _WHERE)
