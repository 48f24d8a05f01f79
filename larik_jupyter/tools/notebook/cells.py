"""notebook_read and notebook_edit: cells of an `.ipynb` by id, in the notebook as the user
sees it (`tools/notebook/open.py`: the open notebook, or the file).

Cells are addressed by their nbformat id, or as `cell-N` (the Nth cell, counting from 1) in a
notebook without ids; "cell N" means the same cell to the model and to the person.
An edit is worked out from the cells read into one typed change, which the document applies
where the notebook lives, checkpointing it first (`tools/notebook/document.py`); any failure
leaves the notebook unchanged.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from larik_jupyter.bridge_protocol import Delete, Insert, Patch, Replace
from larik_jupyter.egress.tags import Span, Tag, files_tag, tagged, variable_source, variable_tag
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import (
    as_source,
    cell_number,
    index_name,
    lines_form,
    named_index,
    source_text,
)
from larik_jupyter.session.call_summary import CellPosition, short_cell_id
from larik_jupyter.textdiff import unified_diff
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.envelope import wrap
from larik_jupyter.tools.files import apply_edit, outside_root
from larik_jupyter.tools.images import ImageCollector
from larik_jupyter.tools.kernel import cell_code, files_named, variables_read
from larik_jupyter.tools.notebook.document import (
    NotebookDocument,
    changed_cell,
    kernel_notebook,
    with_provenance,
)
from larik_jupyter.tools.notebook.file import REWRITTEN_NOTE, problems_note
from larik_jupyter.tools.notebook.open import open_notebook
from larik_jupyter.tools.notebook.outputs import outputs_text
from larik_jupyter.tools.page_cells import CellChanged

DEFAULT_LIMIT = 50
# A cell's source is cut after this many characters (the rest is read with source_offset), and
# a result stops adding cells once it holds this many (the rest is read with start).
MAX_CELL_SOURCE = 20_000
MAX_READ_CHARS = 100_000
CELL_TYPES = ("code", "markdown", "raw")
RELOAD_NOTE = (
    "This is the notebook this kernel belongs to: if it is open in a browser, tell the user to "
    "reload it from disk (File > Reload Notebook from Disk) before saving, or the editor's next "
    "save overwrites this edit."
)
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


@dataclass
class NotebookChange:
    """An edit worked out but not made: the change, the cell's diff and a summary."""

    nb: NotebookDocument
    diff: str
    summary: str
    op: Insert | Replace | Patch | Delete  # the edit, as the document applies it
    question: str = ""  # what the approval asks, before the edit: "Replace the source of cell 3 …?"


