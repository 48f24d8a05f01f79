"""larik_jupyter: a coding agent that lives in a Jupyter kernel.

`%load_ext larik_jupyter` registers the `%larik` magics; `larik_jupyter.Agent` is the
Python API. Importing the package stays cheap: everything loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from larik_jupyter.lazy import lazy_names

__version__ = "0.1.0"
__all__ = [
    "Agent",
    "AgentOptions",
    "KernelHost",
    "LarikError",
    "PermissionAnswer",
    "PermissionRequest",
    "SessionRecords",
    "TurnOutcome",
    "UndoReport",
    "UndoResult",
    "current",
    "load_ipython_extension",
]

if TYPE_CHECKING:
    from larik_jupyter.agent.options import AgentOptions
    from larik_jupyter.agent.outcome import TurnOutcome
    from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
    from larik_jupyter.agent.undo_report import UndoReport
    from larik_jupyter.api.agent import Agent
    from larik_jupyter.checkpoint.store import UndoResult
    from larik_jupyter.errors import LarikError
    from larik_jupyter.frontends.notebook.extension import current
    from larik_jupyter.records import SessionRecords
    from larik_jupyter.tools.host import KernelHost

# Where each public name lives; imported on first access so `import larik_jupyter` stays cheap.
_LAZY = {
    "Agent": "larik_jupyter.api.agent",
    "AgentOptions": "larik_jupyter.agent.options",
    "KernelHost": "larik_jupyter.tools.host",
    "LarikError": "larik_jupyter.errors",
    "PermissionAnswer": "larik_jupyter.agent.permissions",
    "PermissionRequest": "larik_jupyter.agent.permissions",
    "SessionRecords": "larik_jupyter.records",
    "TurnOutcome": "larik_jupyter.agent.outcome",
    "UndoReport": "larik_jupyter.agent.undo_report",
    "UndoResult": "larik_jupyter.checkpoint.store",
    "current": "larik_jupyter.frontends.notebook.extension",
}


__getattr__ = lazy_names(__name__, _LAZY)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext larik_jupyter`: register the magics; everything else waits for first use."""
    from larik_jupyter.frontends.notebook.extension import load

    load(ipython)

