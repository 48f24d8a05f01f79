"""Loading the extension into IPython: register the magics and the input transformer, start
the capture of what runs in the kernel and, in a kernel, the notebook bridge; nothing else.

The agent, widgets, pydantic models and SDKs load at first use; the SDK warm-up and the
retention prune run on a background thread once the loading cell has finished (`warmup.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from larik_jupyter.frontends.notebook.async_cells import install_transformers
from larik_jupyter.frontends.notebook.bridge import Bridge
from larik_jupyter.frontends.notebook.capture import KernelCapture
from larik_jupyter.frontends.notebook.consoles import watch_consoles
from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.frontends.notebook.running_request import running_client
from larik_jupyter.frontends.notebook.static import headless
from larik_jupyter.frontends.notebook.warmup import Warmup

if TYPE_CHECKING:
    from larik_jupyter.api import Agent
    from larik_jupyter.frontends.notebook.kernel import KernelSession

_magics: LarikMagics | None = None
_warmup: Warmup | None = None


def current() -> Agent | None:
    """The agent the `%larik` magics of this kernel use (None before the first prompt)."""
    return _magics.agent if _magics is not None else None


def kernel_session() -> KernelSession | None:
    """The kernel's side of the `%larik` magics (None before `%load_ext larik_jupyter`)."""
    return _magics.kernel if _magics is not None else None


def bridge() -> Bridge | None:
    """The kernel's end of the notebook bridge (None before `%load_ext`, or outside a kernel)."""
    return _magics.bridge if _magics is not None else None


def load(ipython: Any) -> None:
    """Register `%larik` and its input transformers in `ipython`; start nothing heavy."""
    global _magics, _warmup
    if _magics is not None and _magics.capture is not None:
        _magics.capture.stop()  # %reload_ext: one capture per kernel
    magics = _magics = LarikMagics(shell=ipython)
    magics.capture = KernelCapture(ipython)
    magics.capture.start()
    if getattr(ipython, "kernel", None) is not None:
        magics.bridge = Bridge(blocked=lambda: magics.pump.running)
        # The page that ran `%load_ext` applies the edits (until a `%larik` cell runs elsewhere).
        magics.bridge.lead(running_client(ipython))
        magics.bridge.register(hello=not headless(ipython))
        watch_consoles(ipython.kernel)
    ipython.register_magics(magics)
    install_transformers(ipython)
    if _warmup is None:  # once per kernel: a reload keeps the first load's background work
        _warmup = Warmup(lambda: magics.cwd, lambda: magics.model)
        _warmup.after_cell(ipython)
    magics.warmup = _warmup
