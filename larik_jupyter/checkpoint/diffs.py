"""What each saved turn did to its files, as unified diffs: one meaning for the undo panel and
the sidebar's undo list.

A turn's diff runs from the file's snapshot before the turn to the state the turn left: the
snapshot the next saved turn took of the same file, else the file as it is now. So an older
turn shows its own change, not everything that happened to the file since.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from larik_jupyter.checkpoint.manifest import CellRecord
from larik_jupyter.checkpoint.store import CheckpointStore, TurnInfo
from larik_jupyter.errors import LarikError
from larik_jupyter.nbjson.cells import cell_number
from larik_jupyter.session.call_summary import short_cell_id
from larik_jupyter.session.regular import UnreadableFileError, read_regular
from larik_jupyter.textdiff import snapshot_diff, unified_diff

ReadNow = Callable[[str], bytes | None]
"""Reads a project-relative path as it is now (None: absent); raises LarikError to refuse."""


def read_current(root: Path, rel: str) -> bytes | None:
    """`root/rel` as it is now: None when absent; a symlink, FIFO or directory there is
    refused with a LarikError instead of being followed or read."""
    target = root / rel
    if not os.path.lexists(target):
        return None
    try:
        return read_regular(target)
    except UnreadableFileError:
        raise LarikError(f"{rel} is not a regular file now, so its contents are not shown.") from None


@dataclass(frozen=True)
class FileDiff:
    """One file of a turn: its path, whether it existed before the turn, the diff or why not."""

    path: str
    existed: bool
    diff: str
    error: str | None = None


def turn_diffs(store: CheckpointStore, read_now: ReadNow, *, limit: int) -> list[tuple[TurnInfo, list[FileDiff]]]:
    """Every saved turn of `store`, oldest first, with what it did to each of its files."""
    turns = store.turns()
    out = []
    for position, turn in enumerate(turns):
        later = turns[position + 1 :]
        files = []
        for info in turn.files:
            try:
                before = store.original_bytes(turn.turn, info.path)
                successor = next((t for t in later if any(f.path == info.path for f in t.files)), None)
                after = store.original_bytes(successor.turn, info.path) if successor else read_now(info.path)
            except LarikError as exc:
                files.append(FileDiff(info.path, info.existed, "", str(exc)))
                continue
            files.append(FileDiff(info.path, info.existed, snapshot_diff(info.path, before, after, limit=limit)))
        out.append((turn, files))
    return out


@dataclass(frozen=True)
class CellDiff:
    """One notebook cell a turn changed in the open notebook: `change` is `inserted`,
    `edited`, `deleted` or `outputs` (its source unchanged: it was run or its metadata set),
    `diff` the unified diff of its source (`a/PATH#ID`), "" when there is none to show."""

    path: str
    cell_id: str
    change: str
    diff: str


def cell_name(path: str, cell: CellRecord) -> str:
    """A cell a turn changed, as people read it: `analysis.ipynb cell 3 (4f9a2c7d…)` (1-based,
    where it stood before the turn), `analysis.ipynb new cell (4f9a2c7d…)` for one it inserted."""
    at = "new cell" if not cell.existed else (cell_number(cell.position) if cell.position is not None else "cell")
    return f"{path.rsplit('/', 1)[-1]} {at} ({short_cell_id(cell.id)})"


def cell_diffs(turn: TurnInfo, *, limit: int) -> list[CellDiff]:
    """What `turn` did to the cells of open notebooks, from their state before the turn to the
    source it left (as its tools reported it)."""
    out = []
    for notebook in turn.notebooks:
        for cell in notebook.cells:
            before = _source(cell.cell) if cell.existed and cell.cell is not None else None
            after = None if cell.deleted else cell.source_after
            if before is None and after is None:
                continue  # created and deleted within the turn, or nothing known of it
            if not cell.existed:
                change = "inserted"
            elif cell.deleted:
                change = "deleted"
            elif after is None or after == before:
                change = "outputs"
                after = before
            else:
                change = "edited"
            diff = unified_diff(cell_name(notebook.path, cell), before, after)
            if len(diff) > limit:
                diff = diff[:limit] + "\n… (diff cut)\n"
            out.append(CellDiff(notebook.path, cell.id, change, diff))
    return out


def _source(cell: dict[str, object]) -> str:
    source = cell.get("source", "")
    return "".join(str(s) for s in source) if isinstance(source, list) else str(source)
