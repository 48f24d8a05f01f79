"""Crash-safe small writes: temporary file, fsync, atomic rename, directory fsync."""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

TEMP_PREFIX = ".tmp-"
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def temp_name() -> str:
    """A fresh temporary name; `is_temp` recognises it so a crash's leftovers can be cleaned."""
    return f"{TEMP_PREFIX}{secrets.token_hex(6)}"


def is_temp(name: str) -> bool:
    return name.startswith(TEMP_PREFIX)


def fsync_dir(dir_fd: int) -> None:
    """Make renames and unlinks in a directory durable."""
    os.fsync(dir_fd)


def write_atomic(dir_fd: int, name: str, data: bytes) -> None:
    """Replace `name` in `dir_fd` with `data` so readers see the old or the new bytes, never a mix."""
    tmp = temp_name()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    fsync_dir(dir_fd)


def make_dirs(path: Path) -> None:
    """Create `path` and missing parents, fsyncing each parent that gained an entry."""
    missing: list[Path] = []
    probe = path
    while not probe.is_dir():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir()
        except FileExistsError:
            continue
        parent = os.open(directory.parent, DIR_FLAGS)
        try:
            fsync_dir(parent)
        finally:
            os.close(parent)


@contextlib.contextmanager
def open_dir(path: Path) -> Iterator[int]:
    """A directory file descriptor, closed on exit."""
    fd = os.open(path, DIR_FLAGS)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked_dir(path: Path, *, wait: bool = True) -> Iterator[int | None]:
    """Hold an exclusive flock on a directory; yields its fd, or None when `wait` is off and it is busy.

    One lock per session directory serialises writers across processes (the kernel and a
    terminal `undo`) and makes cleaning a crash's leftovers safe: nobody is mid-write.
    """
    with open_dir(path) as fd:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
