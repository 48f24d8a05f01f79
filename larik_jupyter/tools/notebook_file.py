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

from larik_jupyter.errors import exception_text
from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.file_write import write_file
from larik_jupyter.tools.textfile import MAX_TEXT_BYTES

_INDENT = re.compile(r"\n([ \t]+)\S")
_INDEX_ID = re.compile(r"^cell-(\d+)$")
_SURROGATE = re.compile("[\ud800-\udfff]")


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

    def dumps(self, data: dict[str, Any]) -> str:
        """`data` laid out like the file was."""
        indent: str | int | None = self.indent
        text = json_text(data, indent, self.sort_keys)
        return text + ("\n" if self.newline else "")


def duplicate_id(rel: str, cell_id: str, indexes: list[int]) -> str:
    """The refusal of an edit by an id that several cells of `rel` carry."""
    where = ", ".join(str(i) for i in indexes[:-1]) + f" and {indexes[-1]}"
    addresses = ", ".join(f"cell-{i}" for i in indexes[:-1]) + f" or cell-{indexes[-1]}"
    return (
        f"{rel} has {len(indexes)} cells with the id {cell_id!r} (at positions {where}), so it "
        f"does not say which one is meant; address the cell as {addresses} instead."
    )


def json_text(data: dict[str, Any], indent: str | int | None, sort_keys: bool) -> str:
    """`data` as JSON text in that layout, UTF-8 as nbformat writes it; a lone surrogate (the
    file held it as a `\\uXXXX` escape) stays an escape, since UTF-8 cannot hold it."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def layout(text: str, data: dict[str, Any]) -> tuple[str | None, bool]:
    """The indentation and key order that reproduce `text`; nbformat's own when none does."""
    found = _INDENT.search(text)
    indent = found.group(1) if found else None
    body = text.rstrip("\n")
    for sort_keys in (True, False):
        if json_text(data, indent, sort_keys) == body:
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
    except RecursionError:
        raise ToolError(
            f"{rel} nests its JSON too deeply to parse (RecursionError); it is not a notebook "
            "this tool can read, and it was left unchanged."
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{rel} is not a notebook: its JSON has no list of cells.")
    check_shape(rel, data)
    validate_notebook(rel, data, "is not a valid notebook")
    indent, sort_keys = layout(text, data)
    return NotebookFile(path, rel, text, data, indent, sort_keys, text.endswith("\n"))


def check_shape(rel: str, data: dict[str, Any]) -> None:
    """Refuse (ToolError) what nbformat's validator fails on with its own errors rather than a
    validation error: a version that is not a whole number or newer than it reads, and cells
    that are not objects or have no string `cell_type`."""
    nbformat = _nbformat()
    for key in ("nbformat", "nbformat_minor"):
        value = data.get(key)
        if (value is not None or key == "nbformat") and (not isinstance(value, int) or isinstance(value, bool)):
            shown = _shown(value) if key in data else "missing"
            raise ToolError(
                f"{rel}: its {key} is {shown}, not a whole number, so it is not a notebook this "
                "tool can read; it was left unchanged."
            )
    version = data["nbformat"]
    if version > nbformat.current_nbformat:
        raise ToolError(
            f"{rel} uses nbformat {version}, which this nbformat cannot read (nbformat "
            f"{nbformat.__version__} reads up to nbformat {nbformat.current_nbformat}); it was "
            "left unchanged."
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
    except Exception as exc:  # nbformat's own failures on JSON it did not expect
        raise ToolError(
            f"{rel} {what}: nbformat could not validate it ({exception_text(exc)}); the file was "
            "left unchanged."
        ) from exc


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
