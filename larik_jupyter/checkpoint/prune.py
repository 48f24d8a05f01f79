"""Retention: delete turn snapshots older than `checkpoint_retention_days`, across all projects."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from larik_jupyter import paths
from larik_jupyter.checkpoint.durable import locked_dir
from larik_jupyter.checkpoint.manifest import MANIFEST
from larik_jupyter.checkpoint.sessiondir import clean_session, drop_turn, turn_dirs

_DAY = 86400.0


@dataclass
class PruneReport:
    """What a prune removed: (session id, turn) pairs, directories left empty, bytes freed."""

    turns: list[tuple[str, int]] = field(default_factory=list)
    directories: list[Path] = field(default_factory=list)
    bytes_freed: int = 0


# An empty sessions folder younger than this is left for a later prune.
EMPTY_GRACE_SECONDS = 60.0


def prune(days: int) -> PruneReport:
    """Delete every session's turns saved more than `days` days ago; negative keeps them forever.

    Zero deletes every turn. Checkpoint directories left empty are removed, and session
    directories empty for at least `EMPTY_GRACE_SECONDS`.
    A turn's age is its manifest's modification time, i.e. its last capture.
    """
    report = PruneReport()
    if days < 0:
        return report
    cutoff = time.time() - days * _DAY
    checkpoints = paths.data_dir() / "checkpoints"
    for session_dir in _subdirs(checkpoints):
        with locked_dir(session_dir) as session_fd:
            assert session_fd is not None
            clean_session(session_dir)
            for turn, turn_dir in turn_dirs(session_dir):
                if _saved_at(turn_dir) <= cutoff:
                    report.bytes_freed += drop_turn(session_fd, session_dir, turn)
                    report.turns.append((session_dir.name, turn))
        _remove_if_empty(session_dir, report)
    for slug_dir in _subdirs(paths.sessions_root()):
        for child in _subdirs(slug_dir):
            _remove_if_empty(child, report, settled=True)
        _remove_if_empty(slug_dir, report, settled=True)
    return report


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink())
    except FileNotFoundError:
        return []


def _saved_at(turn_dir: Path) -> float:
    for candidate in (turn_dir / MANIFEST, turn_dir):
        with contextlib.suppress(FileNotFoundError):
            return candidate.stat().st_mtime
    return time.time()


def _remove_if_empty(directory: Path, report: PruneReport, *, settled: bool = False) -> None:
    """Remove `directory` if it is empty; with `settled`, only when it has not changed lately:
    the prune runs in the background, and a sessions folder just made may be about to receive
    its first session."""
    try:
        if settled and time.time() - os.lstat(directory).st_mtime < EMPTY_GRACE_SECONDS:
            return
        os.rmdir(directory)
    except OSError:
        return
    report.directories.append(directory)
