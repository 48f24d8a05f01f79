"""The kernel's Python tool: code run in the live namespace, what it did to the user's variables (watch, fingerprints, protect mode) and to the rows (receipts), and their copies for undo.

The rest of the package imports this module only; its names load on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from larik_jupyter.lazy import lazy_names

if TYPE_CHECKING:
    from larik_jupyter.tools.kernel.answer import AnswerTool
    from larik_jupyter.tools.kernel.code_stop import TIMEOUT_INPUT, CodeStop, stoppable, timeout_of
    from larik_jupyter.tools.kernel.figures import image_of, is_figure
    from larik_jupyter.tools.kernel.fingerprint import content_key
    from larik_jupyter.tools.kernel.protect import effects_sentence, protect_text, protected_changes
    from larik_jupyter.tools.kernel.python import PythonTool
    from larik_jupyter.tools.kernel.reach import reach_of
    from larik_jupyter.tools.kernel.receipts import receipts_found, watch_receipts
    from larik_jupyter.tools.kernel.sources import files_named, variables_read
    from larik_jupyter.tools.kernel.undo import (
        DID_NOT_EXIST,
        KernelSnapshots,
        call_snapshots,
        kernel_snapshots,
    )
    from larik_jupyter.tools.kernel.value_summary import differs, shown, summaries
    from larik_jupyter.tools.kernel.variable_watch import (
        VariableWatch,
        cell_code,
        cell_names,
        is_user_name,
        python_source,
    )
    from larik_jupyter.tools.kernel.variables import InspectVariablesTool, describe, user_variables

__all__ = ["DID_NOT_EXIST", "AnswerTool", "CodeStop", "InspectVariablesTool", "KernelSnapshots", "PythonTool", "TIMEOUT_INPUT", "VariableWatch", "call_snapshots", "cell_code", "cell_names", "content_key", "describe", "differs", "effects_sentence", "image_of", "is_figure", "is_user_name", "kernel_snapshots", "protect_text", "protected_changes", "python_source", "reach_of", "receipts_found", "shown", "stoppable", "summaries", "timeout_of", "user_variables", "watch_receipts", "files_named", "variables_read"]

_LAZY = {
    "AnswerTool": "larik_jupyter.tools.kernel.answer",
    "CodeStop": "larik_jupyter.tools.kernel.code_stop",
    "DID_NOT_EXIST": "larik_jupyter.tools.kernel.undo",
    "content_key": "larik_jupyter.tools.kernel.fingerprint",
    "InspectVariablesTool": "larik_jupyter.tools.kernel.variables",
    "KernelSnapshots": "larik_jupyter.tools.kernel.undo",
    "PythonTool": "larik_jupyter.tools.kernel.python",
    "TIMEOUT_INPUT": "larik_jupyter.tools.kernel.code_stop",
    "VariableWatch": "larik_jupyter.tools.kernel.variable_watch",
    "call_snapshots": "larik_jupyter.tools.kernel.undo",
    "cell_code": "larik_jupyter.tools.kernel.variable_watch",
    "cell_names": "larik_jupyter.tools.kernel.variable_watch",
    "describe": "larik_jupyter.tools.kernel.variables",
    "differs": "larik_jupyter.tools.kernel.value_summary",
    "effects_sentence": "larik_jupyter.tools.kernel.protect",
    "image_of": "larik_jupyter.tools.kernel.figures",
    "is_figure": "larik_jupyter.tools.kernel.figures",
    "is_user_name": "larik_jupyter.tools.kernel.variable_watch",
    "kernel_snapshots": "larik_jupyter.tools.kernel.undo",
    "protect_text": "larik_jupyter.tools.kernel.protect",
    "protected_changes": "larik_jupyter.tools.kernel.protect",
    "python_source": "larik_jupyter.tools.kernel.variable_watch",
    "reach_of": "larik_jupyter.tools.kernel.reach",
    "receipts_found": "larik_jupyter.tools.kernel.receipts",
    "watch_receipts": "larik_jupyter.tools.kernel.receipts",
    "shown": "larik_jupyter.tools.kernel.value_summary",
    "stoppable": "larik_jupyter.tools.kernel.code_stop",
    "summaries": "larik_jupyter.tools.kernel.value_summary",
    "timeout_of": "larik_jupyter.tools.kernel.code_stop",
    "user_variables": "larik_jupyter.tools.kernel.variables",
    "files_named": "larik_jupyter.tools.kernel.sources",
    "variables_read": "larik_jupyter.tools.kernel.sources",
}

__getattr__ = lazy_names(__name__, _LAZY)
