"""Reading and writing project text files the way every file tool does."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.tools.base import ToolError
from larik_jupyter.tools.env import Env

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
    # newline="" semantics: keep \r\n as it is, so an edit writes the file's own line endings back.
    return data.decode("utf-8", errors="replace")


def write_text(env: Env, path: Path, text: str) -> None:
    """Write `text` to `path` after the checkpoint store has captured it."""
    if path.is_dir():
        raise ToolError(f"{env.rel(path)} is a directory; pass a file path.")
    env.capture_before_write(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
