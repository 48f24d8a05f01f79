"""A `.ipynb` file read as it is and written back exactly: an edit changes only the bytes of
the cells it touched (`nbjson.splice`), whatever the file's layout (indent, key order, line
endings, final newline, byte-order mark, one line), and never upgrades the notebook (one without
cell ids, nbformat < 4.5, is addressed as `cell-N` and written without ids).

A notebook that does not validate is read all the same, its problems named (as JupyterLab opens
it with a warning); an edit of it is refused only if it adds a problem.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.nbjson.layout import decode
from larik_jupyter.nbjson.splice import Spliced, splice
from larik_jupyter.nbjson.validate import Problem, new_problems, problems
from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.file_write import write_file
from larik_jupyter.tools.textfile import MAX_TEXT_BYTES

_INDEX_ID = re.compile(r"^cell-(\d+)$")
# The newest nbformat major version nbformat reads (its `current_nbformat`, without importing it).
CURRENT_NBFORMAT = 4
REWRITTEN_NOTE = (
    "The file's layout could not be kept around this change, so the whole notebook was written "
    "again in its layout; a diff of the file may show lines outside this cell changed."
)


@dataclass
class NotebookFile:
    """One notebook: its JSON (`data`, key order kept) and, read from a file, its text."""

    path: Path
    rel: str
    text: str  # as read, without its byte-order mark
    data: dict[str, Any]
    bom: str = ""
    # What nbformat finds wrong with the file as read (empty: it validates).
    problems: list[Problem] = field(default_factory=list)
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
        major, minor = self.data.get("nbformat"), self.data.get("nbformat_minor", 0)
        return isinstance(major, int) and isinstance(minor, int) and (major, minor) >= (4, 5)

    def cell_id(self, index: int) -> str:
        cell = self.cells[index]
        return str(cell["id"]) if self.has_ids and isinstance(cell, dict) and "id" in cell else f"cell-{index}"

    def find(self, cell_id: str) -> int:
        """The index of the cell `cell_id` names (its id, or `cell-N`); an id two cells share
        is refused, since either could be meant."""
        found = [index for index in range(len(self.cells)) if self.cell_id(index) == cell_id]
        if len(found) > 1:
            raise ToolError(duplicate_id(self.rel, cell_id, found))
        if found:
            return found[0]
        match = _INDEX_ID.match(cell_id)
        if match and int(match.group(1)) < len(self.cells):
            return int(match.group(1))
        known = ", ".join(self.cell_id(i) for i in range(min(len(self.cells), 8)))
        more = ", …" if len(self.cells) > 8 else ""
        raise ToolError(
            f"{self.rel} has no cell {cell_id!r} (cells: {known}{more}); "
            "call notebook_read to see the cell ids."
        )


def duplicate_id(rel: str, cell_id: str, indexes: list[int]) -> str:
    """The refusal of an edit by an id that several cells of `rel` carry."""
    where = ", ".join(str(i) for i in indexes[:-1]) + f" and {indexes[-1]}"
    addresses = ", ".join(f"cell-{i}" for i in indexes[:-1]) + f" or cell-{indexes[-1]}"
    return (
        f"{rel} has {len(indexes)} cells with the id {cell_id!r} (at positions {where}), so it "
        f"does not say which one is meant; address the cell as {addresses} instead."
    )


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
        bom, text = decode(path.read_bytes())
        data = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ToolError(f"{rel} does not parse as a notebook ({exc}); it was left unchanged.") from exc
    except RecursionError:
        raise ToolError(
            f"{rel} nests its JSON too deeply to parse (RecursionError); it is not a notebook "
            "this tool can read, and it was left unchanged."
        ) from None
    refuse_old_format(rel, data)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{rel} is not a notebook: its JSON has no list of cells.")
    check_shape(rel, data)
    return NotebookFile(path, rel, text, data, bom, problems(data))


def check_shape(rel: str, data: dict[str, Any]) -> None:
    """Refuse (ToolError) what nbformat's validator fails on with its own errors rather than a
    validation error: a version that is not a whole number or newer than it reads, and cells
    that are not objects or have no string `cell_type`."""
    for key in ("nbformat", "nbformat_minor"):
        value = data.get(key)
        if (value is not None or key == "nbformat") and (not isinstance(value, int) or isinstance(value, bool)):
            shown = _shown(value) if key in data else "missing"
            raise ToolError(
                f"{rel}: its {key} is {shown}, not a whole number, so it is not a notebook this "
                "tool can read; it was left unchanged."
            )
    version = data["nbformat"]
    if version > CURRENT_NBFORMAT:
        raise ToolError(
            f"{rel} uses nbformat {version}, which this nbformat cannot read (nbformat "
            f"{importlib.metadata.version('nbformat')} reads up to nbformat {CURRENT_NBFORMAT}); "
            "it was left unchanged."
        )
    for index, cell in enumerate(data["cells"]):
        if not isinstance(cell, dict):
            problem = f"cell {index} is {_json_kind(cell)}, not a cell object"
        elif not isinstance(cell.get("cell_type"), str):
            problem = f"the cell_type of cell {index} is {_shown(cell.get('cell_type'))}, not a name"
        else:
            continue
        raise ToolError(f"{rel} is not a valid notebook: {problem}; it was left unchanged.")


def _json_kind(value: object) -> str:
    """`a number`, `a string`, … for a JSON value."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _shown(value: object) -> str:
    """A short JSON value as written (`"4"`, `4.0`), anything longer by its kind."""
    text = json.dumps(value)
    return text if len(text) <= 20 else _json_kind(value)


def refuse_old_format(rel: str, data: Any) -> None:
    """Refuse an nbformat 1-3 notebook (cells inside worksheets) with how to convert it."""
    if not isinstance(data, dict) or data.get("nbformat") not in (1, 2, 3):
        return
    raise ToolError(
        f"{rel} is an nbformat {data['nbformat']} notebook, an old format these tools do not "
        "read; convert it to nbformat 4 by opening and saving it in Jupyter, or with "
        f"`jupyter nbconvert --to notebook --inplace {rel}`, then try again."
    )


def problems_note(nb: NotebookFile) -> str:
    """What a read says of a notebook that does not validate ("" when it does)."""
    if not nb.problems:
        return ""
    shown = "; ".join(str(p) for p in nb.problems[:3])
    more = f" (and {len(nb.problems) - 3} more)" if len(nb.problems) > 3 else ""
    return (
        f"{nb.rel} does not validate as nbformat {nb.data.get('nbformat')}.{nb.data.get('nbformat_minor')}: "
        f"{shown}{more}. JupyterLab opens it with a warning; edits are allowed when they add no problem."
    )


def checked(nb: NotebookFile, data: dict[str, Any]) -> None:
    """Refuse (ToolError) `data` when it has a validation problem the file did not have."""
    added = new_problems(nb.problems, data, nb.data)
    if added:
        was = " (a problem the file did not have)" if nb.problems else ""
        raise ToolError(
            f"{nb.rel} would not be a valid notebook after this edit ({added[0]}{was}); "
            "the file was left unchanged."
        )


def notebook_bytes(nb: NotebookFile, data: dict[str, Any]) -> Spliced:
    """The file's bytes holding `data`: its own bytes outside what changed."""
    return splice(nb.text, nb.data, data, nb.bom)


def save_notebook(env: Env, nb: NotebookFile, data: dict[str, Any]) -> Spliced:
    """Check `data`, let the checkpoint capture the file, write it; returns what was written."""
    checked(nb, data)
    spliced = notebook_bytes(nb, data)
    env.capture_before_write(nb.path)
    write_file(env.root, nb.path, spliced.raw)
    return spliced
