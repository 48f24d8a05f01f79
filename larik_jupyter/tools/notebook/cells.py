"""notebook_read: cells of an `.ipynb` by id, in the notebook as the user sees it
(`tools/notebook/open.py`: the open notebook, or the file); what the notebook tools share (the
notebook a call names, `NotebookTool`).

Cells are addressed by their nbformat id, or as `cell-N` (the Nth cell, counting from 1) in a
notebook without ids; "cell N" means the same cell to the model and to the person.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from larik_jupyter.egress.tags import Span, Tag, files_tag, tagged, variable_source, variable_tag
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import (
    cell_number,
    source_text,
)
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.envelope import wrap
from larik_jupyter.tools.images import ImageCollector
from larik_jupyter.tools.kernel import cell_code, files_named, variables_read
from larik_jupyter.tools.notebook.document import (
    NotebookDocument,
    kernel_notebook,
)
from larik_jupyter.tools.notebook.file import problems_note
from larik_jupyter.tools.notebook.open import open_notebook
from larik_jupyter.tools.notebook.outputs import outputs_text
from larik_jupyter.tools.notebook.summaries import cells_named, read_summary

DEFAULT_LIMIT = 50
# A cell's source is cut after this many characters (the rest is read with source_offset), and
# a result stops adding cells once it holds this many (the rest is read with start).
MAX_CELL_SOURCE = 20_000
MAX_READ_CHARS = 100_000
NOTEBOOK_PATH: dict[str, Any] = {
    "type": "string",
    "description": "Notebook (.ipynb) path, relative to the working directory; default: the "
    "notebook this kernel belongs to, when known.",
}


def notebook_path(env: Env, args: dict[str, Any], tool: str) -> str:
    """The `path` input, or the kernel's own notebook when it is known."""
    path = args.get("path")
    if path:
        return str(path)
    own = kernel_notebook(env)
    if own is None:
        raise ToolError(
            f"{tool}: no path given and the notebook this kernel belongs to is unknown; "
            "pass the notebook's path."
        )
    return str(own)


class NotebookTool(Tool):
    """A tool that acts on one notebook: its `path`, else the kernel's own notebook, which
    rules, "Always allow" and the approval then name."""

    path_input = "path"

    def scoped_input(self, env: Env, args: Mapping[str, Any]) -> dict[str, Any]:
        if not args.get("path") and (own := kernel_notebook(env)) is not None:
            return {**args, "path": str(own)}
        return dict(args)

    @classmethod
    def cells_named(cls, args: Mapping[str, Any]) -> str | None:
        return cells_named(args)


class NotebookReadTool(NotebookTool):
    name = "notebook_read"
    writes = frozenset()
    kernel_tool = True
    description = (
        "Read a Jupyter notebook's cells in order: id, type, execution count, source and "
        "outputs (text capped per cell, errors with a short traceback, images you can see). "
        f"Page through large notebooks with start/limit; a source longer than {MAX_CELL_SOURCE} "
        "characters is cut, and source_offset reads it on from a line. Cell ids address "
        "notebook_edit."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": NOTEBOOK_PATH,
            "cell_ids": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only these cells (ids, or cell-N in a notebook without ids).",
            },
            "start": {"type": "integer", "description": "First cell number (counting from 1); default 1."},
            "limit": {"type": "integer", "description": f"How many cells; default {DEFAULT_LIMIT}."},
            "include_outputs": {
                "type": "boolean",
                "description": "Include the cells' outputs (default true).",
            },
            "source_offset": {
                "type": "integer",
                "description": "Show each cell's source from this line on (1-based; default 1), "
                "to read on in a source that was cut.",
            },
        },
    }

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        return read_summary(cls.name, args, position, DEFAULT_LIMIT)

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        nb = open_notebook(env, notebook_path(env, args, self.name))
        total = len(nb.cells)
        start = int(args["start"]) - 1 if args.get("start") is not None else 0
        limit = int(args.get("limit") or DEFAULT_LIMIT)
        if start < 0 or limit < 1:
            raise ToolError("notebook_read: start counts cells from 1 and limit must be >= 1.")
        offset = int(args.get("source_offset") or 1)
        if offset < 1:
            raise ToolError("notebook_read: source_offset is a line number and starts at 1.")
        if args.get("cell_ids"):
            wanted = {nb.find(str(cid)) for cid in args["cell_ids"]}
            indexes = sorted(wanted)
        else:
            indexes = list(range(start, min(total, start + limit)))
        outputs = args.get("include_outputs", True) is not False
        images = ImageCollector()
        rows, made = _rows(nb, indexes, outputs, offset, images, env)
        left_out = indexes[len(rows) :]
        indexes = indexes[: len(rows)]
        head = f"{nb.rel}: {total} cells (nbformat {nb.data.get('nbformat')}.{nb.data.get('nbformat_minor')})"
        if not nb.has_ids:
            head += "; no cell ids, so cells are addressed as cell-N (the Nth cell, counting from 1)"
        if not indexes:
            head += "; no cell in that range" if total else "; the notebook is empty"
        elif not args.get("cell_ids"):
            head += f"; showing cells {indexes[0] + 1}-{indexes[-1] + 1}"
            if indexes[-1] + 1 < total:
                head += f"; call again with start={indexes[-1] + 2} for the rest"
        elif left_out:
            head += (
                f"; {len(left_out)} of the cells asked for were left out to keep this result under "
                f"{MAX_READ_CHARS} characters: read "
                + ", ".join(nb.cell_id(i) for i in left_out)
                + " with cell_ids in another call"
            )
        body = wrap(env.call.nonce, nb.rel, "\n".join(rows)) if rows else ""
        text = head + "." + ("\n" + problems_note(nb) if nb.problems else "") + ("\n" + body if body else "")
        text = images.text(text + nb.read_note(env))
        return ToolResult(text, images=images.images, egress=_spans(text, made))


