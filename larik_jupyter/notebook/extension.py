"""Loading the extension into IPython: register the magics, prune old checkpoints once."""

from __future__ import annotations

from typing import Any

from larik_jupyter.api import Agent
from larik_jupyter.checkpoint.prune import prune
from larik_jupyter.config.layers import load_config
from larik_jupyter.errors import LarikError
from larik_jupyter.notebook.commands import show_markdown
from larik_jupyter.notebook.magics import LarikMagics, install_transformers

_pruned = False
_magics: LarikMagics | None = None


def current() -> Agent | None:
    """The agent the `%larik` magics of this kernel use (None before the first prompt)."""
    return _magics.agent if _magics is not None else None


def load(ipython: Any) -> None:
    global _pruned, _magics
    _magics = LarikMagics(shell=ipython)
    ipython.register_magics(_magics)
    install_transformers(ipython)
    if _pruned:
        return
    _pruned = True
    try:
        # Retention is a machine-wide setting: the loader honours it only from personal files.
        prune(load_config(_magics.cwd).config.checkpoint_retention_days)
    except (LarikError, OSError) as exc:
        show_markdown(f"> Could not prune old checkpoints: {exc}")
