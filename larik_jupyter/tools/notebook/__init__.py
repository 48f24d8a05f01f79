"""The notebook document and its homes (a file on disk, the open notebook), and the tools that read, edit and run its cells.

The rest of the package imports this module only; its names load on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.tools.notebook.cells import (
        NOTEBOOK_PATH,
        NotebookReadTool,
        NotebookTool,
        cell_tag,
        notebook_path,
    )
    from larik_jupyter.tools.notebook.document import NotebookDocument, kernel_notebook
    from larik_jupyter.tools.notebook.edit import NotebookEditTool
    from larik_jupyter.tools.notebook.open import (
        cell_restorer,
        cell_sources,
        file_holder,
        open_notebook,
    )
    from larik_jupyter.tools.notebook.page import cell_positions
    from larik_jupyter.tools.notebook.rooms import (
        JUPYTER_COLLABORATION,
        SERVER_DOCUMENTS,
        under_server_documents,
    )
    from larik_jupyter.tools.notebook.run import CellRun, NotebookRunTool

__all__ = ["CellRun", "JUPYTER_COLLABORATION", "SERVER_DOCUMENTS", "under_server_documents", "NOTEBOOK_PATH", "NotebookDocument", "NotebookEditTool", "NotebookReadTool", "NotebookRunTool", "NotebookTool", "cell_positions", "cell_restorer", "cell_tag", "cell_sources", "file_holder", "kernel_notebook", "notebook_path", "open_notebook"]

_LAZY = {
    "CellRun": "larik_jupyter.tools.notebook.run",
    "NOTEBOOK_PATH": "larik_jupyter.tools.notebook.cells",
    "cell_tag": "larik_jupyter.tools.notebook.cells",
    "NotebookDocument": "larik_jupyter.tools.notebook.document",
    "NotebookEditTool": "larik_jupyter.tools.notebook.edit",
    "NotebookReadTool": "larik_jupyter.tools.notebook.cells",
    "NotebookTool": "larik_jupyter.tools.notebook.cells",
    "NotebookRunTool": "larik_jupyter.tools.notebook.run",
    "cell_positions": "larik_jupyter.tools.notebook.page",
    "cell_restorer": "larik_jupyter.tools.notebook.open",
    "cell_sources": "larik_jupyter.tools.notebook.open",
    "file_holder": "larik_jupyter.tools.notebook.open",
    "JUPYTER_COLLABORATION": "larik_jupyter.tools.notebook.rooms",
    "SERVER_DOCUMENTS": "larik_jupyter.tools.notebook.rooms",
    "under_server_documents": "larik_jupyter.tools.notebook.rooms",
    "kernel_notebook": "larik_jupyter.tools.notebook.document",
    "notebook_path": "larik_jupyter.tools.notebook.cells",
    "open_notebook": "larik_jupyter.tools.notebook.open",
}

__getattr__ = lazy_names(__name__, _LAZY)
