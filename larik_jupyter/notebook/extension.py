"""Loading the extension into IPython: register the magics and, in a kernel, the notebook
bridge; prune old checkpoints once."""

from __future__ import annotations

from typing import Any

from IPython.display import Markdown, display

from larik_jupyter.api import Agent
from larik_jupyter.checkpoint.prune import prune
from larik_jupyter.config.layers import load_config
from larik_jupyter.errors import LarikError
from larik_jupyter.notebook.bridge import Bridge
from larik_jupyter.notebook.capture import KernelCapture
from larik_jupyter.notebook.magics import LarikMagics, async_cells

_pruned = False
_magics: LarikMagics | None = None


def current() -> Agent | None:
    """The agent the `%larik` magics of this kernel use (None before the first prompt)."""
    return _magics.agent if _magics is not None else None


def load(ipython: Any) -> None:
    global _pruned, _magics
    if _magics is not None and _magics.capture is not None:
        _magics.capture.stop()  # %reload_ext: one capture per kernel
    _magics = LarikMagics(shell=ipython)
    if getattr(ipython, "kernel", None) is not None:
        magics = _magics
        _magics.bridge = Bridge(blocked=lambda: magics.pump.running)
        _magics.bridge.register()
    _magics.capture = KernelCapture(ipython)
    _magics.capture.start()
    ipython.register_magics(_magics)
    if async_cells not in ipython.input_transformers_post:
        ipython.input_transformers_post.append(async_cells)
    if _pruned:
        return
    _pruned = True
    try:
        # Retention is a machine-wide setting: the loader honours it only from personal files.
        prune(load_config(_magics.cwd).config.checkpoint_retention_days)
    except (LarikError, OSError) as exc:
        display(Markdown(f"> Could not prune old checkpoints: {exc}"))
