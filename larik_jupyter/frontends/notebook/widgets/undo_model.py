"""What the undo panel shows (`undo.py`; its page, `undo.js`, reads the same as JSON) and the
actions its page sends."""

from __future__ import annotations

import msgspec

from larik_jupyter.api import TurnChange
from larik_jupyter.frontends.notebook.widgets.actions import Action


class Undo(Action, tag="undo"):
    """Undo the newest turn; with `force` or `skip_changed`, the answer about files the user
    changed since (as `/undo --force`, `--skip-changed`)."""

    force: bool = False
    skip_changed: bool = False


class UndoTo(Action, tag="undo_to"):
    """Undo every turn down to prompt `prompt` (`force`, `skip_changed`: as `Undo`'s)."""

    prompt: int
    force: bool = False
    skip_changed: bool = False


class Reload(Action, tag="reload"):
    """Show the session as it is now (the panel's Refresh)."""


class VariableRow(msgspec.Struct, kw_only=True):
    """A variable a turn changed: its type and shape `before` the turn and `after` it (now),
    whether undo can put it back (else `reason`), whether it is `same` as before (changed back
    since) or `gone` with the kernel; `change`: what the transcript says the turn did to it;
    `text`: the panel's line for it."""

    name: str
    before: str
    after: str
    restorable: bool
    reason: str | None
    same: bool
    gone: bool = False
    change: str | None = None
    text: str = ""


class TurnRow(msgspec.Struct, kw_only=True):
    """A turn of the undo list: what it did to each file and cell (`changes`, the undo list's
    one record of them, as REST sends it), to each variable, its `state` (`undoable`, `files only`, `not
    undoable`) and `note`, whether its Undo button shows (`undoable`; else `why` not), and the
    action that button sends (`undo`)."""

    turn: int
    prompt: int | None
    label: str
    time: str
    changes: list[TurnChange]
    variables: list[VariableRow]
    state: str
    gone: bool
    note: str | None
    undoable: bool
    why: str | None
    undo: Undo | UndoTo


class UndoList(msgspec.Struct, kw_only=True):
    """The turns of `session` the panel lists, newest first; `empty`: what it says when it
    lists none; `undone`: the prompts already undone, and the line naming them."""

    session: str | None
    turns: list[TurnRow]
    empty: str
    undone: list[int] = []
    undone_text: str = ""

    def listed(self) -> tuple[str | None, list[int]]:
        """What the panel shows, as far as its buttons are concerned: the session and its turns."""
        return self.session, [t.turn for t in self.turns]
