"""Project files: read, write and edit, find (glob, grep, ls), shell commands, and the language servers' diagnostics.

The rest of the package imports this module only; its names load on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.tools.files.bash import BashTool
    from larik_jupyter.tools.files.diagnostics import DiagnosticsTool
    from larik_jupyter.tools.files.edit import (
        EditTool,
        MultiEditTool,
        TextTool,
        WriteTool,
        apply_edit,
    )
    from larik_jupyter.tools.files.read import ReadTool
    from larik_jupyter.tools.files.search import GlobTool, GrepTool, LsTool
    from larik_jupyter.tools.files.snapshot import Snapshot, changes, take_snapshot
    from larik_jupyter.tools.files.textfile import MAX_TEXT_BYTES, is_binary
    from larik_jupyter.tools.files.write import outside_root, write_file

__all__ = ["BashTool", "DiagnosticsTool", "EditTool", "GlobTool", "GrepTool", "LsTool", "MAX_TEXT_BYTES", "MultiEditTool", "ReadTool", "Snapshot", "TextTool", "WriteTool", "apply_edit", "changes", "is_binary", "outside_root", "take_snapshot", "write_file"]

_LAZY = {
    "BashTool": "larik_jupyter.tools.files.bash",
    "DiagnosticsTool": "larik_jupyter.tools.files.diagnostics",
    "EditTool": "larik_jupyter.tools.files.edit",
    "GlobTool": "larik_jupyter.tools.files.search",
    "GrepTool": "larik_jupyter.tools.files.search",
    "LsTool": "larik_jupyter.tools.files.search",
    "MAX_TEXT_BYTES": "larik_jupyter.tools.files.textfile",
    "MultiEditTool": "larik_jupyter.tools.files.edit",
    "ReadTool": "larik_jupyter.tools.files.read",
    "Snapshot": "larik_jupyter.tools.files.snapshot",
    "TextTool": "larik_jupyter.tools.files.edit",
    "WriteTool": "larik_jupyter.tools.files.edit",
    "apply_edit": "larik_jupyter.tools.files.edit",
    "changes": "larik_jupyter.tools.files.snapshot",
    "is_binary": "larik_jupyter.tools.files.textfile",
    "outside_root": "larik_jupyter.tools.files.write",
    "take_snapshot": "larik_jupyter.tools.files.snapshot",
    "write_file": "larik_jupyter.tools.files.write",
}

__getattr__ = lazy_names(__name__, _LAZY)
