"""notebook_edit: one cell of an `.ipynb` replaced, inserted or deleted, by id, in the notebook
as the user sees it (`tools/notebook/open.py`: the open notebook, or the file).

The edit is worked out from the cells read into one typed change (`plan`: what the approval
shows), which the document applies where the notebook lives, checkpointing it first
(`tools/notebook/document.py`); the run makes the change planned for the approval while the
cells it was worked out from are unchanged, and works it out again otherwise. Any failure
leaves the notebook unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from larik_jupyter.bridge_protocol import Delete, Insert, Patch, Replace
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
from larik_jupyter.tools.base import ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files import apply_edit, outside_root
from larik_jupyter.tools.notebook.cells import NOTEBOOK_PATH, NotebookTool, notebook_path
from larik_jupyter.tools.notebook.document import (
    NotebookDocument,
    changed_cell,
    with_provenance,
)
from larik_jupyter.tools.notebook.file import REWRITTEN_NOTE
from larik_jupyter.tools.notebook.open import open_notebook
from larik_jupyter.tools.notebook.summaries import edit_summary
from larik_jupyter.tools.page_cells import CellChanged
from larik_jupyter.tools.planned import Planned, replanned_note, still_planned

CELL_TYPES = ("code", "markdown", "raw")
RELOAD_NOTE = (
    "This is the notebook this kernel belongs to: if it is open in a browser, tell the user to "
    "reload it from disk (File > Reload Notebook from Disk) before saving, or the editor's next "
    "save overwrites this edit."
)


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

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        return edit_summary(cls.name, args, position)

    def plan(self, env: Env, args: dict[str, Any]) -> Planned[NotebookChange]:
        """Work the edit out without writing anything: what the approval shows, and what the
        run makes while the notebook's cells it was worked out from are unchanged."""
        return self._worked_out(env, self._open(env, args), args)

    def _open(self, env: Env, args: Mapping[str, Any]) -> NotebookDocument:
        cell_id = args.get("cell_id")
        nb = open_notebook(env, notebook_path(env, dict(args), self.name), [str(cell_id)] if cell_id else [])
        if not env.inside_root(nb.path):
            raise outside_root(env.root, nb.path)
        return nb

    def _worked_out(self, env: Env, nb: NotebookDocument, args: Mapping[str, Any]) -> Planned[NotebookChange]:
        change = self._change(env, nb, args)
        # A cell's source rarely ends with a newline: difflib's note about it is noise here.
        diff = change.diff.replace("\n\\ No newline at end of file", "")
        preview = change.question + "\n" + (diff or "(the source would not change)")
        return Planned(preview, _basis(nb, args), change)

    def _change(self, env: Env, nb: NotebookDocument, args: Mapping[str, Any]) -> NotebookChange:
        cell_id = args.get("cell_id")
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

    def _new_source(self, args: Mapping[str, Any], old: str, where: str) -> str:
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
        self, env: Env, nb: NotebookDocument, args: Mapping[str, Any], kind: str
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
        nb = self._open(env, args)
        approved = env.call.planned
        what = "the cell" if args.get("cell_id") else "the notebook"
        planned = still_planned(approved, _basis(nb, args))
        if planned is None:
            planned = self._worked_out(env, nb, args)
        change = dataclasses.replace(planned.change, nb=nb)
        with nb.editing(env):
            try:
                landed = nb.apply(env, change.op)
            except CellChanged:
                # The kernel's copy of the cell was out of date (the user typed in it or ran
                # it): worked out again from the cell as the refusal brought it back.
                planned = self.plan(env, args)
                change = planned.change
                landed = change.nb.apply(env, change.op)
        text = replanned_note(approved, planned, what) + change.summary + landed.said
        text += "\n" + (change.diff or "(the source did not change)")
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


def _basis(nb: NotebookDocument, args: Mapping[str, Any]) -> object:
    """What an edit is worked out from: the notebook's cell ids and the cell it names, as read."""
    ids = (tuple(nb.cell_id(i) for i in range(len(nb.cells))), tuple(nb.order))
    cell_id = args.get("cell_id")
    if not cell_id:
        return ids
    try:
        cell = nb.cells[nb.find(str(cell_id))]
    except ToolError:
        return ids
    return (*ids, json.dumps(cell, sort_keys=True, ensure_ascii=False))


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