class NotebookEditTool(NotebookTool):
    name = "notebook_edit"
    rule_names = ("notebookedit",)
    kernel_tool = True
    writes = frozenset({"notebooks"})
    description = (
        "Edit one cell of a Jupyter notebook. edit_mode replace: new_source (the whole source) "
        "or old_string + new_string (exactly one occurrence in the cell); insert: a new cell of "
        "cell_type with new_source after cell_id (first when omitted); delete: remove cell_id. "
        "A changed code cell loses its outputs. Returns the cell's diff."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": NOTEBOOK_PATH,
            "cell_id": {"type": "string", "description": "The cell's id (or cell-N)."},
            "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"]},
            "new_source": {"type": "string", "description": "The cell's whole new source."},
            "old_string": {"type": "string", "description": "Exact text in the cell to replace."},
            "new_string": {"type": "string", "description": "Text to put in its place."},
            "cell_type": {"type": "string", "enum": list(CELL_TYPES)},
        },
    }

    def plan(self, env: Env, args: dict[str, Any]) -> NotebookChange:
        """Work the edit out without writing anything (also what the approval shows)."""
        cell_id = args.get("cell_id")
        nb = open_notebook(env, notebook_path(env, args, self.name), [str(cell_id)] if cell_id else [])
        if not env.inside_root(nb.path):
            raise outside_root(env.root, nb.path)
        mode = args.get("edit_mode") or "replace"
        if mode not in ("replace", "insert", "delete"):
            raise ToolError(f"notebook_edit: edit_mode must be replace, insert or delete, not {mode!r}.")
        kind = args.get("cell_type")
        if kind is not None and kind not in CELL_TYPES:
            raise ToolError(f"notebook_edit: cell_type must be code, markdown or raw, not {kind!r}.")
        if mode == "insert":
            return self._insert(env, nb, args, kind or "code")
        if not cell_id:
            raise ToolError(f"notebook_edit: {mode} needs cell_id; call notebook_read to see the ids.")
        index = _find(nb, str(cell_id))
        cell = nb.cells[index]
        where = f"{nb.rel}#{cell_id}"
        if not isinstance(cell, dict) and mode != "delete":
            raise ToolError(
                f"{where} is not a cell but a JSON {type(cell).__name__}; delete it, or fix the "
                "file in Jupyter; the file was left unchanged."
            )
        old = source_text(cell) if isinstance(cell, dict) else ""
        named = f"{_cell_name(nb, str(cell_id), index)} of {nb.rel}"
        shown = f"{nb.rel} {_cell_name(nb, str(cell_id), index)}"  # the diff's header, as people name the cell
        if mode == "delete":
            op: Insert | Replace | Patch | Delete = Delete(cell_id=str(cell_id))
            return NotebookChange(
                nb, unified_diff(shown, old, None), f"Deleted cell {cell_id} of {nb.rel}.", op, f"Delete {named}?"
            )
        new = self._new_source(args, old, where)
        changed = with_provenance(changed_cell(cell, new, kind), env)
        op = Replace(cell_id=str(cell_id), cell=changed)
        if args.get("new_source") is None and changed.get("cell_type") == cell.get("cell_type"):
            # Applied to the cell's source as it is when the edit lands, keeping what the user
            # typed since the read elsewhere in the cell.
            op = Patch(cell_id=str(cell_id), old_string=str(args["old_string"]),
                       new_string=str(args["new_string"]), metadata=changed.get("metadata", {}))
        summary = f"Replaced the source of cell {cell_id} of {nb.rel}"
        question = f"Replace the source of {named}"
        if changed.get("cell_type") != cell.get("cell_type"):
            summary += f" (now a {changed['cell_type']} cell)"
            question += f", making it a {changed['cell_type']} cell,"
        if cell.get("cell_type") == "code" and cell.get("outputs"):
            summary += "; its outputs were cleared"
            question += " and clear its outputs"
        return NotebookChange(nb, unified_diff(shown, old, new), summary + ".", op, question + "?")

    def _new_source(self, args: dict[str, Any], old: str, where: str) -> str:
        has_source = args.get("new_source") is not None
        has_strings = args.get("old_string") is not None or args.get("new_string") is not None
        if has_source == has_strings:
            raise ToolError(
                "notebook_edit replace takes either new_source (the whole source) or "
                "old_string + new_string, not both and not neither."
            )
        if has_source:
            return _encodable(str(args["new_source"]), where)
        if args.get("old_string") is None or args.get("new_string") is None:
            raise ToolError("notebook_edit: old_string and new_string go together; pass both.")
        new, _ = apply_edit(old, str(args["old_string"]), str(args["new_string"]), False, where)
        return _encodable(new, where)

    def _insert(
        self, env: Env, nb: NotebookDocument, args: dict[str, Any], kind: str
    ) -> NotebookChange:
        if args.get("new_source") is None:
            raise ToolError("notebook_edit insert needs new_source, the new cell's source.")
        after = args.get("cell_id")
        index = _find(nb, str(after)) + 1 if after else 0
        seed = json.dumps(args, sort_keys=True, ensure_ascii=False)
        cell = with_provenance(_new_cell(nb, kind, _encodable(str(args["new_source"]), nb.rel), seed), env)
        new_id = str(cell["id"]) if "id" in cell else index_name(index)
        place = f"after cell {after}" if after else "as the first cell"
        summary = f"Inserted {kind} cell {new_id} {place} of {nb.rel}."
        if not nb.has_ids and index < len(nb.cells):
            summary += " Cells after it moved up one index (cell-N numbers changed)."
        op = Insert(after=str(after) if after else None, cell=cell)
        spot = f"after {_cell_name(nb, str(after), index - 1)}" if after else "as the first cell"
        question = f"Insert a new {kind} cell ({new_id}) {spot} of {nb.rel}?"
        shown = f"{nb.rel} new cell ({short_cell_id(new_id)})"
        return NotebookChange(nb, unified_diff(shown, None, str(args["new_source"])), summary, op, question)

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        change = self.plan(env, args)
        # A cell's source rarely ends with a newline: difflib's note about it is noise here.
        diff = change.diff.replace("\n\\ No newline at end of file", "")
        return change.question + "\n" + (diff or "(the source would not change)")

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        """The question the preview opens with (it names the cell and what happens to it)."""
        question, _, rest = preview.partition("\n")
        if question.endswith("?") and rest.startswith("--- "):
            return question, rest
        return super().approval_question(args, preview, namespace, position)

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        change = self.plan(env, args)
        with change.nb.editing(env):
            try:
                landed = change.nb.apply(env, change.op)
            except CellChanged:
                # The kernel's copy of the cell was out of date (the user typed in it or ran
                # it): worked out again from the cell as the refusal brought it back.
                change = self.plan(env, args)
                landed = change.nb.apply(env, change.op)
        text = change.summary + landed.said + "\n" + (change.diff or "(the source did not change)")
        if landed.rewritten:
            text += "\n" + REWRITTEN_NOTE
        notices = []
        if landed.own_file:
            text += "\n" + RELOAD_NOTE
            notices.append(
                f"{change.nb.rel} was changed on disk: reload it from disk (File > Reload Notebook "
                "from Disk) before you save, or saving overwrites the agent's edit."
            )
        return ToolResult(text, diff=change.diff or None, notices=notices)


