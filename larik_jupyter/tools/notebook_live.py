"""Notebooks open in a browser: read from and edited in the live document, through `env.live`.

An open notebook's file lags behind its editor, and writing it behind the editor makes the next
save overwrite the edit (or raise a "file changed" dialog). So while a browser shows a notebook,
the notebook tools read the document the user sees and send each edit as one request that the
browser applies to its model and confirms; only closed notebooks are read and written on disk.
An edit of cells already read is worked out from the kernel's copy of them and lands only if
they are unchanged in the browser (`tools/live_cells.py`).
"""

from __future__ import annotations

from collections.abc import Callable
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
    Replace,
    Request,
)
from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellsNotRestored,
    CellSources,
    restore_in_file,
    restore_op,
    sources_in_file,
)
from larik_jupyter.checkpoint.manifest import NotebookRecord
from larik_jupyter.nbjson.cells import source_text
from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.live_cells import CachedCells, Refused
from larik_jupyter.tools.notebook_file import NotebookFile


def kernel_notebook(env: Env) -> Path | None:
    """The notebook this kernel belongs to: what the bridge says, else what the front end set."""
    from_bridge = env.live.notebook_path if env.live is not None else None
    return from_bridge or env.notebook_path


def cell_positions(env: Env) -> Callable[[str | None, str], int | None]:
    """Where a cell stands in an open document, from the kernel's copy (for the one-line
    summaries of notebook calls); None when no browser shows the notebook or it is not held."""

    def position(raw_path: str | None, cell_id: str) -> int | None:
        if env.live is None:
            return None
        try:
            path = env.resolve(raw_path) if raw_path else kernel_notebook(env)
        except ToolError:
            return None
        return env.live.cells.position(path, cell_id) if path is not None else None

    return position


def live_notebook(
    env: Env, raw_path: str, cell_ids: list[str] | None = None, *, fresh: bool = False
) -> NotebookFile | None:
    """The open document of the notebook at `raw_path`, or None when no browser shows it;
    with `cell_ids`, only those of its cells (an edit of one cell in a large notebook then
    costs one cell's transfer, not the whole document's), from the kernel's copy when it holds
    them all, unless `fresh`: an edit sent with their fingerprints lands only on that state."""
    if env.live is None:
        return None
    path = env.resolve(raw_path)
    if path.suffix != ".ipynb":
        return None
    held = env.live.cached(path, cell_ids) if cell_ids is not None and not fresh else None
    if held is None:
        reply = env.live.request(path, Get(cell_ids=cell_ids))
        if reply is None:
            return None
        held = _read(env, path, reply)
    return NotebookFile(
        path, env.rel(path), "", {**held.head, "cells": held.cells}, live=True,
        order=held.order, hashes=held.hashes, order_hash=held.order_hash,
    )


def _read(env: Env, path: Path, reply: dict[str, Any]) -> CachedCells:
    """What a `get` reply holds (a page from before fingerprints sends none)."""
    data = reply.get("notebook")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{env.rel(path)}: the browser sent no list of cells; read it again.")
    order = reply.get("order")
    if not isinstance(order, list):
        order = [str(c.get("id")) for c in data["cells"] if isinstance(c, dict)]
    hashes = reply.get("hashes")
    return CachedCells(
        {k: v for k, v in data.items() if k != "cells"}, data["cells"], [str(i) for i in order],
        {str(k): str(v) for k, v in hashes.items()} if isinstance(hashes, dict) else {},
        str(reply.get("order_hash") or ""),
    )


def provenance(env: Env) -> dict[str, Any] | None:
    """The `larik` metadata of a cell the running call creates or changes (None outside a turn)."""
    if not env.session_id:
        return None
    mark: dict[str, Any] = {"session": env.session_id, "prompt": env.prompt}
    if env.tool_use_id:
        mark["tool_use_id"] = env.tool_use_id
    return mark


def with_provenance(cell: dict[str, Any], env: Env) -> dict[str, Any]:
    """`cell` carrying the running call's `larik` metadata (unchanged outside a turn)."""
    mark = provenance(env)
    if mark is None:
        return cell
    marked = dict(cell)
    marked["metadata"] = {**cell.get("metadata", {}), "larik": mark}
    return marked


