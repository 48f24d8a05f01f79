"""The kernel's copy of the open notebooks' cells, as the browser last sent them.

Each cell the browser sends (in a `get` reply, or as what an edit left) comes with its
fingerprint. An edit of a cell held here is worked out from this copy and sent with the
fingerprint and that of the cell order (`expect`); the browser applies it only if both still
hold, and otherwise refuses it as `stale` with the cell and the order as they are now. So an edit
of a cell the agent has read takes one round trip instead of a read and then the edit, and
the turn's checkpoint still records the cell's state before the edit lands: an edit the browser
refuses drops the records it took, so the retry records the cell as the refusal brought it back.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.bridge_protocol import Answer, ReadReply, ShownReply
from larik_jupyter.errors import ToolError


class NotLanded(ToolError):
    """A request the browser did not apply, or did not confirm (no answer in time)."""


class Refused(NotLanded):
    """A request the browser answered and did not apply (a missing cell, a refused change)."""


class CellChanged(Refused):
    """The browser refused an edit because its cell changed since the kernel read it."""


@dataclass
class CachedCells:
    """Some cells of an open notebook from the kernel's copy: what a `get` of them returns."""

    head: dict[str, Any]  # the notebook's metadata, nbformat and nbformat_minor
    cells: list[dict[str, Any]]
    order: list[str]
    hashes: dict[str, str]
    order_hash: str


@dataclass
class _Document:
    head: dict[str, Any] | None = None
    order: list[str] = field(default_factory=list)
    order_hash: str = ""
    cells: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)
    editing: threading.RLock = field(default_factory=threading.RLock)


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


class PageCells:
    """Cells of the documents a browser shows, keyed by the notebook's real path."""

    def __init__(self) -> None:
        self._documents: dict[Path, _Document] = {}
        self._lock = threading.Lock()

    def _document(self, path: Path) -> _Document:
        with self._lock:
            return self._documents.setdefault(_key(path), _Document())

    def editing(self, path: Path) -> threading.RLock:
        """Held while one edit of the notebook at `path` is checkpointed, sent and retried, so
        two edits from one kernel (subagents) cannot interleave between record and landing."""
        return self._document(path).editing

    def absorb(self, path: Path, reply: Answer) -> None:
        """Take in what a reply says of the document: cells with fingerprints, the cell order."""
        if isinstance(reply, ShownReply):
            return
        cells = reply.notebook.cells if isinstance(reply, ReadReply) else reply.cells
        if not cells and reply.order is None:
            return
        document = self._document(path)
        with self._lock:
            if isinstance(reply, ReadReply):
                document.head = reply.notebook.head()
            for cell in cells:
                cell_id = cell.get("id")
                if not isinstance(cell_id, str):
                    continue
                if cell_id in reply.hashes:
                    document.cells[cell_id] = (cell, reply.hashes[cell_id])
                else:  # no fingerprint: nothing of the cell can be checked
                    document.cells.pop(cell_id, None)
            if reply.order is not None:
                document.order = list(reply.order)
                document.order_hash = reply.order_hash or ""
                kept = set(reply.order)
                document.cells = {i: c for i, c in document.cells.items() if i in kept}

    def forget(self, path: Path) -> None:
        """Drop the copy of a document (its page reloaded, closed or renamed)."""
        with self._lock:
            document = self._documents.get(_key(path))
            if document is not None:
                document.head, document.order, document.order_hash, document.cells = None, [], "", {}

    def position(self, path: Path, cell_id: str) -> int | None:
        """Where cell `cell_id` stands (0-based) in the copy of the document, when held."""
        with self._lock:
            document = self._documents.get(_key(path))
            order = document.order if document is not None else []
        return order.index(cell_id) if cell_id in order else None

    def cached(self, path: Path, cell_ids: list[str]) -> CachedCells | None:
        """Those cells from the copy, or None when any of them (or the order) is not held."""
        with self._lock:
            document = self._documents.get(_key(path))
            if document is None or document.head is None or not document.order_hash:
                return None
            if any(i not in document.cells for i in cell_ids):
                return None
            chosen = [document.cells[i] for i in dict.fromkeys(cell_ids)]
            return CachedCells(
                dict(document.head),
                [cell for cell, _ in chosen],
                list(document.order),
                {str(cell["id"]): digest for cell, digest in chosen},
                document.order_hash,
            )
