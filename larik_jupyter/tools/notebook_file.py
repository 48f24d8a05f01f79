"""A `.ipynb` file read and written the way it was: same nbformat minor, indentation, key order
and trailing newline, so the cells an edit did not touch stay byte-identical in the JSON.

nbformat parses and validates every read and every write; nothing here upgrades a notebook
(one without cell ids, nbformat < 4.5, is addressed as `cell-N` and written without ids).
"""

from __future__ import annotations

import copy
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.file_write import write_file
from larik_jupyter.tools.textfile import MAX_TEXT_BYTES

_INDENT = re.compile(r"\n([ \t]+)\S")
_INDEX_ID = re.compile(r"^cell-(\d+)$")


def _nbformat() -> Any:
    import nbformat

    return nbformat


@dataclass
class NotebookFile:
    """One notebook as its JSON (`data`, key order kept) and how its text was laid out."""

    path: Path
    rel: str
    text: str
    data: dict[str, Any]
    indent: str | None
    sort_keys: bool
    newline: bool
    live: bool = False  # the document open in a browser rather than the file
    # The open document's cell ids in order (the reply may carry only some cells).
    order: list[str] = field(default_factory=list)
    # The browser's fingerprints of each cell read from the open document and of its cell order
    # (`tools/live_cells.py`).
    hashes: dict[str, str] = field(default_factory=dict)
    order_hash: str = ""

    @property
    def cells(self) -> list[dict[str, Any]]:
        cells: list[dict[str, Any]] = self.data["cells"]
        return cells

    @property
    def has_ids(self) -> bool:
        """Whether cells carry nbformat ids (4.5+); otherwise they are `cell-N`."""
        return (self.data.get("nbformat"), self.data.get("nbformat_minor", 0)) >= (4, 5)

    def cell_id(self, index: int) -> str:
        cell = self.cells[index]
        return str(cell["id"]) if self.has_ids and "id" in cell else f"cell-{index}"

    def find(self, cell_id: str) -> int:
        """The index of the cell `cell_id` names (its id, or `cell-N`)."""
        for index in range(len(self.cells)):
            if self.cell_id(index) == cell_id:
                return index
        match = _INDEX_ID.match(cell_id)
        if match and int(match.group(1)) < len(self.cells):
            return int(match.group(1))
        known = ", ".join(self.cell_id(i) for i in range(min(len(self.cells), 8)))
        more = ", …" if len(self.cells) > 8 else ""
        raise ToolError(
            f"{self.rel} has no cell {cell_id!r} (cells: {known}{more}); "
            "call notebook_read to see the cell ids."
        )

    def dumps(self, data: dict[str, Any]) -> str:
        """`data` laid out like the file was."""
        indent: str | int | None = self.indent
        text = json.dumps(data, indent=indent, sort_keys=self.sort_keys, ensure_ascii=False)
        return text + ("\n" if self.newline else "")


def layout(text: str, data: dict[str, Any]) -> tuple[str | None, bool]:
    """The indentation and key order that reproduce `text`; nbformat's own when none does."""
    found = _INDENT.search(text)
    indent = found.group(1) if found else None
    body = text.rstrip("\n")
    for sort_keys in (True, False):
        if json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False) == body:
            return indent, sort_keys
    # Hand-made layout: write what nbformat writes; unchanged cells may then change spacing.
    return indent or " ", True


def load_notebook(env: Env, raw_path: str) -> NotebookFile:
    """Read and validate the notebook at `raw_path`; refuse anything that is not one."""
    path = env.resolve(raw_path)
    rel = env.rel(path)
    if path.suffix != ".ipynb":
        raise ToolError(f"{rel} is not a notebook (.ipynb); use read or edit for other files.")
    if not path.is_file():
        raise ToolError(f"{rel} does not exist or is not a file; check the path with ls or glob.")
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise ToolError(f"{rel} is larger than 50 MB; too large to load.")
    try:
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ToolError(f"{rel} does not parse as a notebook ({exc}); it was left unchanged.") from exc
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{rel} is not a notebook: its JSON has no list of cells.")
    validate_notebook(rel, data, "is not a valid notebook")
    indent, sort_keys = layout(text, data)
    return NotebookFile(path, rel, text, data, indent, sort_keys, text.endswith("\n"))


def validate_notebook(rel: str, data: dict[str, Any], what: str) -> None:
    """Refuse (ToolError) `data` that nbformat does not validate; `what` says what it is."""
    nbformat = _nbformat()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nbformat.validate(copy.deepcopy(data))
    except nbformat.ValidationError as exc:
        reason = str(exc).strip().splitlines()[0]
        raise ToolError(f"{rel} {what} ({reason}); the file was left unchanged.") from exc


def save_notebook(env: Env, nb: NotebookFile, data: dict[str, Any]) -> str:
    """Validate `data`, let the checkpoint capture the file, write it; returns the new text."""
    validate_notebook(nb.rel, data, "would not be a valid notebook after this edit")
    text = nb.dumps(data)
    env.capture_before_write(nb.path)
    write_file(env.root, nb.path, text.encode("utf-8"))
    return text


def source_text(cell: dict[str, Any]) -> str:
    """A cell's source as one string (the file may hold it as a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def lines_form(cell: dict[str, Any] | None, cells: list[dict[str, Any]]) -> bool:
    """Whether a (new, when `cell` is None) cell's source is written as a list of lines, as
    nbformat does, rather than one string: the cell's own form, else the notebook's."""
    if cell is not None:
        return not isinstance(cell.get("source"), str)
    return not any(isinstance(c.get("source"), str) for c in cells)


def as_source(text: str, lines: bool) -> Any:
    return text.splitlines(keepends=True) if lines else text
