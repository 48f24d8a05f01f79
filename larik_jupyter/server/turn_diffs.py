"""A session's undoable turns with one unified diff per file, for the sidebar's undo list."""

from __future__ import annotations

import os
from pathlib import Path

from larik_jupyter.checkpoint.store import CheckpointStore, TurnInfo
from larik_jupyter.errors import LarikError
from larik_jupyter.paths import project_root
from larik_jupyter.server.schema import CheckpointFile, Checkpoints, CheckpointTurn
from larik_jupyter.session.regular import read_regular
from larik_jupyter.tools.diff import snapshot_diff

_MAX_DIFF_CHARS = 200_000


def _current(project: Path, server_root: Path, path: str) -> bytes | None:
    target = Path(os.path.realpath(project / path))
    if server_root != target and server_root not in target.parents:
        raise LarikError(f"{path} is outside the server root, so its contents are not shown.")
    if not os.path.lexists(target):
        return None
    return read_regular(target)  # never blocks on a FIFO; refuses what is not a regular file


def _turn(
    store: CheckpointStore, turn: TurnInfo, later: list[TurnInfo], project: Path, server_root: Path
) -> CheckpointTurn:
    files = []
    for info in turn.files:
        try:
            before = store.original_bytes(turn.turn, info.path)
            # What the turn left behind: the snapshot the next turn took of the same file, else now.
            successor = next((t for t in later if any(f.path == info.path for f in t.files)), None)
            if successor is not None:
                after = store.original_bytes(successor.turn, info.path)
            else:
                after = _current(project, server_root, info.path)
            diff = snapshot_diff(info.path, before, after, limit=_MAX_DIFF_CHARS)
        except LarikError as exc:
            diff = f"({exc})\n"
        files.append(CheckpointFile(path=info.path, existed=info.existed, diff=diff))
    return CheckpointTurn(turn=turn.turn, files=files)


def checkpoints(session_id: str, cwd: Path, server_root: str) -> Checkpoints:
    """The turns of `session_id` that changed files, newest first, each file with its diff."""
    project = project_root(cwd)
    store = CheckpointStore(session_id, project)
    turns = store.turns()
    root = Path(os.path.realpath(server_root))
    result = [_turn(store, turn, turns[i + 1 :], project, root) for i, turn in enumerate(turns)]
    return Checkpoints(id=session_id, turns=result[::-1])
