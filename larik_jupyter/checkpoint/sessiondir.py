"""One session's checkpoint directory: its turns, dropping a turn, cleaning a crash's leftovers."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
from pathlib import Path

from larik_jupyter.checkpoint.durable import fsync_dir, is_temp, temp_name
from larik_jupyter.checkpoint.manifest import MANIFEST, ManifestError, read_manifest

_BLOB = re.compile(r"[0-9]+\.bin")


def is_turn_name(name: str) -> bool:
    """Whether a directory entry names a turn (`1`, `2`, …)."""
    return name.isascii() and name.isdigit() and not (len(name) > 1 and name.startswith("0"))


def is_blob_name(name: str) -> bool:
    """Whether a manifest's `blob` is a plain `<n>.bin` inside its turn directory."""
    return _BLOB.fullmatch(name) is not None


def turn_dirs(session_dir: Path) -> list[tuple[int, Path]]:
    """The turn directories of a session, oldest first (committed or not)."""
    try:
        names = os.listdir(session_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((int(n), session_dir / n) for n in names if is_turn_name(n))


def retire_turn(session_fd: int, turn: int) -> str:
    """Take a turn's snapshot out of sight in one durable rename (the drop commit); returns its new name.

    From then on the directory is a `.tmp-*` leftover: readers ignore it and anyone holding
    the session lock may delete it.
    """
    doomed = temp_name()
    os.rename(str(turn), doomed, src_dir_fd=session_fd, dst_dir_fd=session_fd)
    fsync_dir(session_fd)
    return doomed


def drop_turn(session_fd: int, session_dir: Path, turn: int) -> int:
    """Delete a turn's snapshot now: retire it, then remove it. Returns bytes freed."""
    return _remove(session_dir / retire_turn(session_fd, turn))


def remove_in_background(path: Path) -> threading.Thread:
    """Delete a retired snapshot on a worker thread; returns the thread.

    Unlinking blobs that already reached the disk is the slowest part of an undo, and
    nothing waits for it: the drop was committed by `retire_turn`. The thread is not a
    daemon, so a terminal `undo` finishes the job before exiting; a killed process leaves a
    `.tmp-*` directory that `clean_session` removes later.
    """
    worker = threading.Thread(
        target=shutil.rmtree, args=(path,), kwargs={"ignore_errors": True}, name="larik-drop"
    )
    worker.start()
    return worker


def clean_session(session_dir: Path) -> None:
    """Remove what a crash left: temporary files, uncommitted turns, blobs no manifest names.

    Call only while holding the session lock, so no writer is mid-commit.
    """
    for name in os.listdir(session_dir):
        if is_temp(name):
            _remove(session_dir / name)
    for _, turn_dir in turn_dirs(session_dir):
        try:
            manifest = read_manifest(turn_dir)
        except ManifestError:
            if not (turn_dir / MANIFEST).exists():
                _remove(turn_dir)
            continue
        named = {record.blob for record in manifest.files}
        for name in os.listdir(turn_dir):
            if is_temp(name) or (is_blob_name(name) and name not in named):
                _remove(turn_dir / name)


def _remove(path: Path) -> int:
    size = 0
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            for entry in path.rglob("*"):
                with contextlib.suppress(OSError):
                    size += entry.lstat().st_size
            shutil.rmtree(path, ignore_errors=True)
        else:
            size = path.lstat().st_size
            path.unlink()
    return size
