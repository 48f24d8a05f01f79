"""What a person does with the open session's egress door (`Agent.egress`): set a rule, mark the
session local-models-only, read the ledger back; each said in one sentence (`egress/controls.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.egress.controls import ledger_report, ledger_totals, set_local_only, set_rule
from larik_jupyter.egress.door import EgressDoor
from larik_jupyter.tools.calls import numbered_calls
from larik_jupyter.tools.env import Env

if TYPE_CHECKING:
    from larik_jupyter.agent.loop import AgentLoop


class SessionEgress:
    """The open session's door and the rules it decides by."""

    def __init__(self, loop: AgentLoop) -> None:
        self._loop = loop

    @property
    def door(self) -> EgressDoor:
        """The one egress door every request and every answer to an outside agent passes; keeps the ledger."""
        return self._loop.door

    @property
    def env(self) -> Env:
        """What the session's tools run in (root, host, egress rules), for front ends tagging as tools do."""
        return self._loop.env

    def set(self, target: str, policy: str) -> str:
        """Set what may leave of variable, file or pattern `target` (`never`, `schema`, `stats`,
        `sample N [mask COL,…]`, `full`); returns what now holds. A LarikError names a bad policy or target."""
        return set_rule(self._loop.door, target, policy)

    def local_only(self, on: bool) -> str:
        """Mark this session local-models-only (or not); returns the sentence saying what holds."""
        return set_local_only(self._loop.door, on)

    def report(self) -> str:
        """The rules in force, the last turn's requests by source and the session's totals."""
        loop = self._loop
        return ledger_report(loop.door, numbered_calls(loop.session.state.all, loop.cell_position()))

    def totals(self) -> str:
        """What this session has sent in all and what was withheld, from its ledger."""
        return ledger_totals(self._loop.door)
