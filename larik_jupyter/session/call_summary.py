"""The words of a tool call's one-line summary, for every view of a session (the turn view,
`/history`, the export, the sidebar, status lines and approvals): a call's input said without
knowing its tool (`input_summary`), text clipped to one line, notebook cells named by position.
Each tool says its own calls with these (`tools/base.py` `Tool.summary`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from larik_jupyter.nbjson.cells import cell_number, named_index
from larik_jupyter.nbjson.read import NotebookUnreadable, cell_list, read_notebook

# The longest summary of a call's input, in characters.
MAX_SUMMARY = 80


def clip(text: str) -> str:
    """`text` on one line, its whitespace runs one space, cut to `MAX_SUMMARY` with `…`."""
    text = " ".join(text.split())
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


CellPosition = Callable[[str | None, str], int | None]
"""The 0-based position of a cell (notebook path as the call gave it, None: the kernel's own
notebook; cell id) in the open notebook, when known."""

def positions_in_files(cwd: Path) -> CellPosition:
    """Where a cell stands in a notebook file under `cwd` (for summaries read from disk: `/history`,
    the sidebar, the export); None for the kernel's own notebook (no path), a path outside `cwd`,
    a file that is not a readable notebook, or a cell it no longer holds. Each file is read once."""
    root = cwd.resolve()
    read: dict[str, dict[str, int]] = {}

    def ids_in(raw_path: str) -> dict[str, int]:
        try:
            path = (root / raw_path).resolve()
            if path.suffix != ".ipynb" or not path.is_relative_to(root):
                return {}
            # A notebook that cannot be read (not a regular file, not JSON) has no positions.
            cells = cell_list(read_notebook(path, raw_path).data)
        except (OSError, ValueError, NotebookUnreadable):
            return {}
        if cells is None:
            return {}
        return {c["id"]: i for i, c in enumerate(cells) if isinstance(c, dict) and isinstance(c.get("id"), str)}

    def position(raw_path: str | None, cell_id: str) -> int | None:
        if not raw_path:
            return None
        if raw_path not in read:
            read[raw_path] = ids_in(raw_path)
        return read[raw_path].get(cell_id)

    return position


def first_known(*positions: CellPosition) -> CellPosition:
    """A cell's position from the first of `positions` that knows it (the open notebook's, then
    the file's)."""

    def position(raw_path: str | None, cell_id: str) -> int | None:
        for find in positions:
            if (found := find(raw_path, cell_id)) is not None:
                return found
        return None

    return position


def first_line(text: str, limit: int = 40) -> str:
    """The first non-empty line of `text`, clipped, with `…` when anything was left out."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else ""
    if len(line) > limit:
        return line[: limit - 1] + "…"
    return line + ("…" if len(lines) > 1 else "")


# An id longer than this is shortened where no position names its cell (JupyterLab's are UUIDs).
_SHORT_ID = 20


def cell_label(cell_id: str, path: str | None = None, position: CellPosition | None = None) -> str:
    """`cell 3` (1-based, as people count) when the cell's position is known or its id is a
    `cell-N` index; else `cell summary-table` (its id, whole when short, else its first 8
    characters and `…`, never a piece that reads as a whole)."""
    found = position(path, cell_id) if position is not None else None
    if found is None:
        found = named_index(cell_id)
    if found is not None:
        return cell_number(found)
    return f"cell {short_cell_id(cell_id)}"


def short_cell_id(cell_id: str) -> str:
    """A cell's id as people read it: whole when short, else (JupyterLab's UUIDs) its first 8
    characters and `…`."""
    return cell_id if len(cell_id) <= _SHORT_ID else cell_id[:8] + "…"


def input_summary(name: str, tool_input: Mapping[str, Any]) -> str:
    """A call said from its input alone: `bash: pytest -q`, `edit: src/app.py` (its command,
    path, pattern, code, description or prompt), else its input as JSON, clipped."""
    for key in ("command", "path", "pattern", "code", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {clip(value)}"
    if not tool_input:
        return name
    return f"{name}: {clip(json.dumps(dict(tool_input), ensure_ascii=False))}"
