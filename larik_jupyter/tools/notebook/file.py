"""A `.ipynb` file read as it is and written back exactly: an edit changes only the bytes of
the cells it touched (`nbjson.splice`), whatever the file's layout (indent, key order, line
endings, final newline, byte-order mark, one line), and never upgrades the notebook (one without
cell ids, nbformat < 4.5, is addressed as `cell-N` and written without ids).

A notebook that does not validate is read all the same, its problems named (as JupyterLab opens
it with a warning); an edit of it is refused only if it adds a problem.
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from larik_jupyter.bridge_protocol import CellChange, Delete, Insert, Patch, Replace, SetOutputs
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import cell_number, index_name, source_text
from larik_jupyter.nbjson.layout import decode
from larik_jupyter.nbjson.read import NotebookUnreadable, read_bytes, read_notebook
from larik_jupyter.nbjson.splice import Spliced, splice
from larik_jupyter.nbjson.validate import new_problems, problems
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files import apply_edit, write_file
from larik_jupyter.tools.notebook.document import (
    Landed,
    NotebookDocument,
    changed_cell,
    is_kernel_notebook,
)
from larik_jupyter.tools.notebook.rooms import refusal, room_backend

# The newest nbformat major version nbformat reads (its `current_nbformat`, without importing it).
CURRENT_NBFORMAT = 4
REWRITTEN_NOTE = (
    "The file's layout could not be kept around this change, so the whole notebook was written "
    "again in its layout; a diff of the file may show lines outside this cell changed."
)


@dataclass(kw_only=True)
class NotebookFile(NotebookDocument):
    """A notebook no browser shows: its file, read as it is (`text`, without its byte-order
    mark `bom`) and written back exactly."""

    text: str
    bom: str = ""

    @property
    def where(self) -> str:
        return self.rel

    def read_note(self, env: Env) -> str:
        if is_kernel_notebook(env, self.path):
            return "\n(The file on disk may lag behind the open editor until the user saves it.)"
        return ""

    def apply(self, env: Env, change: CellChange) -> Landed:
        """`change` made to the file as it is now (read again if it changed since this read),
        checked, checkpointed and written."""
        nb = self if self._unchanged() else load_notebook(env, self.path)
        data, ids = _changed(nb, change)
        written = save_notebook(env, nb, data)
        return Landed(
            ids, rewritten=written.rewritten, own_file=is_kernel_notebook(env, nb.path)
        )

    def _unchanged(self) -> bool:
        try:
            return decode(read_bytes(self.path, self.rel)) == (self.bom, self.text)
        except (NotebookUnreadable, UnicodeDecodeError):
            return False


def _changed(nb: NotebookFile, change: CellChange) -> tuple[dict[str, Any], list[str]]:
    """The notebook's JSON with `change` made, and the ids of the cells it left."""
    data = copy.copy(nb.data)
    cells = data["cells"] = list(nb.cells)
    if isinstance(change, Insert):
        index = nb.find(change.after) + 1 if change.after else 0
        cells.insert(index, change.cell)
        return data, [str(change.cell.get("id", index_name(index)))]
    index = nb.find(change.cell_id)
    if isinstance(change, Delete):
        del cells[index]
        return data, []
    cell = cells[index]
    if isinstance(change, Replace):
        cells[index] = change.cell
    elif isinstance(change, Patch):
        where = f"{nb.rel}#{change.cell_id}"
        new, _ = apply_edit(source_text(cell), change.old_string, change.new_string, False, where)
        cells[index] = changed_cell(cell, new, None)
    else:
        cells[index] = cell = dict(cell)
        cell["outputs"] = change.outputs
        if change.execution_count is not msgspec.UNSET:
            cell["execution_count"] = change.execution_count
    if isinstance(change, Patch | SetOutputs) and change.metadata not in (None, cell.get("metadata", {})):
        cells[index] = {**cells[index], "metadata": change.metadata}
    return data, [change.cell_id]


def load_notebook(env: Env, path: Path) -> NotebookFile:
    """Read and validate the notebook at `path` (resolved, `env.resolve`); refuse anything that
    is not one."""
    rel = env.rel(path)
    if path.suffix != ".ipynb":
        raise ToolError(f"{rel} is not a notebook (.ipynb); use read or edit for other files.")
    if not path.exists():
        raise ToolError(f"{rel} does not exist; check the path with ls or glob.")
    try:
        read = read_notebook(path, rel)
    except NotebookUnreadable as exc:
        # The parser's own error, if any, stays the cause: the debug trace keeps its traceback.
        raise ToolError(f"{exc}; it was left unchanged.") from exc.__cause__
    bom, text, data = read.bom, read.text, read.data
    refuse_old_format(rel, data)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{rel} is not a notebook: its JSON has no list of cells.")
    check_shape(rel, data)
    return NotebookFile(path, rel, data, problems(data), text=text, bom=bom)


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
            problem = f"{cell_number(index)} is {_json_kind(cell)}, not a cell object"
        elif not isinstance(cell.get("cell_type"), str):
            problem = f"the cell_type of {cell_number(index)} is {_shown(cell.get('cell_type'))}, not a name"
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


def problems_note(nb: NotebookDocument) -> str:
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
    """Check `data`, let the checkpoint capture the file, write it; returns what was written.
    Refused while a real-time collaboration room holds the notebook (its server owns it)."""
    checked(nb, data)
    backend = room_backend(nb.path)
    if backend is not None:
        raise ToolError(refusal(nb.rel, backend))
    spliced = notebook_bytes(nb, data)
    env.capture_before_write(nb.path)
    write_file(env.root, nb.path, spliced.raw)
    return spliced
