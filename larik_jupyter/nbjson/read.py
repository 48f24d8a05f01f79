"""The one reader of notebook files: every `.ipynb` the package reads (the notebook tools, undo
of cells in a closed notebook, the cell numbers of summaries, a branch's steps) comes through
here, its input taken as hostile: only a regular file is read (never through a symlink, never
waiting on a FIFO, never opening a device), up to a size, as UTF-8 text, and its JSON no deeper
than `MAX_DEPTH` (what the code after it can walk without running out of stack).

Whether the JSON is a valid notebook is the caller's to judge (`nbjson.validate`): this gives
the JSON value the file holds, and `cell_list` the list of cells where there is one.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from larik_jupyter.errors import LarikError
from larik_jupyter.nbjson.layout import decode
from larik_jupyter.paths import file_kind

MAX_NOTEBOOK_BYTES = 50 * 1024 * 1024
# Far deeper than any notebook's own structure (an output's data is at depth 7), and well
# within what deep copies, validation and the JSON writers after this can recurse through.
MAX_DEPTH = 100

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_MB = 1024 * 1024


class NotebookUnreadable(LarikError):
    """A notebook file that cannot be read as JSON: `where` (its name as the user knows it) and
    `reason`, a phrase that follows it (`is a FIFO, not a regular file`)."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where} {reason}")
        self.where = where
        self.reason = reason


@dataclass(frozen=True)
class NotebookJSON:
    """A notebook file as read: its byte-order mark (or ""), its text without it, and the JSON
    value that text holds (any value: an object with a list of cells is a notebook)."""

    bom: str
    text: str
    data: Any


def read_bytes(path: Path, where: str) -> bytes:
    """The bytes of the regular file at `path` (a resolved path: a symlink there is refused),
    checked before it is opened (so a device is never opened) and on the open descriptor."""
    try:
        _check_regular(os.lstat(path), where)
        # A symlink swapped in since is refused here (O_NOFOLLOW), a FIFO never waited on.
        fd = os.open(path, _FLAGS)
    except (OSError, ValueError) as exc:
        raise NotebookUnreadable(where, f"cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    with os.fdopen(fd, "rb") as f:
        return read_open(f, where)


def read_open(f: BinaryIO, where: str) -> bytes:
    """The bytes of the open file `f`, refused unless it is a regular file within the size."""
    st = os.fstat(f.fileno())
    _check_regular(st, where)
    os.set_blocking(f.fileno(), True)
    # Its size and a byte more (a buffer of the limit's size would be allocated for each read);
    # a file that grew since is read on, up to the limit.
    raw = f.read(st.st_size + 1)
    if len(raw) > st.st_size:
        raw += f.read(MAX_NOTEBOOK_BYTES + 1 - len(raw))
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookUnreadable(where, _too_large(max(st.st_size, len(raw))))
    return raw


def read_notebook(path: Path, where: str) -> NotebookJSON:
    """The notebook file at `path` read and parsed (`read_bytes`, `parse_notebook`)."""
    return parse_notebook(read_bytes(path, where), where)


def parse_notebook(raw: bytes, where: str) -> NotebookJSON:
    """`raw` (a notebook file's bytes) as UTF-8 text and the JSON it holds; `NotebookUnreadable`
    for bytes that are not UTF-8, text that is not JSON, or JSON nested past `MAX_DEPTH`."""
    try:
        bom, text = decode(raw)
    except UnicodeDecodeError as exc:
        raise NotebookUnreadable(where, f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise NotebookUnreadable(where, _TOO_DEEP) from None
    except ValueError as exc:
        # Chained: a debug trace keeps the parser's own error.
        raise NotebookUnreadable(where, f"does not parse as a notebook ({exc})") from exc
    if _deeper_than(data, MAX_DEPTH):
        raise NotebookUnreadable(where, _TOO_DEEP)
    return NotebookJSON(bom, text, data)


def cell_list(data: Any) -> list[Any] | None:
    """The notebook's list of cells (each any JSON value), None when `data` holds none."""
    cells = data.get("cells") if isinstance(data, dict) else None
    return cells if isinstance(cells, list) else None


_TOO_DEEP = f"nests its JSON deeper than {MAX_DEPTH} levels, which no notebook does"


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether `data` nests objects and lists more than `limit` deep (walked without recursion;
    `type() is` rather than `isinstance`, which costs a notebook's parse a third again)."""
    stack: list[tuple[Any, int]] = [(data, 1)] if type(data) is dict or type(data) is list else []
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        for child in value.values() if type(value) is dict else value:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return False


def _check_regular(st: os.stat_result, where: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotebookUnreadable(where, f"is {file_kind(st.st_mode)}, not a regular file")
    if st.st_size > MAX_NOTEBOOK_BYTES:
        raise NotebookUnreadable(where, _too_large(st.st_size))


def _too_large(size: int) -> str:
    return f"is {size // _MB} MB, larger than the {MAX_NOTEBOOK_BYTES // _MB} MB a notebook is read up to"

