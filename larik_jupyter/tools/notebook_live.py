"""Notebooks open in a browser: read from and edited in the live document, through `env.live`.

An open notebook's file lags behind its editor, and writing it behind the editor makes the next
save overwrite the edit (or raise a "file changed" dialog). So while a browser shows a notebook,
the notebook tools read the document the user sees and send each edit as one request that the
browser applies to its model and confirms; only closed notebooks are read and written on disk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.notebook_file import NotebookFile


def kernel_notebook(env: Env) -> Path | None:
    """The notebook this kernel belongs to: what the bridge says, else what the front end set."""
    from_bridge = env.live.notebook_path if env.live is not None else None
    return from_bridge or env.notebook_path


def live_notebook(env: Env, raw_path: str, cell_ids: list[str] | None = None) -> NotebookFile | None:
    """The open document of the notebook at `raw_path`, or None when no browser shows it;
    with `cell_ids`, only those of its cells (an edit of one cell in a large notebook then
    costs one cell's transfer, not the whole document's)."""
    if env.live is None:
        return None
    path = env.resolve(raw_path)
    if path.suffix != ".ipynb":
        return None
    op: dict[str, object] = {"op": "get"}
    if cell_ids is not None:
        op["cell_ids"] = cell_ids
    reply = env.live.request(path, op)
    if reply is None:
        return None
    data = reply.get("notebook")
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{env.rel(path)}: the browser sent no list of cells; read it again.")
    return NotebookFile(path, env.rel(path), "", data, " ", True, True, live=True)


def provenance(env: Env) -> dict[str, Any] | None:
    """The `larik` metadata of a cell the running call creates or changes (None outside a turn)."""
    if not env.session_id:
        return None
    mark: dict[str, Any] = {"session": env.session_id, "prompt": env.prompt}
    if env.tool_use_id:
        mark["tool_use_id"] = env.tool_use_id
    return mark


def with_provenance(cell: dict[str, Any], env: Env) -> dict[str, Any]:
    """`cell` carrying the running call's `larik` metadata (unchanged outside a turn)."""
    mark = provenance(env)
    if mark is None:
        return cell
    marked = dict(cell)
    marked["metadata"] = {**cell.get("metadata", {}), "larik": mark}
    return marked


def apply_live(env: Env, nb: NotebookFile, op: dict[str, Any]) -> list[str]:
    """Send one edit to the open document; the ids of the cells it produced."""
    assert env.live is not None
    reply = env.live.request(nb.path, op)
    if reply is None:
        raise ToolError(
            f"Not landed: {nb.rel} was closed in the browser before the edit reached it; "
            "read it again (it is now edited on disk) and retry."
        )
    return [str(i) for i in reply.get("cell_ids", [])]
