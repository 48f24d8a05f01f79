"""Blob files: `<n>.bin` copies of original bytes, hashed while copied and verified on restore."""

from __future__ import annotations

import hashlib
import os

_CHUNK = 1 << 20


class BlobMismatch(Exception):
    """A blob's size or SHA-256 differs from its manifest record; carries a one-line reason."""


def blob_name(index: int) -> str:
    """The blob of the manifest's `index`-th file record."""
    return f"{index}.bin"


def copy_hashed(src_fd: int, dst_fd: int) -> tuple[int, str]:
    """Copy `src_fd` to `dst_fd` from their current offsets; returns (size, sha256 hex)."""
    digest = hashlib.sha256()
    size = 0
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    while True:
        n = os.readv(src_fd, [buffer])
        if not n:
            return size, digest.hexdigest()
        chunk = view[:n]
        digest.update(chunk)
        while chunk:
            chunk = chunk[os.write(dst_fd, chunk) :]
        size += n


def copy_verified(src_fd: int, dst_fd: int, size: int, sha256: str) -> None:
    """Copy a blob and raise `BlobMismatch` when it is not the `size` bytes hashing to `sha256`."""
    got_size, got_hash = copy_hashed(src_fd, dst_fd)
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
