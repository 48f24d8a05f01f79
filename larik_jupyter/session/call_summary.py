"""One-line summaries of tool calls, in words, for every view of a session: the turn view, `/history`,
the export, the sidebar, status lines and approvals; notebook cells named by position."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from larik_jupyter.llm.messages import Message
from larik_jupyter.nbjson.cells import cell_number, named_index
from larik_jupyter.nbjson.read import NotebookUnreadable, cell_list, read_notebook
from larik_jupyter.session.plan import plan_of, progress
from larik_jupyter.session.tool_names import ANSWER_TOOL, SKILL_TOOL, TODO_WRITE

_MAX = 80


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX else text[: _MAX - 1] + "…"


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


def cell_ids_hint(name: str, tool_input: dict[str, Any]) -> str | None:
    """The ids of the cells a notebook call names, for its summary's hover (`cell id calc`):
    summaries name cells by position, which moves; the id does not."""
    if not name.startswith("notebook_"):
        return None
    ids = tool_input.get("cell_ids")
    named = [str(i) for i in ids] if isinstance(ids, list) else []
    if isinstance(cell_id := tool_input.get("cell_id"), str) and cell_id:
        named = [cell_id]
    if not named:
        return None
    return f"cell id{'s' if len(named) > 1 else ''} {', '.join(named)}"


# notebook_read's default number of cells (tools/notebook/cells.py DEFAULT_LIMIT).
_READ_LIMIT = 50


def _first_line(text: str, limit: int = 40) -> str:
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


def _notebook_call(name: str, tool_input: dict[str, Any], position: CellPosition | None) -> str | None:
    """`notebook_edit: replace cell 3 ("df.groupby…")`, `notebook_run: run cell 5`,
    `notebook_read: cells 1–20 of analysis.ipynb`; None for another tool."""
    path = tool_input.get("path") if isinstance(tool_input.get("path"), str) and tool_input.get("path") else None
    of = f" of {path.rsplit('/', 1)[-1]}" if path else ""
    cell_id = tool_input.get("cell_id")
    cell = cell_label(cell_id, path, position) if isinstance(cell_id, str) and cell_id else None
    if name == "notebook_read":
        ids = tool_input.get("cell_ids")
        if isinstance(ids, list) and ids:
            named = [cell_label(str(i), path, position).removeprefix("cell ") for i in ids[:6]]
            return f"{name}: cell{'s' if len(ids) > 1 else ''} {', '.join(named)}{'…' if len(ids) > 6 else ''}{of}"
        start = _int(tool_input.get("start"), 0)
        limit = _int(tool_input.get("limit"), _READ_LIMIT)
        return f"{name}: cells {start + 1}–{start + limit}{of or ' of this notebook'}"
    if name == "notebook_run":
        return f"{name}: run {cell or 'a cell'}{of}"
    if name != "notebook_edit":
        return None
    mode = tool_input.get("edit_mode") or "replace"
    source = tool_input.get("new_source")
    quoted = f' ("{_first_line(source)}")' if isinstance(source, str) and source.strip() else ""
    if mode == "insert":
        where = f"after {cell}" if cell else "first"
        return f"{name}: insert a cell {where}{of}{quoted}"
    if mode == "delete":
        return f"{name}: delete {cell or 'a cell'}{of}"
    new = tool_input.get("new_string")
    if not quoted and isinstance(new, str):
        return f'{name}: edit {cell or "a cell"}{of} ("{_first_line(new)}")'
    return f"{name}: replace {cell or 'a cell'}{of}{quoted}"


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def summarize_call(name: str, tool_input: dict[str, Any], position: CellPosition | None = None) -> str:
    """`bash: pytest -q`, `edit: src/app.py`, `python: df.describe()…` (its first line),
    `todo_write: 1/3 done`, `answer: hand back summary as the turn's value`, `notebook_edit: replace cell 3 ("df.groupby…")`; `position`
    numbers notebook cells as they stand in the open notebook."""
    if name == TODO_WRITE and (todos := plan_of(tool_input)) is not None:
        return f"{name}: {progress(todos)}"
    if (notebook := _notebook_call(name, tool_input, position)) is not None:
        return notebook
    if name == "python" and isinstance(code := tool_input.get("code"), str) and code.strip():
        return f"{name}: {_first_line(code, _MAX)}"
    if name == SKILL_TOOL and isinstance(skill := tool_input.get("name"), str):
        return f"{name}: {_clip(skill)}"
    if name == ANSWER_TOOL and isinstance(handed := tool_input.get("name"), str) and handed:
        return f"{name}: hand back {_clip(handed)} as the turn's value"
    for key in ("command", "path", "pattern", "code", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return f"{name}: {_clip(value)}"
    if not tool_input:
        return name
    return f"{name}: {_clip(json.dumps(tool_input, ensure_ascii=False))}"


def numbered_calls(messages: Iterable[Message], position: CellPosition | None = None) -> dict[str, str]:
    """Each tool call of `messages` by its id, as people name it: `call 3 (`python: df.head()`)`,
    numbered from 1 in the session's order (what `/egress --show N` takes)."""
    calls = [use for message in messages for use in message.tool_uses()]
    return {use.id: f"call {n} (`{summarize_call(use.name, use.input, position)}`)" for n, use in enumerate(calls, 1)}
