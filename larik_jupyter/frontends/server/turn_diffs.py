"""A session's undo list (`agent.undo_list`, the one every view renders) with one unified diff
per file and cell (`checkpoint.diffs`), for the sidebar's "Undoable turns"."""

from __future__ import annotations

import os
from pathlib import Path

from larik_jupyter.api import (
    CheckpointStore,
    LarikError,
    project_root,
    read_current,
    turn_diffs,
    undo_list,
)
from larik_jupyter.frontends.server.schema import Checkpoints, CheckpointTurn

_MAX_DIFF_CHARS = 200_000


def _current(project: Path, server_root: Path, path: str) -> bytes | None:
    target = Path(os.path.realpath(project / path))
    if server_root != target and server_root not in target.parents:
        raise LarikError(f"{path} is outside the server root, so its contents are not shown.")
    return read_current(project, path)


def checkpoints(session_id: str, cwd: Path, server_root: str, session_path: Path | None = None) -> Checkpoints:
    """The undo list of `session_id`, newest first, each file and cell with its diff, and the
    prompts an undo put back (`undone`, read from the session file at `session_path`)."""
    project = project_root(cwd)
    root = Path(os.path.realpath(server_root))
    store = CheckpointStore(session_id, project)
    listed = undo_list(store, session_path)
    diffs = {
        info.turn: files
        for info, files in turn_diffs(store, lambda path: _current(project, root, path), limit=_MAX_DIFF_CHARS)
    }
    turns = [
        CheckpointTurn(
            turn=entry.turn, prompt=entry.prompt, label=entry.label,
            files=entry.changes(diffs.get(entry.turn, []), limit=_MAX_DIFF_CHARS),
            variables=[name for name, _ in entry.info.variables], state=entry.state, note=entry.note,
        )
        for entry in listed.turns
    ]
    return Checkpoints(id=session_id, turns=turns, empty=listed.nothing_left(), undone=list(listed.undone))
