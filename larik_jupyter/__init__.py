"""larik_jupyter: a coding agent that lives in a Jupyter kernel.

`%load_ext larik_jupyter` registers the `%larik` magics; `larik_jupyter.Agent` is the
Python API. Importing the package stays cheap: everything loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Agent", "current", "load_ipython_extension"]

if TYPE_CHECKING:
    from larik_jupyter.api import Agent


def __getattr__(name: str) -> Any:
    if name == "Agent":
        from larik_jupyter.api import Agent

        return Agent
    if name == "current":
        from larik_jupyter.notebook.extension import current

        return current
    raise AttributeError(f"module 'larik_jupyter' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext larik_jupyter`: register the magics; everything else waits for first use."""
    from larik_jupyter.notebook.extension import load

    load(ipython)

