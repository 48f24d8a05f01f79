"""The compact notebook context a prompt carries: which notebook, what ran, the last error.

Which notebook the kernel belongs to comes from what the front end tells the kernel:
Jupyter's `JPY_SESSION_NAME` (ipykernel copies it to `__session__`), VS Code's
`__vsc_ipynb_file__`. Without them it is unknown, and the context says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larik_jupyter.api import Env, Tag, TextBlock, cell_tag, tagged
from larik_jupyter.api import wrap_in_envelope as wrap
from larik_jupyter.frontends.notebook.capture import CapturedCell, KernelCapture

RECENT_CELLS = 5
FIRST_LINES = 2
# The most source a prompt records of the cells run before it (the newest kept).
RECORDED_CHARS = 256_000
_LARIK = ("%larik", "%%larik")


@dataclass(frozen=True)
class KernelNotebook:
    """The kernel's notebook, or `path` None when no front end said."""

    path: Path | None
    source: str = ""


def notebook_from_hints(namespace: Mapping[str, Any], cwd: Path) -> KernelNotebook:
    """Find the notebook from what the front end set; relative names are tried against cwd."""
    candidates = [
        ("__vsc_ipynb_file__", namespace.get("__vsc_ipynb_file__")),
        ("JPY_SESSION_NAME", os.environ.get("JPY_SESSION_NAME")),
        ("__session__", namespace.get("__session__")),
    ]
    for source, value in candidates:
        if not isinstance(value, str) or not value.endswith(".ipynb"):
            continue
        given = Path(value).expanduser()
        # JPY_SESSION_NAME may be relative to the server's root rather than the kernel's cwd.
        for path in (given,) if given.is_absolute() else (cwd / given, cwd / given.name):
            if path.is_file():
                return KernelNotebook(path.resolve(), source)
    return KernelNotebook(None)


def _first_lines(source: str) -> str:
    lines = [line for line in source.strip().splitlines() if line.strip()]
    shown = " ⏎ ".join(line.strip()[:100] for line in lines[:FIRST_LINES])
    return shown + (" ⏎ …" if len(lines) > FIRST_LINES else "")


def _row(cell: CapturedCell) -> str:
    where = f"[{cell.execution_count}]" + (f" id {cell.cell_id}" if cell.cell_id else "")
    row = f"{where}: {_first_lines(cell.source)}"
    if cell.error is not None:
        row += f"  → raised {cell.error.name}"
    elif cell.displayed:
        row += "  → displayed " + "; ".join(dict.fromkeys(cell.displayed))
    return row


def notebook_context(
    capture: KernelCapture | None, notebook: KernelNotebook, *, since: int, nonce: str, cwd: Path
) -> str:
    """The context block: the notebook's path, the last few cells, and the last error in full
    when it happened after execution count `since` (the previous prompt's)."""
    return _context(capture, notebook, since=since, nonce=nonce, cwd=cwd)[0]


def context_block(
    capture: KernelCapture | None, notebook: KernelNotebook, *, since: int, nonce: str, cwd: Path, env: Env
) -> TextBlock:
    """`notebook_context` as the prompt's block, the last error's part tagged with what the
    failing cell's code read (the egress door withholds it under a restricting policy)."""
    text, failed = _context(capture, notebook, since=since, nonce=nonce, cwd=cwd)
    block = TextBlock(text=text)
    if failed is None:
        return block
    start, end, source = failed
    tag = cell_tag(env, source)
    return tagged(block, Tag(spans=[(start, end, tag.sources)], views=tag.views)) if tag else block


def _context(
    capture: KernelCapture | None, notebook: KernelNotebook, *, since: int, nonce: str, cwd: Path
) -> tuple[str, tuple[int, int, str] | None]:
    """The context text, and where its last error stands in it with the failing cell's source."""
    if notebook.path is not None:
        rel = os.path.relpath(notebook.path, cwd) if notebook.path.is_relative_to(cwd) else str(notebook.path)
        lines = [f"Notebook: {rel} (this kernel's notebook, from {notebook.source})"]
    else:
        lines = [
            "Notebook: unknown. The front end did not tell this kernel which notebook it belongs "
            "to; ask the user for its path before using notebook_read or notebook_edit."
        ]
    cells = [c for c in (capture.cells if capture else []) if not c.source.lstrip().startswith(_LARIK)]
    if cells:
        lines.append("Cells run in this kernel, oldest first (execution count, cell id, first lines):")
        lines += [_row(c) for c in cells[-RECENT_CELLS:]]
    else:
        lines.append("No cells have run in this kernel since the extension was loaded.")
    failed = next((c for c in reversed(cells) if c.error is not None), None)
    if failed is not None and (failed.execution_count or 0) > since:
        assert failed.error is not None
        where = f"cell [{failed.execution_count}]" + (f" (id {failed.cell_id})" if failed.cell_id else "")
        lines.append(f"Last error, raised by {where} after the previous prompt:")
        error = failed.error
        lines.append(wrap(nonce, where, f"{error.name}: {error.value}\n{error.traceback}\nCell source:\n{failed.source}"))
        text = "<notebook-context>\n" + "\n".join(lines) + "\n</notebook-context>"
        end = len(text) - len("\n</notebook-context>")
        return text, (end - len(lines[-1]), end, failed.source)
    return "<notebook-context>\n" + "\n".join(lines) + "\n</notebook-context>", None


def cells_ran(shell: Any, capture: KernelCapture | None, *, after: int) -> list[dict[str, Any]]:
    """The cells the user ran after execution count `after` and before the running one, from
    IPython's input history (so cells run before `%load_ext` count too), with the error each
    raised where the capture saw it; `%larik` cells left out, at most `RECORDED_CHARS` of
    source (the newest kept). What a branch notebook and replay start from."""
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    now = getattr(shell, "execution_count", 0)
    if not isinstance(history, list) or not isinstance(now, int):
        return []
    errors = {c.execution_count: c.error for c in (capture.cells if capture else []) if c.error is not None}
    cells: list[dict[str, Any]] = []
    size = 0
    for count in range(min(now, len(history)) - 1, after, -1):
        source = history[count]
        if not isinstance(source, str) or not source.strip() or source.lstrip().startswith(_LARIK):
            continue
        size += len(source)
        if size > RECORDED_CHARS:
            break
        cell: dict[str, Any] = {"count": count, "source": source}
        if (error := errors.get(count)) is not None:
            cell["error"] = f"{error.name}: {error.value}"
        cells.append(cell)
    return cells[::-1]
