"""notebook_run: a code cell of the kernel's own notebook, run in the kernel itself.

The kernel runs the cell (see `notebook/runner.py`, the host's `run_cell`); its outputs show in
the document as they come (`NotebookDocument.output_sink`: in the open notebook; a file gets
them at the end), land in it when the run ends, and come back to the model the way
notebook_read shows outputs. Its changes to the kernel's variables are watched, snapshotted
and undone as the python tool's are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.bridge_protocol import SetOutputs
from larik_jupyter.egress.tags import variable_tag
from larik_jupyter.errors import ToolError
from larik_jupyter.nbjson.cells import cell_number, source_text
from larik_jupyter.session.call_summary import CellPosition, cell_label
from larik_jupyter.tools.base import ToolResult
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.envelope import wrap
from larik_jupyter.tools.images import ImageCollector
from larik_jupyter.tools.kernel import (
    TIMEOUT_INPUT,
    VariableWatch,
    call_snapshots,
    cell_code,
    cell_names,
    effects_sentence,
    reach_of,
    receipts_found,
    timeout_of,
    variables_read,
    watch_receipts,
)
from larik_jupyter.tools.notebook.cells import NOTEBOOK_PATH, NotebookTool, notebook_path
from larik_jupyter.tools.notebook.document import kernel_notebook, with_provenance
from larik_jupyter.tools.notebook.file import REWRITTEN_NOTE
from larik_jupyter.tools.notebook.open import open_notebook
from larik_jupyter.tools.notebook.outputs import outputs_text
from larik_jupyter.tools.notebook.summaries import run_summary


@dataclass
class CellRun:
    """How a run ended: nbformat outputs, the execution count it took, and why it stopped."""

    outputs: list[dict[str, Any]] = field(default_factory=list)
    execution_count: int | None = None
    interrupted: str = ""  # "", "timeout" or "interrupted"
    error: bool = False
    cancelled: bool = False  # the turn was cancelled (Stop) while the cell ran


class NotebookRunTool(NotebookTool):
    name = "notebook_run"
    needs_kernel = True
    kernel_tool = True
    runs_user_code = True
    description = (
        "Run a code cell of this kernel's own notebook in the live kernel (sharing its "
        "variables), like the user pressing Shift+Enter: its outputs go into the cell and come "
        "back to you (text, errors, images). /undo puts back the kernel variables it changed "
        "where it could copy them, as for the python tool."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": NOTEBOOK_PATH,
            "cell_id": {"type": "string", "description": "The code cell's id (or cell-N)."},
            "timeout": TIMEOUT_INPUT,
        },
        "required": ["cell_id"],
    }
    inline = True

    def preview(self, env: Env, args: dict[str, Any]) -> str:
        nb = open_notebook(env, notebook_path(env, args, self.name))
        return source_text(nb.cells[nb.find(str(args.get("cell_id", "")))])

    @classmethod
    def cell_run(cls, args: Mapping[str, Any]) -> str | None:
        return str(args.get("cell_id") or "") or None

    def approval_question(
        self, args: Mapping[str, Any], preview: str, namespace: Mapping[str, Any] | None,
        position: CellPosition | None,
    ) -> tuple[str, str]:
        """`Run cell 3 of a.ipynb in your kernel?` and what its code may do to which of the
        kernel's variables, as read from its text (the preview)."""
        path = str(args.get("path") or "")
        cell_id = str(args.get("cell_id") or "")
        cell = cell_label(cell_id, path or None, position) if cell_id else "this cell"
        of = f" of {path.rsplit('/', 1)[-1]}" if path else ""
        said = "" if preview.startswith("(no preview") else f" {effects_sentence(preview, namespace or {})}"
        return f"Run {cell}{of} in your kernel?{said}", preview

    @classmethod
    def summary(cls, args: Mapping[str, Any], position: CellPosition | None = None) -> str:
        return run_summary(cls.name, args, position)

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        raise ToolError("notebook_run runs cells only during a turn in a Jupyter kernel.")

    async def aexecute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        host = env.host
        if host is None or host.run_cell is None:
            raise ToolError(
                "notebook_run needs a live Jupyter kernel; run the agent in a notebook to use it."
            )
        timeout = timeout_of(args, self.name)
        raw = notebook_path(env, args, self.name)
        # Reading the open notebook waits for the browser, whose reply this thread's loop delivers.
        cell_id = str(args["cell_id"])
        # Fresh, not the kernel's copy: what runs is the cell as the user sees it now.
        nb = await asyncio.to_thread(open_notebook, env, raw, [cell_id], fresh=True)
        own = kernel_notebook(env)
        if own is not None and Path(own).resolve() != nb.path:
            raise ToolError(
                f"notebook_run runs cells of this kernel's own notebook ({env.rel(Path(own).resolve())}), "
                f"not of {nb.rel}; run that notebook's cells from its own kernel."
            )
        cell = nb.cells[nb.find(cell_id)]
        if cell.get("cell_type") != "code":
            raise ToolError(f"notebook_run: cell {cell_id} of {nb.rel} is a {cell.get('cell_type')} cell, not code.")
        sink = await asyncio.to_thread(nb.output_sink, env, cell_id)
        source = source_text(cell)
        module = cell_code(source)
        names = cell_names(module)
        snapshots = call_snapshots(env)
        # A magic or shell line (`%run`, `!…`) could do anything: then every variable is watched.
        magic = any(line.lstrip().startswith(("%", "!")) for line in source.splitlines())
        reach = reach_of(None if magic else module, host.namespace)
        if snapshots is not None:  # the agent's own variables: whether the user touched them
            reach = reach.including(snapshots.own_names(host.namespace))
        watch = VariableWatch(host.namespace, names, module=module, cache=host.fingerprints, route=f"cell {cell_id}",
                              reach=reach)
        if snapshots is not None:
            snapshots.before_run(host.namespace, [n for n in names if n in reach], watch)
        try:
            with watch_receipts(host.namespace, this_thread=False) as counting:
                run: CellRun = await host.run_cell(source, timeout=timeout, stop=env.call.stop_event, changed=sink)
        finally:
            variables = watch.changes(host.namespace)
            if snapshots is not None:
                snapshots.after_run(host.namespace, variables)
        # Shielded: a Stop that cancels the turn must not leave the cell's outputs half written.
        op = SetOutputs(cell_id=cell_id, outputs=run.outputs, execution_count=run.execution_count,
                        metadata=with_provenance(cell, env).get("metadata", {}))
        landed = await asyncio.shield(asyncio.to_thread(nb.apply, env, op))
        if run.cancelled:
            raise asyncio.CancelledError  # the turn is ending; the cell is stopped and written
        images = ImageCollector()
        where = nb.where
        head = f"Ran cell {cell_id} of {nb.rel} as In [{run.execution_count}]; its outputs are in {where}"
        if run.interrupted == "timeout":
            head = (
                f"Cell {cell_id} of {nb.rel} (In [{run.execution_count}]) timed out after {timeout} s and "
                f"was stopped (KeyboardInterrupt); its outputs so far are below and in {where}"
            )
        elif run.interrupted:
            head += "; it was interrupted"
        body = outputs_text(run.outputs, images, cell_number(nb.find(cell_id))) if run.outputs else "(no output)"
        note = f"\n{REWRITTEN_NOTE}" if landed.rewritten else ""
        receipts, counted_note = receipts_found(counting, host.namespace)
        if counted_note:
            note += f"\n{counted_note}"
        if watched := watch.note():
            note += f"\n{watched}"
        text = images.text(f"{head}.\n{wrap(env.call.nonce, f'cell {cell_id} outputs', body)}{note}")
        return ToolResult(
            text,
            is_error=run.error or bool(run.interrupted),
            images=images.images,
            source=source,
            variables=variables,
            receipts=receipts,
            egress=variable_tag(env.egress, variables_read(module, host.namespace)) if module is not None else None,
        )
