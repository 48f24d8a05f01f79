"""Kernel truth: what each executed cell was, raised, returned and displayed, as the kernel saw it.

The file can disagree with what ran (cells run out of order, edited and not re-run), so the
agent learns from IPython itself: `pre_run_cell` / `post_run_cell` events, the display
publisher (what a cell displayed) and the display hook (its result's `text/plain`). Bounded
to the last `MAX_CELLS` cells and `MAX_BYTES`, oldest dropped; image data is kept only for
the last `IMAGE_CELLS` cells. Recording does no formatting of its own on the success path,
so a cell pays for a few attribute reads and appends (see bench/bench_capture.py).
"""

from __future__ import annotations

import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.api import IMAGE_TYPES, strip_ansi

MAX_CELLS = 50
MAX_BYTES = 20 * 1024 * 1024
IMAGE_CELLS = 3
MAX_SOURCE = 100_000
MAX_RESULT_TEXT = 2_000
MAX_IMAGE = 5 * 1024 * 1024


@dataclass
class CellError:
    name: str
    value: str
    traceback: str


@dataclass
class CapturedCell:
    """One executed cell: `displayed` lists the mime types of each display, `images` the
    (mime type, base64) pairs of its PNG/JPEG displays while it is among the newest."""

    execution_count: int | None
    source: str
    cell_id: str | None = None
    error: CellError | None = None
    result: str | None = None
    displayed: list[str] = field(default_factory=list)
    images: list[tuple[str, str]] = field(default_factory=list)

    @property
    def size(self) -> int:
        size = len(self.source) + len(self.result or "") + sum(len(d) for _, d in self.images)
        if self.error is not None:
            size += len(self.error.value) + len(self.error.traceback)
        return size


class KernelCapture:
    """Records the cells a shell executes; `start` hooks it in, `stop` takes it out."""

    def __init__(self, shell: Any, *, max_cells: int = MAX_CELLS, max_bytes: int = MAX_BYTES) -> None:
        self.shell = shell
        self.max_cells = max_cells
        self.max_bytes = max_bytes
        self.cells: deque[CapturedCell] = deque()
        self.bytes = 0
        self._current: CapturedCell | None = None
        self._restore: list[Callable[[], None]] = []

    def start(self) -> None:
        shell = self.shell
        shell.events.register("pre_run_cell", self._pre)
        shell.events.register("post_run_cell", self._post)
        self._restore += [
            lambda: shell.events.unregister("pre_run_cell", self._pre),
            lambda: shell.events.unregister("post_run_cell", self._post),
        ]
        self._wrap(shell.display_pub, "publish", self._published)
        self._wrap(shell.displayhook, "write_format_data", self._result)

    def stop(self) -> None:
        for undo in reversed(self._restore):
            undo()
        self._restore.clear()

    def _wrap(self, owner: Any, name: str, record: Callable[[dict[str, Any]], None]) -> None:
        original = getattr(owner, name)

        def wrapper(data: Any, *args: Any, **kwargs: Any) -> Any:
            if self._current is not None and isinstance(data, dict):
                record(data)
            return original(data, *args, **kwargs)

        own = name in vars(owner)  # an instance attribute (another wrapper) or the class's method
        setattr(owner, name, wrapper)
        self._restore.append(lambda: setattr(owner, name, original) if own else delattr(owner, name))

    # -- events ---------------------------------------------------------------------------

    def _pre(self, info: Any) -> None:
        source = info.raw_cell or ""
        self._current = CapturedCell(
            execution_count=None,
            source=source if len(source) <= MAX_SOURCE else source[:MAX_SOURCE],
            cell_id=getattr(info, "cell_id", None),
        )

    def _published(self, data: dict[str, Any]) -> None:
        cell = self._current
        assert cell is not None
        cell.displayed.append(", ".join(data))
        for media in IMAGE_TYPES:
            raw = data.get(media)
            if isinstance(raw, str) and len(raw) <= MAX_IMAGE:
                cell.images.append((media, raw))
                break

    def _result(self, data: dict[str, Any]) -> None:
        cell = self._current
        assert cell is not None
        text = data.get("text/plain")
        if isinstance(text, str):
            cell.result = text if len(text) <= MAX_RESULT_TEXT else text[:MAX_RESULT_TEXT] + " […]"
        others = [m for m in data if m != "text/plain"]
        if others:
            cell.displayed.append(", ".join(others))

    def _post(self, result: Any) -> None:
        cell, self._current = self._current, None
        if cell is None:
            return
        cell.execution_count = result.execution_count
        exc = result.error_in_exec or result.error_before_exec
        if exc is not None:
            cell.error = CellError(type(exc).__name__, str(exc), self._traceback(exc))
        self.cells.append(cell)
        self.bytes += cell.size
        self._trim()

    def _traceback(self, exc: BaseException) -> str:
        stb = getattr(self.shell, "_last_traceback", None)  # ipykernel keeps what it sent
        if not isinstance(stb, list) or not stb:
            try:
                stb = self.shell.InteractiveTB.structured_traceback(
                    type(exc), exc, exc.__traceback__, tb_offset=1
                )
            except Exception:
                stb = traceback.format_exception(exc)
        return strip_ansi("\n".join(stb))

    def _trim(self) -> None:
        for older in list(self.cells)[:-IMAGE_CELLS]:
            if older.images:
                self.bytes -= sum(len(d) for _, d in older.images)
                older.images = []
        while self.cells and (len(self.cells) > self.max_cells or self.bytes > self.max_bytes):
            self.bytes -= self.cells.popleft().size

    # -- queries --------------------------------------------------------------------------

    @property
    def last_count(self) -> int:
        """The execution count of the newest recorded cell (0 before any)."""
        return next((c.execution_count for c in reversed(self.cells) if c.execution_count), 0)
