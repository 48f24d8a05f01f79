"""The one undo path every front end takes (the notebook, `Agent`, the CLI): put a turn's
files, cells and kernel variables back, asking first where the user changed them since; what
it did told once, for the user (`undo_lines`: Markdown, `plain_line`) and for the model
(`undo_note`: the `<system-note>` the next prompt carries)."""

from __future__ import annotations

from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellSources,
    restore_in_file,
    sources_in_file,
)
from larik_jupyter.checkpoint.store import CheckpointStore, UndoResult
from larik_jupyter.llm.messages import Usage
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session
from larik_jupyter.tools.kernel_undo import kernel_snapshots


def undo_turn(
    checkpoints: CheckpointStore,
    *,
    cells: CellRestorer = restore_in_file,
    sources: CellSources = sources_in_file,
    force: bool = False,
    skip_changed: bool = False,
) -> UndoResult:
    """Undo the newest turn that changed files, cells or kernel variables (see
    `CheckpointStore.undo` for `force` and `skip_changed`): its files and cells, then the
    variables this process holds snapshots of (none in a process that did not run the turn,
    such as the CLI: they are reported gone). When the result lists files changed since the
    turn, nothing was done."""
    result = checkpoints.undo(cells, sources, force=force, skip_changed=skip_changed)
    if result.changed:
        return result
    done = kernel_snapshots(checkpoints.session_id).restore(result.turn, result.variables, keep=not result.ok)
    result.restored_variables, result.removed_variables = done.restored, done.removed
    result.unrestored_variables, result.lost_variables = done.not_restored, done.gone
    return result


def undo_note(result: UndoResult) -> str | None:
    """The `<system-note>` telling the model what `result` put back (None: nothing)."""
    sentences = []
    if result.restored:
        sentences.append(
            f"The user reverted the file changes of {result.label}; these files are back "
            f"to their state before that turn: {', '.join(result.restored)}. Re-read them "
            "before relying on their content."
        )
    if result.restored_cells:
        sentences.append(
            f"The user reverted the notebook cells {result.label} changed; "
            + "; ".join(f"{path}: {n} cell(s), in {where}" for path, n, where in result.restored_cells)
            + ". Read those notebooks again before editing their cells."
        )
    if result.skipped:
        sentences.append(
            f"The user changed these files or cells again after {result.label} and kept them as "
            f"they are now (not reverted): {', '.join(result.skipped)}."
        )
    if variables := result.variables_text():
        sentences.append(
            f"The user reverted {result.label} in the kernel: {variables}. Inspect these "
            "variables again before relying on their values."
        )
    return "<system-note>" + " ".join(sentences) + "</system-note>" if sentences else None


def cells_line(path: str, count: int, where: str) -> str:
    """What undo did to one notebook's cells, e.g. `restored 3 cells of nb.ipynb in the open
    notebook (save it to write the file)`."""
    line = f"restored {count} cell{'s' if count != 1 else ''} of `{path}` in {where}"
    return line + (" (save it to write the file)" if where == "the open notebook" else "")


def undo_lines(result: UndoResult, again: str = "/undo") -> list[str]:
    """One undone turn as Markdown lines (the `/undo` output; the undo panel shows them as
    plain text, `plain_line`): files, directories and kernel variables; for a turn
    left alone because the user changed its files since, which ones and how to go on (`again`:
    the command to repeat with `--force` or `--skip-changed`)."""
    which = result.label
    if result.changed:
        return [
            f"{which.capitalize()} was **not undone**: these files changed since that turn, and "
            "undoing it would overwrite those changes:",
            *[f"- changed since: `{path}`" for path in result.changed],
            f"Run `%larik {again} --force` to restore them anyway (the later changes are lost), "
            f"or `%larik {again} --skip-changed` to keep them as they are and undo the rest.",
        ]
    lines = [f"Undid {which}." if result.ok else f"{which.capitalize()} was only partly undone:"]
    lines += [f"- restored `{path}`" for path in result.restored]
    lines += [f"- {cells_line(path, n, where)}" for path, n, where in result.restored_cells]
    lines += [f"- kept as you changed it since: `{path}`" for path in result.skipped]
    lines += [f"- **not restored** `{path}`: {reason}" for path, reason in result.refused]
    lines += [f"- removed `{path}/` (created by the turn)" for path in result.removed_dirs]
    lines += [f"- kept `{path}/`: {reason}" for path, reason in result.kept_dirs]
    if variables := result.variables_text():
        lines.append(f"- {variables}")
    return lines


def plain_line(line: str) -> str:
    """An `undo_lines` line without its Markdown (code spans, bold)."""
    return line.replace("`", "").replace("**", "")


def record_note(session: Session, pending: str | None, note: str, model: str | None) -> str:
    """Add `note` to the `pending` one and record the sum in `session` (a usage entry with no
    tokens, `model` unchanged), so the next prompt carries it even after a restart; returns it."""
    combined = f"{pending}\n{note}" if pending else note
    session.append(Entry(type="usage", usage=Usage(), model=model, note=combined), sync=True)
    return combined
