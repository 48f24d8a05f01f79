"""Blob files: `<n>.bin` copies of original bytes, hashed while copied and verified on restore."""

from __future__ import annotations

import errno
import functools
import hashlib
import mmap
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from larik_jupyter.checkpoint.durable import start_writeback
from larik_jupyter.checkpoint.manifest import FileRecord
from larik_jupyter.checkpoint.sessiondir import is_blob_name

_CHUNK = 1 << 20
# From this size on, the kernel copies the bytes and a second thread hashes the blob's
# freshly written pages: SHA-256 (the slowest step) overlaps the copy and the disk writes.
_KERNEL_COPY_FROM = 1 << 20
_KERNEL_CHUNK = 8 << 20
# The kernel cannot copy between these descriptors; the buffered loop can.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class BlobMismatch(Exception):
    """A blob's size or SHA-256 differs from its manifest record; carries a one-line reason."""


def blob_name(index: int) -> str:
    """The blob of the manifest's `index`-th file record."""
    return f"{index}.bin"


def open_blob(record: FileRecord, turn_dir: Path | int) -> int:
    """Open the blob `record` names for reading, in its turn directory (a path or an open
    directory fd), never through a link; `BlobMismatch` when the record names no valid blob."""
    if not (
        record.blob and is_blob_name(record.blob) and record.size is not None and record.sha256
    ):
        raise BlobMismatch("its manifest record names no valid snapshot blob")
    if isinstance(turn_dir, int):
        return os.open(record.blob, _READ, dir_fd=turn_dir)
    return os.open(turn_dir / record.blob, _READ)


@functools.cache
def _hasher() -> ThreadPoolExecutor:
    # One worker for the process: the chunks of one file are hashed in submission order.
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="larik-blob-hash")


# Chunks mapped but not hashed yet; the copier waits beyond this so a slow hash cannot pile
# up thousands of mappings.
_IN_FLIGHT = threading.BoundedSemaphore(16)


class Digest:
    """A copy's size and SHA-256; for large files the hash may still be running on a worker."""

    def __init__(self, size: int, digest: hashlib._Hash, jobs: list[Future[None]]) -> None:
        self.size = size
        self._digest = digest
        self._jobs = jobs

    def sha256(self) -> str:
        """The lowercase hex SHA-256, waiting for the worker; re-raises a failed hash."""
        for job in self._jobs:
            job.result()
        return self._digest.hexdigest()


def copy_hashed(src_fd: int, dst_fd: int) -> Digest:
    """Copy `src_fd` to `dst_fd` from their current offsets and hash the bytes copied.

    Large files are copied by the kernel and hashed from the copy's own pages on a worker
    thread, so the hash describes exactly the stored bytes and overlaps the next copy;
    `dst_fd` must be open for reading too and may be closed before `Digest.sha256`.
    """
    expected = os.fstat(src_fd).st_size
    if expected >= _KERNEL_COPY_FROM:
        copied = _copy_in_kernel(src_fd, dst_fd)
        if copied is not None:
            return copied
    return _copy_through_buffer(src_fd, dst_fd, expected)


def _copy_through_buffer(src_fd: int, dst_fd: int, expected: int) -> Digest:
    digest = hashlib.sha256()
    size = 0
    # Sized to the file (one read and one short read at the end): zeroing a 1 MB buffer
    # would cost more than copying a small file.
    buffer = bytearray(min(_CHUNK, max(expected + 1, 1 << 16)))
    view = memoryview(buffer)
    while True:
        n = os.readv(src_fd, [buffer])
        if not n:
            return Digest(size, digest, [])
        chunk = view[:n]
        digest.update(chunk)
        while chunk:
            chunk = chunk[os.write(dst_fd, chunk) :]
        size += n


def _copy_in_kernel(src_fd: int, dst_fd: int) -> Digest | None:
    """copy_file_range in chunks, each hashed on the worker; None when the kernel declines."""
    digest = hashlib.sha256()
    start = os.lseek(dst_fd, 0, os.SEEK_CUR)
    size = 0
    jobs: list[Future[None]] = []
    while True:
        try:
            n = os.copy_file_range(src_fd, dst_fd, _KERNEL_CHUNK)
        except OSError as exc:
            if size == 0 and exc.errno in _NO_KERNEL_COPY:
                return None
            raise
        if not n:
            break
        # Start the disk writes now so the barrier before the manifest has little left to do.
        start_writeback(dst_fd, start + size, n)
        jobs.append(_hash_later(digest, dst_fd, start + size, n))
        size += n
    # A file that claims a size yet copies nothing (procfs and the like) is read instead.
    return Digest(size, digest, jobs) if size else None


def _hash_later(digest: hashlib._Hash, fd: int, offset: int, length: int) -> Future[None]:
    aligned = offset - offset % mmap.ALLOCATIONGRANULARITY
    _IN_FLIGHT.acquire()
    try:
        pages = mmap.mmap(fd, length + offset - aligned, prot=mmap.PROT_READ, offset=aligned)
    except BaseException:
        _IN_FLIGHT.release()
        raise
    return _hasher().submit(_hash_pages, digest, pages, offset - aligned)


def _hash_pages(digest: hashlib._Hash, pages: mmap.mmap, skip: int) -> None:
    try:
        with memoryview(pages) as view:
            digest.update(view[skip:])
    finally:
        pages.close()
        _IN_FLIGHT.release()


def copy_verified(src_fd: int, dst_fd: int, size: int, sha256: str) -> None:
    """Copy a blob and raise `BlobMismatch` when it is not the `size` bytes hashing to `sha256`."""
    copied = _copy_through_buffer(src_fd, dst_fd, size)
    got_size, got_hash = copied.size, copied.sha256()
    if got_size != size:
        raise BlobMismatch(
            f"its snapshot is {got_size} bytes instead of {size} (truncated or replaced)"
        )
    if got_hash != sha256:
        raise BlobMismatch("its snapshot no longer matches its SHA-256 (altered on disk)")


def read_verified(fd: int, size: int, sha256: str) -> bytes:
    """A whole blob's bytes, raising `BlobMismatch` when they are not what the manifest recorded."""
    chunks = []
    while chunk := os.read(fd, _CHUNK):
        chunks.append(chunk)
    data = b"".join(chunks)
    if len(data) != size:
        raise BlobMismatch(
            f"its snapshot is {len(data)} bytes instead of {size} (truncated or replaced)"
        )
    if hashlib.sha256(data).hexdigest() != sha256:
        raise BlobMismatch("its snapshot no longer matches its SHA-256 (altered on disk)")
    return data
