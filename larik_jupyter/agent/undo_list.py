"""What can be undone in a session, the one list every view renders (the sidebar's "Undoable
turns", the notebook's undo panel, `/undo`, MCP's `undo_list`, `larik-jupyter checkpoints`):
each saved turn with what it changed and whether undo can still put it back, so the views
agree, a kernel restart included.

A turn's kernel variables live only in the memory of the kernel that ran it (its manifest names
that process, `checkpoint.holder`). Once that kernel is gone, a turn that also changed files or
cells is `files only` (undo puts those back), and one that changed only variables is
`not undoable`: undo passes over it and it stays listed as such."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, computed_field

from larik_jupyter.checkpoint.diffs import FileDiff, cell_diffs, cell_name
from larik_jupyter.checkpoint.holder import running, this_process
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.checkpoint.turns import TurnInfo
from larik_jupyter.textdiff import diff_html
from larik_jupyter.tools.kernel import kernel_snapshots

TurnState = Literal["undoable", "files only", "not undoable"]

# What every view says of a turn whose only changes were to variables of a kernel gone since.
WENT_WITH_THE_KERNEL = (
    "not undoable: its changes were all to kernel variables, which went with the kernel that ran "
    "it (it restarted since)"
)


def nothing_left(session_id: str, since: int | None = None) -> str:
    """What an undo that found no turn to undo says (from prompt `since` on, with one)."""
    start = "" if since is None else f" from prompt {since} on"
    return (
        f"Nothing left to undo in session {session_id}{start}: no turn of it has changes to "
        "files, cells or kernel variables that are not undone already."
    )


def variables_held(session_id: str, info: TurnInfo) -> bool:
    """Whether the values of `info`'s variables before the turn still exist: this process holds
    their snapshot, or the kernel that ran the turn is still running (seen from another process,
    such as the server). True for a turn without variables."""
    if not info.variables or kernel_snapshots(session_id).changes(info.turn) is not None:
        return True
    return any(kernel != this_process() and running(kernel) for kernel in info.kernels)


def cell_names(info: TurnInfo) -> dict[tuple[str, str], str]:
    """The name (`cell_name`) of each cell `info` changed, by notebook path and cell id."""
    return {(nb.path, cell.id): cell_name(nb.path, cell) for nb in info.notebooks for cell in nb.cells}


class TurnChange(BaseModel):
    """One file or cell a listed turn changed, as every view shows it: `path` (a cell's
    `PATH#ID`), its name for people (the path, or `analysis.ipynb cell 3 (4f9a2c7d…)`), whether
    it existed before the turn, what the turn did to it (`change`: a file `created` or
    `changed`, a cell `inserted`, `edited`, `deleted` or `outputs`) and its `diff` (for a file
    whose diff cannot be made, `error` in parentheses; `error` says why)."""

    path: str
    name: str
    existed: bool
    change: str
    diff: str
    error: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def diff_html(self) -> str:
        """`diff` as the one diff HTML every front end shows (`textdiff.diff_html`)."""
        return diff_html(self.diff or "(no change)")


@dataclass(frozen=True)
class ListedTurn:
    """One saved turn of the list: what it changed (`info`) and what undo can do with it."""

    info: TurnInfo
    state: TurnState

    @property
    def turn(self) -> int:
        return self.info.turn

    @property
    def prompt(self) -> int | None:
        return self.info.prompt

    @property
    def label(self) -> str:
        return self.info.label

    def changed(self) -> list[str]:
        """Its files, cells and variables, as one list of names."""
        return (
            [f.path for f in self.info.files] + list(cell_names(self.info).values())
            + [f"variable {name}" for name, _ in self.info.variables]
        )

    @property
    def note(self) -> str | None:
        """Why undo cannot put all of it back (None: it can)."""
        if self.state == "not undoable":
            return WENT_WITH_THE_KERNEL
        if self.state == "files only":
            names = ", ".join(name for name, _ in self.info.variables)
            return (f"files only: undo puts back its files and cells; its variables ({names}) went "
                    "with the kernel that ran it (it restarted since)")
        return None

    def changes(self, files: list[FileDiff], *, limit: int) -> list[TurnChange]:
        """What it did to each of its files (`files`, its `checkpoint.diffs.turn_diffs`) and
        cells, diffs cut at `limit` characters."""
        names = cell_names(self.info)
        return [
            TurnChange(path=f.path, name=f.path, existed=f.existed, change="changed" if f.existed else "created",
                       diff=f.diff or f"({f.error})\n", error=f.error)
            for f in files
        ] + [
            TurnChange(path=f"{c.path}#{c.cell_id}", name=names[c.path, c.cell_id], existed=c.change != "inserted",
                       change=c.change, diff=c.diff)
            for c in cell_diffs(self.info, limit=limit)
        ]

    def line(self) -> str:
        """`prompt 3: data.csv, variable df` with the note, when there is one."""
        return f"{self.label}: {', '.join(self.changed())}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class UndoList:
    """A session's saved turns, newest first (`turns`), and the prompts already undone
    (`undone`, 1-based, as the session records them)."""

    session_id: str
    turns: tuple[ListedTurn, ...]
    undone: tuple[int, ...] = ()

    @property
    def next(self) -> ListedTurn | None:
        """The turn `/undo` acts on: the newest that is not `not undoable`."""
        return next((t for t in self.turns if t.state != "not undoable"), None)

    @property
    def passing(self) -> frozenset[int]:
        """The turns undo passes over (`not undoable`)."""
        return frozenset(t.turn for t in self.turns if t.state == "not undoable")

    def nothing_left(self, since: int | None = None) -> str:
        """What an undo that finds no turn says, the same words as every view's empty list."""
        text = nothing_left(self.session_id, since)
        if self.turns:
            which = ", ".join(t.label for t in self.turns if t.state == "not undoable")
            text += f" Not undoable: {which} (their changes were all to kernel variables, which went with the kernel)."
        return text

    def plain(self) -> str:
        """The list as lines (MCP's `undo_list`, the CLI's `checkpoints`)."""
        if not self.turns:
            return self.nothing_left()
        return "\n".join(t.line() for t in self.turns)


def undo_list(store: CheckpointStore, session_path: Path | None = None) -> UndoList:
    """The list of `store`'s session, with the undone prompts its session file at `session_path`
    records (none without one)."""
    from larik_jupyter.session.summary import summary

    listed = []
    for info in reversed(store.turns()):
        held = variables_held(store.session_id, info)
        state: TurnState = "undoable" if held else ("files only" if info.files or info.notebooks else "not undoable")
        listed.append(ListedTurn(info, state))
    undone = tuple(p.number for p in summary(session_path).prompts if p.undone) if session_path is not None else ()
    return UndoList(store.session_id, tuple(listed), undone)
