"""One notebook document, two homes: what the notebook tools read and change, whether a browser
shows the notebook (`tools/notebook/page.py`, an open notebook, through the bridge) or not
(`tools/notebook/file.py`, the `.ipynb` file written back exactly). `tools/notebook/open.py`
picks the home; the tools never ask which one it is.

A document holds the cells as read (all, or the few an edit needs from an open notebook) and
applies one typed change (`bridge_protocol`'s `Insert`, `Replace`, `Patch`, `Delete`,
`SetOutputs`) to the notebook where it lives, checkpointing what the change touches itself,
once, before the change lands (and dropping that record when it does not land).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.bridge_protocol import CellChange
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import as_source, index_name, lines_form, named_index, source_text
from larik_jupyter.nbjson.validate import Problem
from larik_jupyter.tools.env import Env

# Shows a running cell's outputs so far where the user sees the notebook.
OutputSink = Callable[[list[dict[str, Any]]], None]


@dataclass
class Landed:
    """What a change did: the ids of the cells it left (none for a delete); `said`, what the
    result adds after the change's summary; `rewritten`: the whole file had to be written again
    (its layout could not be kept around the change); `own_file`: it wrote the file of the
    notebook this kernel belongs to (which an editor may hold open)."""

    cell_ids: list[str]
    said: str = ""
    rewritten: bool = False
    own_file: bool = False


@dataclass
class NotebookDocument(ABC):
    """A notebook's cells as read: `data` is its JSON (key order kept; an open notebook's may
    hold only some cells), `order` the ids of all its cells in order when known, `problems`
    what nbformat finds wrong with it."""

    path: Path
    rel: str
    data: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)
    order: list[str] = field(default_factory=list)

    # Where a change shows, in a result: "the open notebook" or the file's name.
    @property
    @abstractmethod
    def where(self) -> str: ...

    @abstractmethod
    def apply(self, env: Env, change: CellChange) -> Landed:
        """Make `change` in the notebook where it lives, checkpointed first; raises `ToolError`
        (and nothing changed) when it cannot land."""

    @abstractmethod
    def read_note(self, env: Env) -> str:
        """What a read of this document adds about where it was read from ("" or a line)."""

    def editing(self, env: Env) -> AbstractContextManager[Any]:
        """Held while one change is worked out, checkpointed, applied and retried, so that two
        changes from one kernel (subagents) cannot interleave between record and landing."""
        return nullcontext()

    def output_sink(self, env: Env, cell_id: str) -> OutputSink | None:
        """Where a running cell's outputs show while it runs (its old outputs checkpointed
        first); None: only its final outputs land (`apply` of `SetOutputs`)."""
        return None

    def missing(self, exc: ToolError) -> ToolError:
        """The refusal of a change of a cell `find` did not find."""
        return exc

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
        return str(cell["id"]) if self.has_ids and isinstance(cell, dict) and "id" in cell else index_name(index)

    def find(self, cell_id: str) -> int:
        """The index of the cell `cell_id` names (its id, or `cell-N`); an id two cells share
        is refused, since either could be meant."""
        found = [index for index in range(len(self.cells)) if self.cell_id(index) == cell_id]
        if len(found) > 1:
            raise ToolError(duplicate_id(self.rel, cell_id, found))
        if found:
            return found[0]
        index = named_index(cell_id)
        if index is not None and index < len(self.cells):
            return index
        known = ", ".join(self.cell_id(i) for i in range(min(len(self.cells), 8)))
        more = ", …" if len(self.cells) > 8 else ""
        raise ToolError(
            f"{self.rel} has no cell {cell_id!r} (cells: {known}{more}); "
            "call notebook_read to see the cell ids."
        )


def duplicate_id(rel: str, cell_id: str, indexes: list[int]) -> str:
    """The refusal of an edit by an id that several cells of `rel` carry."""
    where = ", ".join(str(i + 1) for i in indexes[:-1]) + f" and {indexes[-1] + 1}"
    addresses = ", ".join(index_name(i) for i in indexes[:-1]) + f" or {index_name(indexes[-1])}"
    return (
        f"{rel} has {len(indexes)} cells with the id {cell_id!r} (cells {where}), so it "
        f"does not say which one is meant; address the cell as {addresses} instead."
    )


def kernel_notebook(env: Env) -> Path | None:
    """The notebook this kernel belongs to: what the bridge says, else what the front end set."""
    bridge = env.host.bridge if env.host is not None else None
    from_bridge = bridge.notebook_path if bridge is not None else None
    return from_bridge or env.call.notebook_path


def is_kernel_notebook(env: Env, path: Path) -> bool:
    own = kernel_notebook(env)
    return own is not None and Path(own).resolve() == path


def provenance(env: Env) -> dict[str, Any] | None:
    """The `larik` metadata of a cell the running call creates or changes (None outside a turn)."""
    call = env.call
    if not call.session_id:
        return None
    mark: dict[str, Any] = {"session": call.session_id, "prompt": call.prompt_number}
    if call.tool_use_id:
        mark["tool_use_id"] = call.tool_use_id
    return mark


def with_provenance(cell: dict[str, Any], env: Env) -> dict[str, Any]:
    """`cell` carrying the running call's `larik` metadata (unchanged outside a turn)."""
    mark = provenance(env)
    if mark is None:
        return cell
    marked = dict(cell)
    marked["metadata"] = {**cell.get("metadata", {}), "larik": mark}
    return marked


def changed_cell(cell: dict[str, Any], new: str, kind: str | None) -> dict[str, Any]:
    """`cell` with source `new` (and type `kind`); a code cell loses outputs that no longer match."""
    changed = dict(cell)
    changed["source"] = as_source(new, lines_form(cell, []))
    target = kind or cell.get("cell_type", "code")
    if target == "code":
        if cell.get("cell_type") != "code" or source_text(cell) != new:
            changed["outputs"] = []
            changed["execution_count"] = None
        changed.pop("attachments", None)
    else:
        changed.pop("outputs", None)
        changed.pop("execution_count", None)
    changed["cell_type"] = target
    return changed
