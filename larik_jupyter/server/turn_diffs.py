"""A session's undoable turns with one unified diff per file (`checkpoint.diffs`), for the sidebar's undo list."""

from __future__ import annotations

import os
from pathlib import Path

from larik_jupyter.agent.undo import UndoReport
from larik_jupyter.checkpoint.diffs import cell_diffs, read_current, turn_diffs
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.errors import LarikError
from larik_jupyter.paths import project_root
from larik_jupyter.server.schema import CheckpointFile, Checkpoints, CheckpointTurn
from larik_jupyter.session.summary import summary

_MAX_DIFF_CHARS = 200_000


def _current(project: Path, server_root: Path, path: str) -> bytes | None:
    target = Path(os.path.realpath(project / path))
    if server_root != target and server_root not in target.parents:
        raise LarikError(f"{path} is outside the server root, so its contents are not shown.")
    return read_current(project, path)


def checkpoints(session_id: str, cwd: Path, server_root: str, session_path: Path | None = None) -> Checkpoints:
    """The turns of `session_id` that changed files, newest first, each file with its diff, and
    the prompts an undo put back (`undone`, read from the session file at `session_path`)."""
    project = project_root(cwd)
    root = Path(os.path.realpath(server_root))
    result = [
        CheckpointTurn(
            turn=turn.turn,
            prompt=turn.prompt,
            files=[CheckpointFile(path=f.path, existed=f.existed, diff=f.diff or f"({f.error})\n") for f in files]
            # A notebook cell the turn changed in the open notebook, as `PATH#ID`.
            + [CheckpointFile(path=f"{c.path}#{c.cell_id}", existed=c.change != "inserted", diff=c.diff)
               for c in cell_diffs(turn, limit=_MAX_DIFF_CHARS)],
        )
        for turn, files in turn_diffs(
            CheckpointStore(session_id, project), lambda path: _current(project, root, path), limit=_MAX_DIFF_CHARS
        )
        # Turns that changed only kernel variables have nothing to show here; the kernel undoes them.
        if files or turn.notebooks
    ]
    undone = [p.number for p in summary(session_path).prompts if p.undone] if session_path is not None else []
    return Checkpoints(
        id=session_id, turns=result[::-1], empty=UndoReport().nothing_left(session_id), undone=undone
    )
