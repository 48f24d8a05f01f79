"""Putting one captured file back, or removing it, without ever writing through a symlink."""

from __future__ import annotations

import contextlib
import hashlib
import os

from larik_jupyter.checkpoint.blobs import copy_verified
from larik_jupyter.checkpoint.durable import Barrier
from larik_jupyter.checkpoint.manifest import FileRecord
from larik_jupyter.checkpoint.safepath import DirWalk, entry_state, refuse_unsafe_entry

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _temp_for(name: str) -> str:
    # Fixed per target, so a retry after a crash replaces the leftover instead of adding one.
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f".larik-undo-{digest}.tmp"


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
    _replace(dir_fd, name, record, blob_fd)
    barrier.add(dir_fd)


def _replace(dir_fd: int, name: str, record: FileRecord, blob_fd: int) -> None:
    tmp = _temp_for(name)
    try:
        fd = os.open(tmp, _CREATE, 0o600, dir_fd=dir_fd)
    except FileExistsError:  # a crashed undo's leftover
        os.unlink(tmp, dir_fd=dir_fd)
        fd = os.open(tmp, _CREATE, 0o600, dir_fd=dir_fd)
    try:
        try:
            copy_verified(blob_fd, fd, record.size or 0, record.sha256 or "")
            os.fchmod(fd, (record.mode if record.mode is not None else 0o644) & 0o777)
        finally:
            os.close(fd)
        # rename replaces the directory entry itself: a symlink swapped in after the check
        # is replaced, never followed.
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
