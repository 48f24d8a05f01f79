"""The fork tree's messages (`tree.py`, `tree.js`): the actions its page sends, and what the
kernel sends back (`actions.py` declares what every widget shares)."""

from __future__ import annotations

from larik_jupyter.frontends.notebook.widgets.actions import Action, PageNote


class Rewind(Action, tag="rewind"):
    """Branch `session` before its prompt `prompt`; with `files`, undo the turns from there on
    (`turns`: those the user confirmed; `force`, `skip_changed`: the answer about files the
    user changed since)."""

    session: str
    prompt: int
    files: bool = False
    turns: list[int] | None = None
    force: bool = False
    skip_changed: bool = False


class PlanRewind(Action, tag="plan_rewind"):
    """Show what rewinding `session` before `prompt` with files would restore."""

    session: str
    prompt: int


class CancelRewind(Action, tag="cancel_rewind"):
    """Drop the rewind awaiting confirmation."""


class ForkAt(Action, tag="fork"):
    """Branch `session` after its prompt `prompt` (None: its end) and continue there."""

    session: str
    prompt: int | None = None


class AsNotebook(Action, tag="notebook"):
    """Write `session` (up to prompt `prompt`, None: all of it) as a notebook and open it."""

    session: str
    prompt: int | None = None


class Compare(Action, tag="compare"):
    """Compare the branches `session` and `other`."""

    session: str
    other: str


class NoCells(Action, tag="no_cells"):
    """Say why "Jump to cells" found no open cell of `session`'s prompt `prompt`."""

    session: str
    prompt: int


class InsertCell(PageNote, tag="insert_cell"):
    """A rewind's prompt as a new `%%larik` cell below the tree."""

    code: str


class OpenFile(PageNote, tag="open_notebook"):
    """The notebook "Open as notebook" wrote, for the page to open."""

    path: str