def _rows(
    nb: NotebookDocument, indexes: list[int], outputs: bool, offset: int, images: ImageCollector, env: Env
) -> tuple[list[str], list[tuple[str, Tag]]]:
    """The text of the cells `indexes`, in order, until the result would pass `MAX_READ_CHARS`
    (the first cell is always shown), and each shown cell's outputs text with the tag of what
    its code read (its images carry that tag themselves)."""
    rows: list[str] = []
    made: list[tuple[str, Tag]] = []
    size = 0
    for index in indexes:
        kept = len(images.images), len(images.notes)
        row, shown = _cell_text(nb, index, outputs, offset, images)
        if rows and size + len(row) > MAX_READ_CHARS:
            del images.images[kept[0] :], images.notes[kept[1] :]  # that cell's images go too
            break
        rows.append(row)
        size += len(row) + 1
        cell = nb.cells[index]
        tag = cell_tag(env, source_text(cell)) if shown and isinstance(cell, dict) else Tag()
        if tag:
            made.append((shown, tag))
            images.images[kept[0] :] = [tagged(i, tag) for i in images.images[kept[0] :]]
    return rows, made


def cell_tag(env: Env, source: str) -> Tag:
    """The tag of a cell's outputs: the user variables its code reads (with a kernel; without
    one, the names it uses that a rule names) and the project files it names."""
    module = cell_code(source)
    if module is None:
        return Tag()
    if env.host is not None:
        tag = variable_tag(env.egress, variables_read(module, env.host.namespace or {}))
    else:
        named = {n.id for n in ast.walk(module) if isinstance(n, ast.Name)} & env.egress.rules.keys()
        tag = Tag([variable_source(n) for n in sorted(named)])
    return tag | files_tag(env.egress, env.root, files_named(module, env.cwd, env.root))


def _spans(text: str, made: list[tuple[str, Tag]]) -> Tag:
    """The span tag of `text` marking each cell's outputs with what they were made from."""
    spans: list[Span] = []
    views: dict[str, dict[str, str]] = {}
    at = 0
    for shown, tag in made:
        start = text.find(shown, at)
        if start < 0:
            continue
        spans.append((start, start + len(shown), tag.sources))
        views |= tag.views
        at = start + len(shown)
    return Tag(spans=spans, views=views)


def _cell_text(
    nb: NotebookDocument, index: int, outputs: bool, offset: int, images: ImageCollector
) -> tuple[str, str]:
    """A cell's text, and its outputs' text within it ('' when none are shown)."""
    cell = nb.cells[index]
    if not isinstance(cell, dict):
        return f"--- {cell_number(index)} · not a cell (a JSON {type(cell).__name__}, not an object)", ""
    kind = cell.get("cell_type", "?")
    head = f"--- {cell_number(index)} · id {nb.cell_id(index)} · {kind}"
    if kind == "code":
        count = cell.get("execution_count")
        head += f" · execution_count {count if count is not None else '-'}"
    rows = [head, _source_page(nb.cell_id(index), source_text(cell), offset)]
    shown = ""
    if outputs and kind == "code" and isinstance(cell.get("outputs"), list) and cell["outputs"]:
        shown = outputs_text(cell["outputs"], images, cell_number(index))
        rows += ["--- outputs", shown]
    return "\n".join(rows), shown


def _source_page(cell_id: str, source: str, offset: int) -> str:
    """`source` from line `offset` on, cut after `MAX_CELL_SOURCE` characters with a note on
    how to read on."""
    if offset == 1 and len(source) <= MAX_CELL_SOURCE:
        return source
    lines = source.splitlines(keepends=True)
    if offset > len(lines):
        return f"[the source has {len(lines)} lines; source_offset {offset} is past its end]"
    shown: list[str] = []
    size = 0
    for line in lines[offset - 1 :]:
        if shown and size + len(line) > MAX_CELL_SOURCE:
            break
        shown.append(line[:MAX_CELL_SOURCE])
        size += len(line)
    last = offset + len(shown) - 1
    note = f"[source lines {offset}-{last} of {len(lines)}"
    if any(len(line) > MAX_CELL_SOURCE for line in lines[offset - 1 : last]):
        note += f"; a line longer than {MAX_CELL_SOURCE} characters shows only its start"
    if last < len(lines):
        note += f"; read on with notebook_read cell_ids=[{json.dumps(cell_id)}] source_offset={last + 1}"
    return "".join(shown).rstrip("\n") + "\n" + note + "]"
