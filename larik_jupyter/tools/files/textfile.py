"""Reading and writing project text files the way every file tool does."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from larik_jupyter.errors import ToolError
from larik_jupyter.paths import file_kind
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.files.write import write_file

_SNIFF = 8192
MAX_TEXT_BYTES = 50 * 1024 * 1024
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def is_binary(data: bytes) -> bool:
    """Whether bytes look like a binary file (a NUL in the first 8 KiB, as git decides)."""
    return b"\0" in data[:_SNIFF]


def read_text(env: Env, path: Path) -> str:
    """The text of an existing file, refusing directories, missing, binary and non-regular
    files (a FIFO is never waited on)."""
    if path.is_dir():
        raise ToolError(f"{env.rel(path)} is a directory; use ls to list it.")
    if not path.exists():
        raise ToolError(f"{env.rel(path)} does not exist; check the path with ls or glob.")
    data = read_regular(path, MAX_TEXT_BYTES, env.rel(path))
    if is_binary(data):
        raise ToolError(f"{env.rel(path)} is a binary file; only text files can be read or edited.")
    # \r\n is kept as it is, and bytes that are not UTF-8 survive as surrogates, so an edit
    # writes back exactly the bytes it did not touch. Use `printable` before showing the text.
    return data.decode("utf-8", errors="surrogateescape")


def read_regular(path: Path, limit: int, shown: str) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes: opened without
    following a link or blocking, and checked on the open descriptor, so a FIFO, a device or
    a link swapped in is refused (`shown` names the file in the error), never read."""
    try:
        fd = os.open(path, _READ)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(
                f"{shown} is {file_kind(st.st_mode)}, not a regular file; only regular files can be read or edited."
            )
        if st.st_size > limit:
            raise ToolError(
                f"{shown} is {st.st_size // (1024 * 1024)} MB, too large to load; "
                "use grep, or bash with head, tail or sed, to look at parts of it."
            )
        os.set_blocking(fd, True)
        return f.read()


def text_bytes(rel: str, text: str) -> bytes:
    """`text` as the bytes of the file `rel` (undecodable bytes read as surrogates written back
    as they were); refused when UTF-8 cannot hold it (a lone surrogate from a bad JSON escape)."""
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"The new text for {rel} has a character UTF-8 cannot hold "
            f"({exc.reason} at position {exc.start}); the file was left unchanged."
        ) from exc


def write_text(env: Env, path: Path, text: str) -> None:
    """Write `text` to `path` after the checkpoint store has captured it."""
    if path.is_dir():
        raise ToolError(f"{env.rel(path)} is a directory; pass a file path.")
    data = text_bytes(env.rel(path), text)
    env.capture_before_write(path)
    write_file(env.root, path, data)
