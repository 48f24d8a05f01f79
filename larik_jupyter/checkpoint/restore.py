"""Putting one captured file back or deleting it, and removing emptied directories, never via a symlink."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable

from larik_jupyter.checkpoint.blobs import copy_verified
from larik_jupyter.checkpoint.durable import Barrier, rename_filled
from larik_jupyter.checkpoint.manifest import FileRecord
from larik_jupyter.checkpoint.safepath import (
    DirWalk,
    PathRefused,
    entry_state,
    refuse_unsafe_entry,
)

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def temp_for(name: str, kind: str) -> str:
    """The temporary name beside `name` that replacing it goes through (`kind`: undo, write).

    Fixed per target, so a retry after a crash replaces the leftover instead of adding one."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f".larik-{kind}-{digest}.tmp"


def restore_file(
    walk: DirWalk, parts: tuple[str, ...], record: FileRecord, blob_fd: int | None, barrier: Barrier
) -> None:
    """Bring `parts` (below the walk's root) back to `record`: write the blob's bytes or delete the file.

    The change is durable only after `barrier.commit()`. Raises `PathRefused` for an unsafe
    path, `BlobMismatch` for a damaged snapshot, OSError otherwise; in every case the target
    entry is left as it was.
    """
    name = parts[-1]
    dir_fd = walk.parent(parts, create=record.existed)
    if dir_fd is None:
        return
    current = entry_state(dir_fd, name)
    if not record.existed:
        if current is not None:
            refuse_unsafe_entry(current, links_ok=True)
            os.unlink(name, dir_fd=dir_fd)
            barrier.add(dir_fd)
        return
    if current is not None:
        refuse_unsafe_entry(current)
    assert blob_fd is not None and record.size is not None and record.sha256 is not None
    mode = record.mode if record.mode is not None else 0o644
    replace_entry(
        dir_fd, name, temp_for(name, "undo"), mode,
        lambda fd: copy_verified(blob_fd, fd, record.size or 0, record.sha256 or ""),
    )
    barrier.add(dir_fd)


def replace_bytes(walk: DirWalk, parts: tuple[str, ...], data: bytes, mode: int, barrier: Barrier) -> None:
    """Replace the existing regular file at `parts` with `data` (a temporary file renamed over
    it, durable after `barrier.commit()`); raises `PathRefused` for an unsafe path or entry."""
    dir_fd = walk.parent(parts, create=False)
    current = entry_state(dir_fd, parts[-1]) if dir_fd is not None else None
    if dir_fd is None or current is None:
        raise PathRefused("no longer exists")
    refuse_unsafe_entry(current)
    replace_entry(dir_fd, parts[-1], temp_for(parts[-1], "undo"), mode, lambda fd: write_all(fd, data))
    barrier.add(dir_fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd`."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def remove_empty_dir(walk: DirWalk, parts: tuple[str, ...], barrier: Barrier) -> bool:
    """Remove the directory `parts` if it is empty; False when it is already gone.

    `rmdir` relative to its parent's fd never follows a symlink (a symlink in its place is
    not removed), and the kernel refuses a non-empty directory atomically, so a file added
    at any moment is never lost. Raises `PathRefused` when the directory is left alone.
    """
    dir_fd = walk.parent(parts, create=False)
    if dir_fd is None:
        return False
    try:
        os.rmdir(parts[-1], dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise PathRefused("is not empty") from None
        if exc.errno != errno.ENOTDIR:
            raise
        current = entry_state(dir_fd, parts[-1])
        if current is None:
            return False
        kind = "a symbolic link" if stat.S_ISLNK(current.st_mode) else "not a directory"
        raise PathRefused(f"is {kind} now") from None
    barrier.add(dir_fd)
    return True


def replace_entry(dir_fd: int, name: str, tmp: str, mode: int | None, fill: Callable[[int], None]) -> None:
    """Put a new file at `name` in `dir_fd`: `fill` writes it under `tmp`, which gets `mode`
    (None: the umask's default) and is renamed over `name`, replacing whatever entry is there
    (a symlink swapped in at any moment is replaced, never followed)."""
    # Private while written when its mode is set after; else what `open` gives a new file.
    perm = 0o600 if mode is not None else 0o666
    try:
        fd = os.open(tmp, _CREATE, perm, dir_fd=dir_fd)
    except FileExistsError:  # a crashed write's leftover
        os.unlink(tmp, dir_fd=dir_fd)
        fd = os.open(tmp, _CREATE, perm, dir_fd=dir_fd)

    def fill_with_mode(fd: int) -> None:
        fill(fd)
        if mode is not None:
            os.fchmod(fd, mode & 0o777)

    rename_filled(dir_fd, fd, tmp, name, fill_with_mode)