def apply_live(env: Env, nb: NotebookFile, op: CellChange) -> list[str]:
    """Send one edit to the open document, the cells it changes checkpointed first (their state
    before the turn, for undo); the ids of the cells it produced. Raises `CellChanged` when the
    cell changed in the browser since `nb` was read (the kernel's copy then holds it as it is)."""
    assert env.live is not None
    captured = capture_live(env, nb, op)
    try:
        reply = env.live.request(nb.path, _expecting(nb, op))
        if reply is None:
            raise Refused(
                f"Not landed: {nb.rel} was closed in the browser before the edit reached it; "
                "read it again (it is now edited on disk) and retry."
            )
    except Refused as exc:
        # Nothing landed, and the records may come from an out-of-date copy: undo must not put
        # them back over the cells, and the retry records the cells as they are now.
        env.forget_cells_not_changed(nb.path, captured, exc)
        raise
    if env.note_cells is not None:
        env.note_cells(nb.path, _left(nb, op))
    return [str(i) for i in reply.get("cell_ids", [])]


def capture_live(env: Env, nb: NotebookFile, op: CellChange) -> list[str]:
    """Checkpoint the cell `op` is about to change (or create) in the open document; the ids
    recorded now."""
    if isinstance(op, Insert):
        return env.capture_cells_before_change(nb.path, nb.order, [], [str(op.cell.get("id", ""))])
    cell = _cell(nb, op.cell_id)
    return env.capture_cells_before_change(nb.path, nb.order, [cell] if cell is not None else [], [])


def _expecting(nb: NotebookFile, op: Request) -> Request:
    """`op` carrying what the edited cell and the cell order were when `nb` was read, for the
    browser to check: what was checkpointed is then what the edit changes."""
    if not isinstance(op, Insert | Replace | Patch | Delete):
        return op  # outputs and metadata of a cell the turn is running: set as they are
    cell_hash = None if isinstance(op, Insert) else nb.hashes.get(op.cell_id)
    if not nb.order_hash and cell_hash is None:
        return op
    return msgspec.structs.replace(op, expect=Expect(hash=cell_hash, order=nb.order_hash or None))


def _cell(nb: NotebookFile, cell_id: str) -> dict[str, Any] | None:
    return next((c for c in nb.cells if c.get("id") == cell_id), None)


def _left(nb: NotebookFile, op: Request) -> dict[str, str | None]:
    """The source `op` leaves in its cell (None: it deleted it), for the undo panel's diff."""
    if isinstance(op, Insert):
        return {str(op.cell.get("id", "")): source_text(op.cell)}
    cell_id = str(getattr(op, "cell_id", ""))
    if isinstance(op, Delete):
        return {cell_id: None}
    if isinstance(op, Replace):
        return {cell_id: source_text(op.cell)}
    old = source_text(_cell(nb, cell_id) or {})
    if isinstance(op, Patch):
        return {cell_id: old.replace(op.old_string, op.new_string, 1)}
    return {cell_id: old}


def cell_restorer(env: Env) -> CellRestorer:
    """How undo puts a turn's cells back: in the document when a browser shows the notebook
    (through `env.live`), else in its file."""

    def restore(root: Path, record: NotebookRecord) -> str:
        if env.live is not None:
            try:
                reply = env.live.request(root / record.path, restore_op(record))
            except ToolError as exc:
                raise CellsNotRestored(
                    f"its cells were not restored in the open notebook ({str(exc).removeprefix('Not landed: ')})"
                ) from None
            if reply is not None:
                return "the open notebook"
        return restore_in_file(root, record)

    return restore


def cell_sources(env: Env) -> CellSources:
    """How undo reads a turn's cells as they are now: from the document when a browser shows
    the notebook, else from its file (None when neither can be read)."""

    def sources(root: Path, record: NotebookRecord) -> dict[str, str] | None:
        if env.live is not None:
            try:
                nb = live_notebook(env, str(root / record.path), fresh=True)
            except ToolError:
                return None
            if nb is not None:
                return {str(c.get("id")): source_text(c) for c in nb.cells if "id" in c}
        return sources_in_file(root, record)

    return sources
