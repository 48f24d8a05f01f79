"""A session's undoable turns with one unified diff per file, for the sidebar's undo list."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from larik_jupyter.checkpoint.store import CheckpointStore, TurnInfo
from larik_jupyter.errors import LarikError
from larik_jupyter.paths import project_root
from larik_jupyter.server.schema import CheckpointFile, Checkpoints, CheckpointTurn

_MAX_DIFF_CHARS = 200_000


def _text(data: bytes | None) -> list[str] | None:
    """The lines of `data` (empty for a missing file), or None when it is not UTF-8 text."""
    if data is None:
        return []
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def unified_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    """The diff from `before` to `after` (None: the file does not exist), capped in size."""
    old, new = _text(before), _text(after)
    if old is None or new is None:
        return "" if before == after else f"Binary file {path} changed\n"
    lines = difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
    )
    diff = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    if len(diff) > _MAX_DIFF_CHARS:
        return diff[:_MAX_DIFF_CHARS] + "\n… diff truncated\n"
    return diff


def _current(project: Path, server_root: Path, path: str) -> bytes | None:
    target = Path(os.path.realpath(project / path))
    if server_root != target and server_root not in target.parents:
        raise LarikError(f"{path} is outside the server root, so its contents are not shown.")
    try:
        return target.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


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
            diff = unified_diff(info.path, before, after)
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
