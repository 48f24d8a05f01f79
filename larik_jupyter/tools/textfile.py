"""Reading and writing project text files the way every file tool does."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.file_write import write_file

_SNIFF = 8192
MAX_TEXT_BYTES = 50 * 1024 * 1024


def is_binary(data: bytes) -> bool:
    """Whether bytes look like a binary file (a NUL in the first 8 KiB, as git decides)."""
    return b"\0" in data[:_SNIFF]


def read_text(env: Env, path: Path) -> str:
    """The text of an existing file, refusing directories, missing and binary files."""
    if path.is_dir():
        raise ToolError(f"{env.rel(path)} is a directory; use ls to list it.")
    if not path.exists():
        raise ToolError(f"{env.rel(path)} does not exist; check the path with ls or glob.")
    size = path.stat().st_size
    if size > MAX_TEXT_BYTES:
        raise ToolError(
            f"{env.rel(path)} is {size // (1024 * 1024)} MB, too large to load; "
            "use grep, or bash with head, tail or sed, to look at parts of it."
        )
    data = path.read_bytes()
    if is_binary(data):
        raise ToolError(f"{env.rel(path)} is a binary file; only text files can be read or edited.")
    # \r\n is kept as it is, and bytes that are not UTF-8 survive as surrogates, so an edit
    # writes back exactly the bytes it did not touch. Use `printable` before showing the text.
    return data.decode("utf-8", errors="surrogateescape")


def write_text(env: Env, path: Path, text: str) -> None:
    """Write `text` to `path` after the checkpoint store has captured it."""
    if path.is_dir():
        raise ToolError(f"{env.rel(path)} is a directory; pass a file path.")
    try:
        data = text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"The new text for {env.rel(path)} has a character UTF-8 cannot hold "
            f"({exc.reason} at position {exc.start}); the file was left unchanged."
        ) from exc
    env.capture_before_write(path)
    write_file(env.root, path, data)
