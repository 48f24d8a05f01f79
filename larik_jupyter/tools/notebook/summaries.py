"""How the notebook tools' calls read in one line (`notebook_edit: replace cell 3 ("df.groupby…")`,
`notebook_run: run cell 5`, `notebook_read: cells 1–20 of analysis.ipynb`): cells named by where
they stand, counted from 1, the notebook by its file name; the ids they name, for the hover."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from larik_jupyter.session.call_summary import CellPosition, cell_label, first_line


def cells_named(args: Mapping[str, Any]) -> str | None:
    """`cell id calc`, `cell ids a, b`: the ids a call's input names; None when it names none."""
    ids = args.get("cell_ids")
    named = [str(i) for i in ids] if isinstance(ids, list) else []
    if isinstance(cell_id := args.get("cell_id"), str) and cell_id:
        named = [cell_id]
    if not named:
        return None
    return f"cell id{'s' if len(named) > 1 else ''} {', '.join(named)}"


def _path(args: Mapping[str, Any]) -> str | None:
    path = args.get("path")
    return path if isinstance(path, str) and path else None


def _of(args: Mapping[str, Any]) -> str:
    """` of analysis.ipynb`, or nothing for the kernel's own notebook."""
    path = _path(args)
    return f" of {path.rsplit('/', 1)[-1]}" if path else ""


def _cell(args: Mapping[str, Any], position: CellPosition | None) -> str | None:
    cell_id = args.get("cell_id")
    return cell_label(cell_id, _path(args), position) if isinstance(cell_id, str) and cell_id else None


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def read_summary(name: str, args: Mapping[str, Any], position: CellPosition | None, limit: int) -> str:
    """`notebook_read: cells 1–20 of a.ipynb`, `notebook_read: cells 2, 5`; `limit`: how many
    cells a read without one takes."""
    ids = args.get("cell_ids")
    if isinstance(ids, list) and ids:
        named = [cell_label(str(i), _path(args), position).removeprefix("cell ") for i in ids[:6]]
        more = "…" if len(ids) > 6 else ""
        return f"{name}: cell{'s' if len(ids) > 1 else ''} {', '.join(named)}{more}{_of(args)}"
    start = max(_count(args.get("start"), 1), 1)
    last = start + _count(args.get("limit"), limit) - 1
    return f"{name}: cells {start}–{last}{_of(args) or ' of this notebook'}"


def run_summary(name: str, args: Mapping[str, Any], position: CellPosition | None) -> str:
    """`notebook_run: run cell 5 of a.ipynb`."""
    return f"{name}: run {_cell(args, position) or 'a cell'}{_of(args)}"


def edit_summary(name: str, args: Mapping[str, Any], position: CellPosition | None) -> str:
    """`notebook_edit: replace cell 3 ("df.groupby…")`, `insert a cell after cell 2`, `delete cell 4`."""
    cell, of = _cell(args, position), _of(args)
    mode = args.get("edit_mode") or "replace"
    source = args.get("new_source")
    quoted = f' ("{first_line(source)}")' if isinstance(source, str) and source.strip() else ""
    if mode == "insert":
        return f"{name}: insert a cell {f'after {cell}' if cell else 'first'}{of}{quoted}"
    if mode == "delete":
        return f"{name}: delete {cell or 'a cell'}{of}"
    new = args.get("new_string")
    if not quoted and isinstance(new, str):
        return f'{name}: edit {cell or "a cell"}{of} ("{first_line(new)}")'
    return f"{name}: replace {cell or 'a cell'}{of}{quoted}"
