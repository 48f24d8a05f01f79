"""Putting back the cells a turn changed in an open notebook: in the document (through the
bridge, by the caller) or, when the notebook is closed, in its file.

Both ways place cells by one rule, `placed_order` (the page applies the order it gives, it
has no rule of its own): the cells the turn created go, every cell it changed or deleted is
taken out and put back as it was, in the order the cells stood before the turn, each right
after the cell that preceded it then (at its old index when that cell is gone). With no other edit since the turn, that is the
document as it was before the turn, cell for cell.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from larik_jupyter.bridge_protocol import Expect, Restore
from larik_jupyter.checkpoint.durable import DIR_FLAGS, Barrier
from larik_jupyter.checkpoint.manifest import CellRecord, NotebookRecord
from larik_jupyter.checkpoint.restore import replace_bytes
from larik_jupyter.checkpoint.safepath import DirWalk, PathRefused, confine, open_entry
from larik_jupyter.nbjson.cells import file_form, lines_form, source_text
from larik_jupyter.nbjson.read import NotebookUnreadable, cell_list, parse_notebook, read_open
from larik_jupyter.nbjson.splice import splice
from larik_jupyter.nbjson.validate import new_problems, problems


class CellsNotRestored(Exception):
    """A notebook's cells could not be put back; carries the one-line reason."""


CellRestorer = Callable[[Path, NotebookRecord], str]
"""Puts one notebook's cells back (the project root, its record) and says where: "the open
notebook" or "the file"; raises `CellsNotRestored`."""


FileHolder = Callable[[Path, str], "str | None"]
"""Why the file at a path (the project root, the path below it) must not be written now, as
the rest of a sentence after the path (a real-time collaboration room's server owns it), or
None; undo leaves such a file as it is and says so."""


def held_by_nobody(root: Path, path: str) -> str | None:
    """No file is held (undo outside a Jupyter server: nothing owns a file but its disk)."""
    return None


CellSources = Callable[[Path, NotebookRecord], "dict[str, str] | None"]
"""The source of each cell of a notebook now, by id (the project root, its record); None when
it cannot be read, so undo cannot tell whether its cells changed since the turn."""


def sources_in_file(root: Path, record: NotebookRecord) -> dict[str, str] | None:
    """The sources of the cells of `record`'s notebook file, read without following symlinks."""
    try:
        parts = confine(root, record.path)
        root_fd = os.open(root, DIR_FLAGS)
    except (PathRefused, OSError):
        return None
    try:
        with DirWalk(root_fd) as walk:
            fd = open_entry(walk, parts)
            if fd is None:
                return {}
            with os.fdopen(fd, "rb") as f:
                cells = cell_list(parse_notebook(read_open(f, record.path), record.path).data)
        if cells is None:
            return None
        return {str(c["id"]): source_text(c) for c in cells if isinstance(c, dict) and "id" in c}
    except (PathRefused, OSError, NotebookUnreadable):
        return None
    finally:
        os.close(root_fd)


def restore_op(record: NotebookRecord, order: list[str], order_hash: str | None) -> Restore:
    """The bridge's `restore` request for `record`, on an open notebook whose cells stand in
    `order` (fingerprinted `order_hash`): the page only applies the order `placed_order` gives."""
    return Restore(
        delete=[c.id for c in record.cells if not c.existed],
        cells=[c.cell or {} for c in _changed(record)],
        order=placed_order(order, record),
        expect=Expect(order=order_hash) if order_hash else None,
    )


def placed_order(ids: list[str], record: NotebookRecord) -> list[str]:
    """The cell ids `ids` (in document order) with `record`'s cells as before the turn: the
    cells it created and changed taken out, each changed cell (in the order they stood then)
    put back right after the cell that preceded it then, else at its old index. The one
    placement rule of undo, for the open notebook and the file alike."""
    touched = {c.id for c in record.cells}
    out = [i for i in ids if i not in touched]
    for before in _changed(record):
        if before.previous is None:
            index = 0
        elif before.previous in out:
            index = out.index(before.previous) + 1
        else:
            index = min(before.position or 0, len(out))
        out.insert(index, before.id)
    return out


def placed(cells: list[dict[str, Any]], record: NotebookRecord) -> list[dict[str, Any]]:
    """`cells` (nbformat cells in document order) with `record`'s cells as before the turn."""
    # Cells are named by id, and cells without one (nbformat < 4.5) by a name no id can be.
    names = [c["id"] if isinstance(c.get("id"), str) else f"\0{n}" for n, c in enumerate(cells)]
    by_name = dict(zip(names, cells, strict=True)) | {c.id: copy.deepcopy(c.cell or {}) for c in _changed(record)}
    return [by_name[name] for name in placed_order(names, record)]


def _changed(record: NotebookRecord) -> list[CellRecord]:
    """The cells that existed before the turn, in the order they stood then."""
    return sorted((c for c in record.cells if c.existed and c.cell is not None), key=lambda c: c.position or 0)


def restore_in_file(root: Path, record: NotebookRecord) -> str:
    """Put `record`'s cells back in the notebook's file (the notebook is not open): read
    without following symlinks, changed as `placed` says, refused if that adds a validation
    problem, written so that only the bytes of the cells undo put back change."""
    try:
        parts = confine(root, record.path)
        root_fd = os.open(root, DIR_FLAGS)
    except (PathRefused, OSError) as exc:
        raise CellsNotRestored(f"its cells could not be restored in the file: {exc}") from None
    try:
        with DirWalk(root_fd) as walk:
            fd = open_entry(walk, parts)
            if fd is None:
                raise CellsNotRestored("is neither an open notebook nor on disk, so its cells were not restored")
            with os.fdopen(fd, "rb") as f:
                mode = os.fstat(f.fileno()).st_mode
                raw = read_open(f, record.path)
            out = restored_bytes(record, raw)
            if out != raw:
                with Barrier() as barrier:
                    replace_bytes(walk, parts, out, mode, barrier)
                    barrier.commit()
    except PathRefused as exc:
        raise CellsNotRestored(f"{exc}, so its cells were not restored in the file") from None
    except NotebookUnreadable as exc:
        raise CellsNotRestored(f"its cells could not be restored in the file: it {exc.reason}") from None
    except (OSError, ValueError) as exc:
        raise CellsNotRestored(f"its cells could not be restored in the file ({exc})") from None
    finally:
        os.close(root_fd)
    return "the file"


def restored_bytes(record: NotebookRecord, raw: bytes) -> bytes:
    """The notebook file `raw` with `record`'s cells put back: its own bytes elsewhere."""
    read = parse_notebook(raw, record.path)
    bom, text, data = read.bom, read.text, read.data
    if cell_list(data) is None:
        raise CellsNotRestored("is not a notebook now (no list of cells), so its cells were not restored")
    lines = lines_form(None, data["cells"])
    in_file = record.model_copy(update={"cells": [
        c.model_copy(update={"cell": file_form(c.cell, lines)}) if c.cell else c
        for c in record.cells
    ]})
    new = {**data, "cells": placed(data["cells"], in_file)}
    added = new_problems(problems(data), new, data)
    if added:
        raise CellsNotRestored(
            f"would not be a valid notebook with its cells put back ({added[0]}), so they were not restored"
        )
    return splice(text, data, new, bom).raw
