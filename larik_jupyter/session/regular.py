"""Opening a session file only when it is a regular file: never through a symlink, never
blocking on a FIFO, never reading a directory or a device."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from larik_jupyter.errors import LarikError
from larik_jupyter.paths import file_kind

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class UnreadableFileError(LarikError):
    """A session path that is not a regular file (or cannot be opened); it is never read."""


def not_regular(path: Path, mode: int) -> UnreadableFileError:
    """The error for `path` whose `lstat` mode is not a regular file."""
    advice = (
        "session files are never read through links, so give the file's real path"
        if stat.S_ISLNK(mode)
        else "only regular session files (.jsonl) are read"
    )
    return UnreadableFileError(f"{path} is {file_kind(mode)}, not a regular file; {advice}.")


def check_regular(path: Path) -> os.stat_result:
    """`lstat` of `path`, refusing anything but an existing regular file."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError) as exc:
        raise UnreadableFileError(f"Cannot read {path}: {_reason(exc)}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise not_regular(path, st.st_mode)
    return st


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading, if it is a regular file: checked before opening (so a device
    is never opened) and again on the descriptor (so a swap in between is caught)."""
    path = Path(path)
    before = check_regular(path)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        raise UnreadableFileError(f"Cannot read {path}: {_reason(exc)}.") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, st.st_mode)
        if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise UnreadableFileError(f"{path} was replaced while it was being opened; try again.")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of regular file `path` (see `open_regular`)."""
    with open_regular(path) as f:
        return f.read()


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        if exc.errno is not None and exc.errno == getattr(os, "ELOOP", -1):
            return "it is a symbolic link, and session files are never read through links"
        return exc.strerror or str(exc)
    return str(exc)