def _find(nb: NotebookDocument, cell_id: str) -> int:
    """The cell's index; a missing cell refused as the document says (`missing`)."""
    try:
        return nb.find(cell_id)
    except ToolError as exc:
        raise nb.missing(exc) from None


def _encodable(text: str, where: str) -> str:
    """`text`, refused when UTF-8 cannot hold it (a lone surrogate from a bad JSON escape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"{where}: the new source has a character UTF-8 cannot hold ({exc.reason} at "
            f"position {exc.start}); the file was left unchanged."
        ) from exc
    return text


def _cell_name(nb: NotebookDocument, cell_id: str, index: int) -> str:
    """`cell 3 (2363e7e8)`: where the cell stands now, counted from 1, and its id (a long one
    cut to `4f9a2c7d…`, as every view names a cell)."""
    position = nb.order.index(cell_id) if cell_id in nb.order else index
    return cell_number(position) + ("" if named_index(cell_id) is not None else f" ({short_cell_id(cell_id)})")


def _new_cell(nb: NotebookDocument, kind: str, source: str, seed: str) -> dict[str, Any]:
    """A new cell as nbformat 4.5's `new_*_cell` builds it (same keys, same order, an id of 8
    hex digits), without importing nbformat (over a second here) for an edit of an open
    document; a write of a file still goes through nbformat's validation. The id follows from
    `seed` (the call's input) and the ids taken, so the approval's preview shows the id the
    cell then gets."""
    ids = (hashlib.sha256(f"{seed}\0{n}".encode()).hexdigest()[:8] for n in itertools.count())
    cell: dict[str, Any] = {"id": next(ids), "cell_type": kind}
    if kind == "code":
        cell.update(metadata={}, execution_count=None, source="", outputs=[])
    else:
        cell.update(source="", metadata={})
    cell["source"] = as_source(source, lines_form(None, nb.cells))
    if not nb.has_ids:
        cell.pop("id", None)
    else:
        taken = {c.get("id") for c in nb.cells if isinstance(c, dict)} | set(nb.order)
        while cell["id"] in taken:
            cell["id"] = next(ids)
    return cell
