"""The one undo path every front end takes (the notebook, `Agent`, the CLI): put a turn's
files, cells and kernel variables back, asking first where the user changed them since, and
the `<system-note>` that tells the model with the next prompt."""

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


def record_note(session: Session, pending: str | None, note: str, model: str | None) -> str:
    """Add `note` to the `pending` one and record the sum in `session` (a usage entry with no
    tokens, `model` unchanged), so the next prompt carries it even after a restart; returns it."""
    combined = f"{pending}\n{note}" if pending else note
    session.append(Entry(type="usage", usage=Usage(), model=model, note=combined), sync=True)
    return combined
