"""Crash-safe small writes: temporary file, fsync, atomic rename, directory fsync."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import functools
import os
import secrets
from collections.abc import Callable, Iterator
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

    def fill(fd: int) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)

    rename_filled(dir_fd, fd, tmp, name, fill)
    fsync_dir(dir_fd)


def rename_filled(dir_fd: int, fd: int, tmp: str, name: str, fill: Callable[[int], None]) -> None:
    """Write the new temporary file `fd` (named `tmp` in `dir_fd`) with `fill`, close it and
    rename it over `name`; rename replaces the directory entry itself, so a symlink swapped in
    at `name` is replaced, never followed. On any failure the temporary file is removed."""
    try:
        try:
            fill(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


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


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    func = getattr(ctypes.CDLL(name, use_errno=True), "syncfs", None) if name else None
    return func


@functools.cache
def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    name = ctypes.util.find_library("c")
    func = getattr(ctypes.CDLL(name, use_errno=True), "sync_file_range", None) if name else None
    if func is not None:
        func.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    return func


_SYNC_FILE_RANGE_WRITE = 2


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Start writing a range to disk without waiting, so a later `Barrier.commit` waits less.

    Only a hint: durability still comes from the barrier. A no-op where unsupported.
    """
    func = _sync_file_range()
    if func is not None:
        func(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


class Barrier:
    """One durability point for many writes: syncfs once per filesystem instead of fsync per file.

    Callers write without fsync, `add` a descriptor on each filesystem touched, and call
    `commit` before the step that must not outlive them (a manifest rename, dropping a
    snapshot). Without syncfs (non-Linux) it falls back to a global sync.
    """

    def __init__(self) -> None:
        self._fds: dict[int, int] = {}

    def add(self, fd: int) -> None:
        dev = os.fstat(fd).st_dev
        if dev not in self._fds:
            self._fds[dev] = os.dup(fd)

    def commit(self) -> None:
        syncfs = _syncfs()
        if syncfs is None:
            os.sync()
            return
        for fd in self._fds.values():
            if syncfs(fd) != 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> Barrier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
