"""Which home a notebook is read from and changed in: its open notebook when a browser shows
it (`tools/notebook/page.py`), else its file (`tools/notebook/file.py`). The one place that
asks; the tools and undo work on the `NotebookDocument` it returns."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellsNotRestored,
    CellSources,
    restore_in_file,
    sources_in_file,
)
from larik_jupyter.checkpoint.manifest import NotebookRecord
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import source_text
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.notebook.document import NotebookDocument
from larik_jupyter.tools.notebook.file import load_notebook
from larik_jupyter.tools.notebook.page import open_document, restore_open
from larik_jupyter.tools.notebook.rooms import held, instead, room_backend


def open_notebook(
    env: Env, raw_path: str, cell_ids: list[str] | None = None, *, fresh: bool = False
) -> NotebookDocument:
    """The notebook as the user sees it: the open notebook when a browser shows it (only the
    cells `cell_ids` names, when given, from the kernel's copy unless `fresh`), else the file."""
    path = env.resolve(raw_path)
    return open_document(env, path, cell_ids, fresh=fresh) or load_notebook(env, path)


def cell_restorer(env: Env) -> CellRestorer:
    """How undo puts a turn's cells back: in the document when a browser shows the notebook,
    else in its file."""

    def restore(root: Path, record: NotebookRecord) -> str:
        if restore_open(env, root / record.path, record):
            return "the open notebook"
        backend = room_backend(root / record.path)
        if backend is not None:
            raise CellsNotRestored(
                f"{held(backend)}, so its cells were not restored in the file; {instead(backend, 'undo')}"
            )
        return restore_in_file(root, record)

    return restore


def file_holder(root: Path, path: str) -> str | None:
    """Why undo must leave the notebook file at `path` as it is: a real-time collaboration room
    holds it now, and its server would load the restored file over everyone's edits."""
    if not path.endswith(".ipynb"):
        return None
    backend = room_backend(root / path)
    if backend is None:
        return None
    return f"{held(backend)}, so it was not restored; {instead(backend, 'undo')}"


def cell_sources(env: Env) -> CellSources:
    """How undo reads a turn's cells as they are now: from the document when a browser shows
    the notebook, else from its file (None when neither can be read)."""

    def sources(root: Path, record: NotebookRecord) -> dict[str, str] | None:
        try:
            document = open_document(env, env.resolve(str(root / record.path)), fresh=True)
        except ToolError:
            return None
        if document is not None:
            return {str(c.get("id")): source_text(c) for c in document.cells if "id" in c}
        return sources_in_file(root, record)

    return sources
