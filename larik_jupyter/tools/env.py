"""What a tool may touch: the working directory, the project root, checkpoint hooks, the kernel."""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from larik_jupyter.bridge_protocol import Request
from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.envelope import new_nonce

if TYPE_CHECKING:
    from larik_jupyter.tools.kernel_undo import KernelSnapshots
    from larik_jupyter.tools.live_cells import CachedCells, LiveCells


class DiagnosticsSource(Protocol):
    """Language-server diagnostics; both calls are bounded in time and never raise."""

    def after_write(self, path: Path, text: str) -> str:
        """What the servers report about `path` now holding `text` ("" if none serves it)."""

    def report(self, path: Path | None) -> str:
        """The diagnostics of `path`, or of every file checked so far."""


class LiveNotebooks(Protocol):
    """The notebooks a browser shows, reached through the notebook bridge."""

    @property
    def notebook_path(self) -> Path | None:
        """The notebook a browser shows this kernel in, when one said so."""

    def request(self, path: Path, op: Request, timeout: float = ...) -> dict[str, Any] | None:
        """Apply `op` to the open document of `path` and return the browser's reply; None when
        no browser shows it (use the file). Raises `ToolError` when it did not land."""

    def post(self, path: Path, op: Request) -> None:
        """Send `op` without waiting for the reply."""

    @property
    def cells(self) -> LiveCells:
        """What the browser last sent of each open document's cells."""

    def cached(self, path: Path, cell_ids: list[str]) -> CachedCells | None:
        """Those cells of the open document at `path` from `cells`, when all are held and a
        browser still shows it."""


# Runs a kernel tool's call where the kernel wants it (its main thread) and awaits the result.
InlineRunner = Callable[[Callable[[], Any]], Awaitable[Any]]


@dataclass
class Env:
    """The world one agent's tools run in.

    `before_write` is the checkpoint store's capture of one path and `capture_paths`
    its capture of several; either raising refuses the change. Tools never call them
    directly but through `capture_before_write` / `capture`, so a refusal becomes a
    `ToolError` and the file stays unchanged. `allow_outside` says yes to reading a path
    outside `root` (a personal skill's folder); writes never leave the root (`file_write`).
    `diagnostics`, when set, is asked about every file a tool wrote. `variables`, when set,
    snapshots the kernel variables the `python` tool's code may change, for undo.
    `notebook_path` is the notebook this kernel belongs to, when the front end said; `nonce`
    is the current turn's nonce for the envelope around notebook data (`tools/envelope.py`).
    `live`, when set, reaches the notebooks open in a browser (their edits land there, not in
    the file); `run_cell` runs a cell's source in the kernel for `notebook_run`.
    `capture_cells` (the checkpoint store's, like `before_write`) records cells of an open
    notebook before an edit changes them, `forget_cells` drops those records when the browser
    refused the edit, `note_cells` what the edit left (see `capture_cells_before_change`).
    `session_id`, `prompt` and `tool_use_id` say which call is running, for the provenance of
    the cells it changes. `run_inline`, when set, is where kernel tools run (the kernel's main
    thread, when the loop runs on another one).
    """

    cwd: Path
    root: Path
    before_write: Callable[[Path], None]
    capture_paths: Callable[[list[Path]], None]
    checkpoint_paths: list[str] = field(default_factory=list)
    namespace: dict[str, Any] | None = None
    display: Callable[[object], None] | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    allow_outside: Callable[[Path], bool] | None = None
    diagnostics: DiagnosticsSource | None = None
    variables: KernelSnapshots | None = None
    notebook_path: Path | None = None
    nonce: str = field(default_factory=new_nonce)
    live: LiveNotebooks | None = None
    run_cell: Callable[..., Awaitable[Any]] | None = None
    session_id: str = ""
    prompt: int = 0
    tool_use_id: str = ""
    run_inline: InlineRunner | None = None
    capture_cells: Callable[[Path, list[str], list[dict[str, Any]], list[str]], list[str]] | None = None
    forget_cells: Callable[[Path, list[str]], None] | None = None
    note_cells: Callable[[Path, dict[str, str | None]], None] | None = None

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.cwd = Path(os.path.realpath(self.cwd))

    def resolve(self, path: str, *, base: Path | None = None) -> Path:
        """The real path `path` names (relative to `base`, default cwd), refused outside the root."""
        if not path or "\0" in path:
            raise ToolError(
                f"The path {path!r} is empty or contains a NUL byte; pass a file path "
                "relative to the working directory."
            )
        given = Path(path).expanduser()
        if not given.is_absolute():
            given = (base or self.cwd) / given
        real = Path(os.path.realpath(given))
        if self.inside_root(real):
            return real
        if self.allow_outside is not None and self.allow_outside(real):
            return real
        how = "through a symlink " if os.path.normpath(given) != str(real) else ""
        raise ToolError(
            f"{path} points {how}outside the project root {self.root}; "
            "use a path inside the project or add a permission rule allowing it."
        )

    def inside_root(self, real: Path) -> bool:
        """Whether a resolved path lies in the project root."""
        return real == self.root or real.is_relative_to(self.root)

    def rel(self, real: Path) -> str:
        """How a path is shown: relative to the project root when inside it, else absolute."""
        if self.inside_root(real) and real != self.root:
            return real.relative_to(self.root).as_posix()
        return str(real)

    def capture_before_write(self, path: Path) -> None:
        """Let the checkpoint store save `path` before it changes; a refusal raises `ToolError`."""
        try:
            self.before_write(path)
        except Exception as exc:
            raise ToolError(
                f"Could not checkpoint {self.rel(path)} before writing it ({exc}); the file was left unchanged."
            ) from exc

    def capture(self, paths: list[Path]) -> None:
        """Let the checkpoint store save `paths` before a command; a refusal raises `ToolError`."""
        if not paths:
            return
        try:
            self.capture_paths(paths)
        except Exception as exc:
            names = ", ".join(self.rel(p) for p in paths[:5])
            raise ToolError(
                f"Could not checkpoint {names} before the command ({exc}); the command was not run."
            ) from exc

    def capture_cells_before_change(
        self, path: Path, order: list[str], cells: list[dict[str, Any]], created: list[str]
    ) -> list[str]:
        """Let the checkpoint store record `cells` of the open notebook at `path` (and the ids
        of cells about to be `created`) before an edit; the ids it recorded. A refusal raises
        `ToolError`."""
        if self.capture_cells is None:
            return []
        try:
            return self.capture_cells(path, order, cells, created)
        except Exception as exc:
            raise ToolError(
                f"Not landed: could not checkpoint the cells of {self.rel(path)} before the edit "
                f"({exc}); the notebook was left unchanged."
            ) from exc

    def forget_cells_not_changed(self, path: Path, cell_ids: list[str], why: ToolError) -> None:
        """Drop the records just taken of `cell_ids`, whose edit the browser refused (`why`);
        a failure to is added to `why`'s reason."""
        if self.forget_cells is None or not cell_ids:
            return
        try:
            self.forget_cells(path, cell_ids)
        except Exception as exc:
            raise ToolError(f"{why} Undo may also put back the cells' earlier state: {exc}") from exc
