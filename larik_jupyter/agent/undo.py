"""The one undo path every front end takes (the notebook, `Agent`, the CLI): put a turn's
files, cells and kernel variables back, asking first where the user changed them since, one
turn or each down to a prompt; bind a variable as a change of the last turn; and record in the
session what was undone and the note the next prompt carries. What it did is told by the
`UndoReport` it returns (`undo_report.py`)."""

from __future__ import annotations

from collections.abc import Callable

from larik_jupyter.agent.undo_list import UndoList, undo_list
from larik_jupyter.agent.undo_report import UndoReport
from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellSources,
    FileHolder,
    held_by_nobody,
    restore_in_file,
    sources_in_file,
)
from larik_jupyter.checkpoint.errors import CheckpointError, NothingToUndoError
from larik_jupyter.checkpoint.store import CheckpointStore, UndoResult
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Usage
from larik_jupyter.session.branch import check_prompt
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel import KernelSnapshots, kernel_snapshots
from larik_jupyter.tools.notebook import cell_restorer, cell_sources, file_holder


def undo_turn(
    checkpoints: CheckpointStore,
    *,
    cells: CellRestorer = restore_in_file,
    sources: CellSources = sources_in_file,
    force: bool = False,
    skip_changed: bool = False,
    holder: FileHolder = held_by_nobody,
) -> UndoReport:
    """Undo the turn the session's undo list names next (`UndoList.next`: the newest that
    changed files, cells or kernel variables still held; see `CheckpointStore.undo` for `force`
    and `skip_changed`): its files and cells, then the variables this process holds snapshots
    of. When the result lists files changed since the turn, nothing was done."""
    listed = undo_list(checkpoints)
    if listed.next is None:
        raise NothingToUndoError(listed.nothing_left())
    try:
        result = checkpoints.undo(cells, sources, force=force, skip_changed=skip_changed, passing=listed.passing,
                                  holder=holder)
    except NothingToUndoError:
        raise NothingToUndoError(listed.nothing_left()) from None
    if not result.changed:
        done = kernel_snapshots(checkpoints.session_id).restore(result.turn, result.variables, keep=not result.ok)
        result.restored_variables, result.removed_variables = done.restored, done.removed
        result.unrestored_variables, result.lost_variables = done.not_restored, done.gone
    return UndoReport((result,))


def undo_turns(
    checkpoints: CheckpointStore, env: Env, queue_note: Callable[[str], None], prompt_number: int | None, *,
    prompts: int, nothing_ok: bool = False, force: bool = False, skip_changed: bool = False,
) -> UndoReport:
    """Undo the newest turn, or with `prompt_number` each turn down to it (`undo_down_to`, of
    the session's `prompts`): files, cells where `env`'s kernel shows or keeps them, kernel
    variables; each report's note for the model goes to `queue_note`."""

    def newest() -> UndoReport:
        report = undo_turn(
            checkpoints, cells=cell_restorer(env), sources=cell_sources(env), force=force,
            skip_changed=skip_changed, holder=file_holder,
        )
        if note := report.system_note():
            queue_note(note)
        return report

    if prompt_number is None:
        return newest()
    return undo_down_to(
        checkpoints, prompt_number, prompts, newest, session_id=checkpoints.session_id, nothing_ok=nothing_ok
    )


def bind_variable(
    host: KernelHost | None, snapshots: KernelSnapshots | None, checkpoints: CheckpointStore, name: str, value: object
) -> None:
    """Bind kernel variable `name` to `value` as a change of the last turn, which undo puts
    back; see `Agent.bind`."""
    if host is None or snapshots is None:
        raise LarikError(f"Binding `{name}` needs a kernel; run the agent inside Jupyter (with a `host`).")
    existed = name in host.namespace
    snapshots.rebind(host.namespace, name, value)
    checkpoints.note_variables([(name, existed)])  # a failure says undo will not know


def undo_down_to(
    checkpoints: CheckpointStore, prompt_number: int, prompts: int, undo_newest: Callable[[], UndoReport], *,
    session_id: str, nothing_ok: bool = False,
) -> UndoReport:
    """Undo (`undo_newest`) every turn from the newest down to the one of prompt `prompt_number`
    (1-based, of the session's `prompts`, as `/rewind` counts), newest first, stopping after
    the first one not fully undone.

    Raises `NothingToUndoError` when no turn from that prompt on is left (unless
    `nothing_ok`), and `CheckpointError` naming what was undone when a turn cannot be undone
    at all or was saved without its prompt number."""
    check_prompt(session_id, prompt_number, prompts)
    results: list[UndoResult] = []
    listed: UndoList = undo_list(checkpoints)
    while (newest := listed.next) is not None:
        if newest.prompt is None:
            raise CheckpointError(UndoReport(tuple(results), prompt_number=prompt_number).stopped(
                f"turn {newest.turn} was saved without its prompt number (by an older "
                f"version), so it cannot be matched to prompt {prompt_number}; undo it on its own "
                "with `/undo`."
            ))
        if newest.prompt < prompt_number:
            break
        try:
            results += undo_newest()
        except CheckpointError as exc:
            raise CheckpointError(UndoReport(tuple(results), prompt_number=prompt_number).stopped(str(exc))) from None
        if not results[-1].ok:
            break
        listed = undo_list(checkpoints)
    report = UndoReport(tuple(results), prompt_number=prompt_number)
    if not results and not nothing_ok:
        raise NothingToUndoError(listed.nothing_left(prompt_number))
    return report


class RewindStopped(CheckpointError):
    """`rewind(prompt_number, files=True)` could not put every file back, so it made no branch; `results`
    are the turns it undid, the last one not fully."""

    def __init__(self, message: str, results: UndoReport) -> None:
        super().__init__(message)
        self.results = results


def record_note(session: Session, pending: str | None, note: str) -> str:
    """Add `note` to the `pending` one and record the sum in `session` (a usage entry with no
    tokens and no model, so it changes no model), so the next prompt carries it even after a
    restart; returns it."""
    combined = f"{pending}\n{note}" if pending else note
    session.append(Entry(type="usage", usage=Usage(), note=combined), sync=True)
    return combined


def record_undone(session: Session, report: UndoReport) -> None:
    """Record in `session` which prompts `report` undid (a usage entry with no tokens whose
    `undone` lists them): each turn whose snapshot was dropped, files skipped as asked
    included; a turn left as it was or only partly restored is not undone."""
    undone = sorted({r.prompt for r in report if r.ok and r.prompt is not None})
    if undone:
        session.append(Entry(type="usage", usage=Usage(), undone=undone), sync=True)
