"""notebook_check: the kernel's notebook run top to bottom in a scratch kernel, and its report.

The rest of the package imports this module only; its names load on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.tools.check.report import CheckReport
    from larik_jupyter.tools.check.tool import (
        NotebookCheckTool,
        check_notebook,
        names_of_cell,
        run_check,
    )

__all__ = ["CheckReport", "NotebookCheckTool", "check_notebook", "names_of_cell", "run_check"]

_LAZY = {
    "CheckReport": "larik_jupyter.tools.check.report",
    "NotebookCheckTool": "larik_jupyter.tools.check.tool",
    "check_notebook": "larik_jupyter.tools.check.tool",
    "names_of_cell": "larik_jupyter.tools.check.tool",
    "run_check": "larik_jupyter.tools.check.tool",
}

__getattr__ = lazy_names(__name__, _LAZY)
