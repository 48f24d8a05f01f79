"""Cells as a notebook file holds them: sources and text outputs as one string or as a list of
lines (nbformat's `split_lines`), without the transient `trusted` flag; and the one name of a
cell in a notebook without cell ids (nbformat < 4.5): `cell-N`, the Nth cell counting from 1,
as the model and the person count cells everywhere."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

# Besides text/*, the media types nbformat writes as lists of lines.
_SPLIT_MEDIA = ("application/javascript", "image/svg+xml")
_INDEX_NAME = re.compile(r"cell-([0-9]+)")


def cell_number(index: int) -> str:
    """`cell 3`: the cell at 0-based `index` 2, counted from 1 as people count; the one way every
    tool result, note, approval, summary and report names a cell by its position."""
    return f"cell {index + 1}"


def index_name(index: int) -> str:
    """`cell-3`: the name of the cell at 0-based `index` 2 (the third) in a notebook without ids."""
    return f"cell-{index + 1}"


def named_index(name: str) -> int | None:
    """The 0-based index a `cell-N` name gives (`cell-1` is index 0); None for any other name
    (an id)."""
    found = _INDEX_NAME.fullmatch(name)
    return int(found[1]) - 1 if found and int(found[1]) > 0 else None


def lines_form(cell: dict[str, Any] | None, cells: list[Any]) -> bool:
    """Whether a (new, when `cell` is None) cell's source is written as a list of lines, as
    nbformat does, rather than one string: the cell's own form, else the notebook's."""
    if cell is not None:
        return not isinstance(cell.get("source"), str)
    return not any(isinstance(c, dict) and isinstance(c.get("source"), str) for c in cells)


def file_form(cell: dict[str, Any], lines: bool) -> dict[str, Any]:
    """`cell` (say, from a browser, whose strings are whole) as nbformat writes it: in a file
    whose sources are lists of lines, split as nbformat splits them; `trusted` left out."""
    out = copy.deepcopy(cell)
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("trusted", None)
    if not lines:
        return out
    if isinstance(out.get("source"), str):
        out["source"] = out["source"].splitlines(True)
    for bundle in (out.get("attachments") or {}).values():
        _split(bundle)
    for output in out.get("outputs") or [] if out.get("cell_type") == "code" else []:
        if output.get("output_type") in ("execute_result", "display_data"):
            _split(output.get("data") or {})
        elif output.get("output_type") == "stream" and isinstance(output.get("text"), str):
            output["text"] = output["text"].splitlines(True)
    return out


def _split(bundle: dict[str, Any]) -> None:
    for key, value in list(bundle.items()):
        if isinstance(value, str) and (key.startswith("text/") or key in _SPLIT_MEDIA):
            bundle[key] = value.splitlines(True)


def source_text(cell: dict[str, Any]) -> str:
    """A cell's source as one string (the file may hold it as a list of lines)."""
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(line if isinstance(line, str) else json.dumps(line) for line in source)
    return str(source)


def as_source(text: str, lines: bool) -> Any:
    """`text` as a cell's source in the file's form: a list of lines or one string."""
    return text.splitlines(keepends=True) if lines else text
