"""What a Jupyter kernel offers the agent, in one object: built once when the extension loads
(`notebook/magics.py`, the bridge attached by `notebook/extension.py`) and handed to `Agent`
once; tools reach it as `env.host`. An agent without one (the CLI, the server, a plain script)
has no kernel, and the tools that need one say so in one sentence (`Tool.needs_kernel`). What
changes per turn (the kernel's own notebook, where kernel tools run) is the call's
(`tools/env.py` `CallContext`), not the host's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from larik_jupyter.bridge_protocol import Op, R, Request
from larik_jupyter.tools.fingerprint_cache import FingerprintCache
from larik_jupyter.tools.page_cells import CachedCells, PageCells


class OpenNotebooks(Protocol):
    """The notebooks a browser shows, reached through the notebook bridge."""

    @property
    def notebook_path(self) -> Path | None:
        """The notebook a browser shows this kernel in, when one said so."""

    def request(self, path: Path, op: Op[R], timeout: float = ...) -> R | None:
        """Apply `op` to the open notebook at `path` and return the browser's reply (the one
        `op` declares); None when
        no browser shows it (use the file). Raises `ToolError` when it did not land."""

    def post(self, path: Path, op: Request) -> None:
        """Send `op` without waiting for the reply."""

    @property
    def cells(self) -> PageCells:
        """What the browser last sent of each open notebook's cells."""

    def cached(self, path: Path, cell_ids: list[str]) -> CachedCells | None:
        """Those cells of the open notebook at `path` from `cells`, when all are held and a
        browser still shows it."""


@dataclass
class Displayed:
    """One display of the code a kernel call runs: its mime bundle, and the figure displayed
    when it was a matplotlib figure (a figure shown is not sent again unless drawn into after)."""

    data: dict[str, Any]
    figure: object | None = None


@dataclass
class KernelHost:
    """`namespace`: the kernel's user namespace (the `python` tool's globals, the variables
    undo restores); `display`: shows a rich value in the running cell from a tool's thread;
    `bridge`: the notebooks open in a browser (the `larik.bridge` comm), when one is connected;
    `run_cell`: how `notebook_run` runs a cell in this kernel; `fingerprints`: the variables'
    fingerprints after the last kernel call of the turn (`tools/kernel/variable_watch.py`);
    `displays`: around a `python` call's code, keeps what it displays (`display()`, `plt.show()`
    under the inline backend) for the call's result instead of the running cell's output."""

    namespace: dict[str, Any]
    display: Callable[[object], None] | None = None
    bridge: OpenNotebooks | None = None
    run_cell: Callable[..., Awaitable[Any]] | None = None
    fingerprints: FingerprintCache = field(default_factory=FingerprintCache)
    displays: Callable[[], AbstractContextManager[list[Displayed]]] | None = None
