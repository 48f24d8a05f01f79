"""What the open session holds, read back for the views: its entries, the turns that can be undone
and what each did to files and kernel variables, the receipts of its calls, its plan, and the note the next prompt carries
(`Agent.history`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from larik_jupyter.agent.undo_list import UndoList, undo_list
from larik_jupyter.checkpoint.diffs import FileDiff, read_current, turn_diffs
from larik_jupyter.checkpoint.store import TurnInfo
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.session.entry_list import EntryList
from larik_jupyter.session.plan import Todo
from larik_jupyter.session.receipts import Receipt, receipt_text, session_receipts
from larik_jupyter.session.variable_changes import VariableChange, turn_changes
from larik_jupyter.tools.plan import current_plan

if TYPE_CHECKING:
    from larik_jupyter.agent.loop import AgentLoop


class SessionHistory:
    """The open session's stored history, read where it is kept (the transcript, the checkpoints)."""

    def __init__(self, loop: AgentLoop) -> None:
        self._loop = loop

    @property
    def entries(self) -> EntryList:
        """The stored transcript: every entry of the session file, oldest first."""
        return self._loop.session.entries

    def checkpoints(self) -> list[TurnInfo]:
        """The saved turns that changed files, oldest first (what `/undo` can revert)."""
        return self._loop.checkpoints.turns()

    def undo_list(self) -> UndoList:
        """What can be undone, newest first: the one list every view renders (`agent.undo_list`)."""
        return undo_list(self._loop.checkpoints, self._loop.session.path)

    def turn_diffs(self, *, limit: int) -> list[tuple[TurnInfo, list[FileDiff]]]:
        """Each saved turn, oldest first, with what it did to each file (diffs cut at `limit` characters)."""
        store = self._loop.checkpoints
        return turn_diffs(store, lambda rel: read_current(store.root, rel), limit=limit)

    def variable_changes(self, prompt_number: int) -> list[VariableChange]:
        """What prompt `prompt_number`'s turn did to kernel variables, as its calls' results recorded it."""
        return turn_changes(self._loop.session.state.all, prompt_number)

    def receipts(self) -> list[tuple[int, Receipt]]:
        """The receipts of the session's kernel calls with their prompt numbers, newest first (`/receipts`)."""
        return list(reversed(list(session_receipts(self._loop.session.state.all))))

    def variable_report(self, prompt_numbers: Iterable[int]) -> str:
        """What the calls of each prompt did to kernel variables, a line each, with their receipts
        under them (an outside agent's `variable_report`, one call a prompt)."""
        receipts: dict[int, list[str]] = {}
        for number, receipt in session_receipts(self._loop.session.state.all):
            receipts.setdefault(number, []).append(receipt_text(receipt))
        lines = []
        for number in prompt_numbers:
            changes = self.variable_changes(number)
            if changes:
                lines.append(f"call {number}: " + " · ".join(c.text() for c in changes))
            if number in receipts:
                lines += [f"call {number}, what its operations did to the rows:", *(f"  {r}" for r in receipts[number])]
        return "\n".join(lines) or "No call of this session changed the kernel's variables."

    @property
    def plan(self) -> list[Todo] | None:
        """The todos of the session's last successful `todo_write` call (on a branch, before it), or None."""
        return current_plan(self._loop.session.state.all)

    def cell_position(self) -> CellPosition:
        """Where a cell a call names stands now (0-based, None: unknown), open notebook first; for `/history`."""
        return self._loop.cell_position()

    @property
    def pending_note(self) -> str | None:
        """What the next prompt tells the model first (the note of an undo since), if anything."""
        return self._loop.pending_note
