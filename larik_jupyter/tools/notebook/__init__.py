"""The notebook document and its homes (a file on disk, the open notebook), and the tools that read, edit and run its cells.

The rest of the package imports this module only; its names load on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.tools.notebook.cells import (
        NOTEBOOK_PATH,
        NotebookEditTool,
        NotebookReadTool,
        NotebookTool,
        cell_tag,
        notebook_path,
    )
    from larik_jupyter.tools.notebook.document import NotebookDocument, kernel_notebook
    from larik_jupyter.tools.notebook.open import cell_restorer, cell_sources, open_notebook
    from larik_jupyter.tools.notebook.page import cell_positions
    from larik_jupyter.tools.notebook.run import CellRun, NotebookRunTool

__all__ = ["CellRun", "NOTEBOOK_PATH", "NotebookDocument", "NotebookEditTool", "NotebookReadTool", "NotebookRunTool", "NotebookTool", "cell_positions", "cell_restorer", "cell_tag", "cell_sources", "kernel_notebook", "notebook_path", "open_notebook"]

_LAZY = {
    "CellRun": "larik_jupyter.tools.notebook.run",
    "NOTEBOOK_PATH": "larik_jupyter.tools.notebook.cells",
    "cell_tag": "larik_jupyter.tools.notebook.cells",
    "NotebookDocument": "larik_jupyter.tools.notebook.document",
    "NotebookEditTool": "larik_jupyter.tools.notebook.cells",
    "NotebookReadTool": "larik_jupyter.tools.notebook.cells",
    "NotebookTool": "larik_jupyter.tools.notebook.cells",
    "NotebookRunTool": "larik_jupyter.tools.notebook.run",
    "cell_positions": "larik_jupyter.tools.notebook.page",
    "cell_restorer": "larik_jupyter.tools.notebook.open",
    "cell_sources": "larik_jupyter.tools.notebook.open",
    "kernel_notebook": "larik_jupyter.tools.notebook.document",
    "notebook_path": "larik_jupyter.tools.notebook.cells",
    "open_notebook": "larik_jupyter.tools.notebook.open",
}

__getattr__ = lazy_names(__name__, _LAZY)
