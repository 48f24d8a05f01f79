"""What a tool may touch: the working directory and project root, the checkpointer, the kernel
host, and which call is running."""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from larik_jupyter.egress.policy import PolicySet
from larik_jupyter.errors import ToolError
from larik_jupyter.tools.envelope import new_nonce
from larik_jupyter.tools.planned import Planned

if TYPE_CHECKING:
    from larik_jupyter.tools.host import KernelHost


class DiagnosticsSource(Protocol):
    """Language-server diagnostics; both calls are bounded in time and never raise."""

    def after_write(self, path: Path, text: str) -> str:
        """What the servers report about `path` now holding `text` ("" if none serves it)."""

    def report(self, path: Path | None) -> str:
        """The diagnostics of `path`, or of every file checked so far."""


# Runs a kernel tool's call where the kernel wants it (its main thread) and awaits the result.
InlineRunner = Callable[[Callable[[], Any]], Awaitable[Any]]


class Checkpointer(Protocol):
    """What the checkpoint store (`checkpoint/store.py` `CheckpointStore`) records before a tool
    changes something; each capture raising refuses the change. Tools never call it directly
    but through `Env.capture_before_write` / `Env.capture` and the notebook documents
    (`tools/notebook/document.py`), so a refusal becomes a `ToolError` and nothing changes."""

    def capture(self, path: Path, /) -> None:
        """Save the file `path` before it is written."""

    def capture_paths(self, paths: list[Path], /) -> None:
        """Save the files `paths` before a command that may change them."""

    def capture_cells(
        self, path: Path, order: list[str], cells: list[dict[str, Any]], created: list[str], /
    ) -> list[str]:
        """Record `cells` of the open notebook at `path` (cell ids `order` now) and the ids of
        cells about to be `created`, before an edit; the ids it recorded."""

    def forget_cells(self, path: Path, cell_ids: list[str], /) -> None:
        """Drop the records of `cell_ids` just taken, for an edit that did not land."""

    def note_cells(self, path: Path, after: dict[str, str | None], /) -> None:
        """What an edit that landed left of each cell's source (None: deleted), for undo's diff."""


class NoCheckpoints:
    """A `Checkpointer` that keeps nothing: tools run with it change things with no undo (a
    script or bench that builds an `Env` of its own)."""

    def capture(self, path: Path) -> None:
        pass

    def capture_paths(self, paths: list[Path]) -> None:
        pass

    def capture_cells(
        self, path: Path, order: list[str], cells: list[dict[str, Any]], created: list[str]
    ) -> list[str]:
        return []

    def forget_cells(self, path: Path, cell_ids: list[str]) -> None:
        pass

    def note_cells(self, path: Path, after: dict[str, str | None]) -> None:
        pass


@dataclass
class CallContext:
    """Which call is running, for what it marks and stops: `session_id`, `prompt_number`
    and `tool_use_id` go into the provenance of the cells it changes; `nonce` is the
    turn's nonce for the envelope around notebook data (`tools/envelope.py`); setting
    `stop_event` interrupts the running tool. Per turn (`Agent.arun`'s options): `notebook_path`
    is the notebook the kernel belongs to, when the front end said; `run_inline`, when set, is
    where kernel tools run (the kernel's main thread, when the loop runs on another one);
    `on_output`, when set, gets what the running call prints as it comes (any thread);
    `planned`: the change the call's approval showed, which the run makes while what it was
    worked out from is unchanged (`tools/planned.py`)."""

    session_id: str = ""
    prompt_number: int = 0
    tool_use_id: str = ""
    nonce: str = field(default_factory=new_nonce)
    stop_event: threading.Event = field(default_factory=threading.Event)
    notebook_path: Path | None = None
    run_inline: InlineRunner | None = None
    on_output: Callable[[str], None] | None = None
    planned: Planned[Any] | None = None


@dataclass
class Env:
    """The world one agent's tools run in: the working directory and the project root (what a
    path means and may reach), the `checkpoints` taken before changes, the kernel `host` (None
    for an agent outside Jupyter: every kernel-only tool then says so, `Tool.needs_kernel`),
    and the running `call`.

    `checkpoint_paths` are captured before every shell command. `allow_outside` says yes to
    reading a path outside `root` (a personal skill's folder); writes never leave the root
    (`file_write`). `diagnostics`, when set, is asked about every file a tool wrote.
    `keeps_variables`, set for an agent in a kernel that owns its turns: kernel calls snapshot
    the variables their code may change, for undo, into the session's `kernel_snapshots`
    (`tools/kernel/undo.py`, the one place they are kept).
    `egress` holds the session's egress rules: tools tag what they make with its sources and
    the views those rules allow (`egress/tags.py`); the door decides what leaves.
    """

    cwd: Path
    root: Path
    checkpoints: Checkpointer = field(default_factory=NoCheckpoints)
    host: KernelHost | None = None
    call: CallContext = field(default_factory=CallContext)
    checkpoint_paths: list[str] = field(default_factory=list)
    allow_outside: Callable[[Path], bool] | None = None
    diagnostics: DiagnosticsSource | None = None
    keeps_variables: bool = False
    egress: PolicySet = field(default_factory=PolicySet)

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
            self.checkpoints.capture(path)
        except Exception as exc:
            raise ToolError(
                f"Could not checkpoint {self.rel(path)} before writing it ({exc}); the file was left unchanged."
            ) from exc

    def capture(self, paths: list[Path]) -> None:
        """Let the checkpoint store save `paths` before a command; a refusal raises `ToolError`."""
        if not paths:
            return
        try:
            self.checkpoints.capture_paths(paths)
        except Exception as exc:
            names = ", ".join(self.rel(p) for p in paths[:5])
            raise ToolError(
                f"Could not checkpoint {names} before the command ({exc}); the command was not run."
            ) from exc
