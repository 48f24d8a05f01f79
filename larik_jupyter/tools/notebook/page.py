"""An open notebook (one a browser shows), read and changed through the bridge
(`env.host.bridge`).

An open notebook's file lags behind its editor, and writing it behind the editor makes the next
save overwrite the edit (or raise a "file changed" dialog). So while a browser shows a notebook,
the notebook tools read the document the user sees and send each change as one request that the
browser applies to its model and confirms; only closed notebooks are read and written on disk
(`tools/notebook/file.py`). A change of cells already read is worked out from the kernel's copy
of them and lands only if they are unchanged in the browser (`tools/page_cells.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from larik_jupyter.bridge_protocol import (
    CellChange,
    Delete,
    Expect,
    Get,
    Insert,
    Patch,
    ReadReply,
    Replace,
    SetOutputs,
)
from larik_jupyter.checkpoint.cells import CellsNotRestored, restore_op
from larik_jupyter.checkpoint.manifest import NotebookRecord
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import source_text
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import OpenNotebooks
from larik_jupyter.tools.notebook.document import (
    Landed,
    NotebookDocument,
    OutputSink,
    kernel_notebook,
)
from larik_jupyter.tools.page_cells import CachedCells, CellChanged, Refused

# How often undo works its restore out again when the cells moved between its read and its
# request (the user typing in the notebook at that moment).
RESTORE_TRIES = 3


def _bridge(env: Env) -> OpenNotebooks | None:
    return env.host.bridge if env.host is not None else None


@dataclass(kw_only=True)
class OpenNotebook(NotebookDocument):
    """The document a browser shows: some or all of its cells as the browser sent them, with
    the browser's fingerprints of each cell (`hashes`) and of the cell order (`order_hash`), so
    a change worked out from them lands only on that state."""

    bridge: OpenNotebooks
    hashes: dict[str, str] = field(default_factory=dict)
    order_hash: str = ""

    @property
    def where(self) -> str:
        return "the open notebook"

    def read_note(self, env: Env) -> str:
        return "\n(Read from the open notebook; the file may lag until the user saves it.)"

    def editing(self, env: Env) -> AbstractContextManager[Any]:
        return self.bridge.cells.editing(self.path)

    def missing(self, exc: ToolError) -> ToolError:
        # In the open notebook a missing cell means the edit cannot land.
        return ToolError(f"Not landed: {exc}")

    def apply(self, env: Env, change: CellChange) -> Landed:
        """Send `change` to the document, the cells it changes checkpointed first (their state
        before the turn, for undo). Raises `CellChanged` when the cell changed in the browser
        since it was read (the kernel's copy then holds it as it is)."""
        captured = self._capture(env, change)
        try:
            reply = self.bridge.request(self.path, self._expecting(change))
            if reply is None:
                raise Refused(
                    f"Not landed: {self.rel} was closed before the edit reached the open notebook; "
                    "read it again (it is now edited on disk) and retry."
                )
        except Refused as exc:
            # Nothing landed, and the records may come from an out-of-date copy: undo must not
            # put them back over the cells, and the retry records the cells as they are now.
            self._forget(env, captured, exc)
            raise
        env.checkpoints.note_cells(self.path, self._left(change))
        ids = reply.cell_ids
        said = (
            f" It landed in the open notebook (cells: {', '.join(ids) or 'none'});"
            " the file changes when the user saves."
        )
        return Landed(ids, said)

    def output_sink(self, env: Env, cell_id: str) -> OutputSink:
        # Before the first streamed output lands: undo puts the cell's old outputs back.
        self._capture(env, SetOutputs(cell_id=cell_id))

        def show(outputs: list[dict[str, Any]]) -> None:
            self.bridge.post(self.path, SetOutputs(cell_id=cell_id, outputs=outputs))

        return show

    def _capture(self, env: Env, change: CellChange) -> list[str]:
        """Checkpoint the cell `change` is about to change (or create); the ids recorded now.
        A refusal raises `ToolError`."""
        if isinstance(change, Insert):
            cells, created = [], [str(change.cell.get("id", ""))]
        else:
            cell = self._cell(change.cell_id)
            cells, created = [cell] if cell is not None else [], []
        try:
            return env.checkpoints.capture_cells(self.path, self.order, cells, created)
        except Exception as exc:
            raise ToolError(
                f"Not landed: could not checkpoint the cells of {self.rel} before the edit "
                f"({exc}); the notebook was left unchanged."
            ) from exc

    def _forget(self, env: Env, cell_ids: list[str], why: ToolError) -> None:
        """Drop the records just taken of `cell_ids`, whose change the browser refused (`why`);
        a failure to is added to `why`'s reason."""
        if not cell_ids:
            return
        try:
            env.checkpoints.forget_cells(self.path, cell_ids)
        except Exception as exc:
            raise ToolError(f"{why} Undo may also put back the cells' earlier state: {exc}") from exc

    def _expecting(self, change: CellChange) -> CellChange:
        """`change` carrying what the changed cell and the cell order were when this was read,
        for the browser to check: what was checkpointed is then what the change changes."""
        if not isinstance(change, Insert | Replace | Patch | Delete):
            return change  # outputs and metadata of a cell the turn is running: set as they are
        cell_hash = None if isinstance(change, Insert) else self.hashes.get(change.cell_id)
        if not self.order_hash and cell_hash is None:
            return change
        return msgspec.structs.replace(change, expect=Expect(hash=cell_hash, order=self.order_hash or None))

    def _cell(self, cell_id: str) -> dict[str, Any] | None:
        return next((c for c in self.cells if c.get("id") == cell_id), None)

    def _left(self, change: CellChange) -> dict[str, str | None]:
        """The source `change` leaves in its cell (None: it deleted it), for the undo panel's diff."""
        if isinstance(change, Insert):
            return {str(change.cell.get("id", "")): source_text(change.cell)}
        if isinstance(change, Delete):
            return {change.cell_id: None}
        if isinstance(change, Replace):
            return {change.cell_id: source_text(change.cell)}
        old = source_text(self._cell(change.cell_id) or {})
        if isinstance(change, Patch):
            return {change.cell_id: old.replace(change.old_string, change.new_string, 1)}
        return {change.cell_id: old}


def open_document(
    env: Env, path: Path, cell_ids: list[str] | None = None, *, fresh: bool = False
) -> OpenNotebook | None:
    """The notebook at `path` as an open notebook, or None when no browser shows it; with
    `cell_ids`, only those of its cells (an edit of one cell in a large notebook then costs one
    cell's transfer, not the whole document's), from the kernel's copy when it holds them all,
    unless `fresh`: a change sent with their fingerprints lands only on that state."""
    bridge = _bridge(env)
    if bridge is None or path.suffix != ".ipynb":
        return None
    held = bridge.cached(path, cell_ids) if cell_ids is not None and not fresh else None
    if held is None:
        reply = bridge.request(path, Get(cell_ids=cell_ids))
        if reply is None:
            return None
        held = _read(reply)
    return OpenNotebook(
        path, env.rel(path), {**held.head, "cells": held.cells}, order=held.order,
        bridge=bridge, hashes=held.hashes, order_hash=held.order_hash,
    )


def _read(reply: ReadReply) -> CachedCells:
    """What a `get` reply holds."""
    notebook = reply.notebook
    return CachedCells(notebook.head(), notebook.cells, reply.order, reply.hashes, reply.order_hash)


def restore_open(env: Env, path: Path, record: NotebookRecord) -> bool:
    """Put `record`'s cells back in the open notebook at `path`, placed by the one rule
    (`checkpoint/cells.py` `placed_order`) on the order the document has now; False when no
    browser shows it. Raises `CellsNotRestored`."""
    bridge = _bridge(env)
    if bridge is None:
        return False
    try:
        for _ in range(RESTORE_TRIES):
            now = bridge.request(path, Get(cell_ids=[]))
            if now is None:
                return False
            try:
                done = bridge.request(path, restore_op(record, now.order, now.order_hash))
            except CellChanged:
                continue  # the cells moved since the read: work it out again
            return done is not None
        raise ToolError("the cells kept moving in the open notebook; try again")
    except ToolError as exc:
        raise CellsNotRestored(
            f"its cells were not restored in the open notebook ({str(exc).removeprefix('Not landed: ')})"
        ) from None


def cell_positions(env: Env) -> Callable[[str | None, str], int | None]:
    """Where a cell stands in an open notebook, from the kernel's copy (for the one-line
    summaries of notebook calls); None when no browser shows the notebook or it is not held."""

    def position(raw_path: str | None, cell_id: str) -> int | None:
        bridge = _bridge(env)
        if bridge is None:
            return None
        try:
            path = env.resolve(raw_path) if raw_path else kernel_notebook(env)
        except ToolError:
            return None
        return bridge.cells.position(path, cell_id) if path is not None else None

    return position
