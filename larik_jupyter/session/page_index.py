"""Pages of a transcript without reading the whole file: an offset index of entry starts.

The index is built once per file identity (device, inode, size, modification time) by one
full, checked read (`load_entries`); an append (same device and inode, larger size) extends
it by reading and checking only the new lines; any other change rebuilds it. A page then
reads only its own byte range, so its cost is the page's, not the file's
(bench/bench_pages.py).
"""

from __future__ import annotations

import os
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import msgspec
from pydantic import ValidationError

from larik_jupyter.errors import first_problem
from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.outline import decode_outline
from larik_jupyter.session.reader import Checker, load_entries
from larik_jupyter.session.regular import open_regular

# Indexes kept per process (about 8 bytes an entry plus the ids the append check needs).
CACHE_SIZE = 64


@dataclass
class _Index:
    device_inode: tuple[int, int]
    size: int
    mtime_ns: int
    starts: array[int]  # byte offset of each entry's line
    end: int  # where the indexed lines end: after the last newline, or the file's end
    open_tail: bool  # the last indexed line has no newline yet, so an append may change it
    checker: Checker  # the checks' state after the last indexed line, for appends

    def fresh_for(self, st: os.stat_result) -> bool:
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (*self.device_inode, self.size, self.mtime_ns)

    def appended_to(self, st: os.stat_result) -> bool:
        return (st.st_dev, st.st_ino) == self.device_inode and st.st_size > self.size and not self.open_tail


_cache: OrderedDict[str, _Index] = OrderedDict()
_lock = threading.Lock()


def _build(path: Path, st: os.stat_result) -> _Index:
    result = load_entries(path)
    starts: array[int] = array("q")
    position = 0
    for index in range(len(result.entries)):
        starts.append(position)
        position += len(result.entries.line(index)) + 1
    open_tail = not result.ends_with_newline
    # The stat came first; if the file grew meanwhile, `mtime_ns` -1 makes the next call
    # treat it as an append from what was actually read.
    same = result.size == st.st_size
    return _Index(
        device_inode=(st.st_dev, st.st_ino),
        size=result.size,
        mtime_ns=st.st_mtime_ns if same else -1,
        starts=starts,
        end=result.size if open_tail else (result.torn_tail if result.torn_tail is not None else position),
        open_tail=open_tail,
        checker=result.checker,
    )


def _extend(index: _Index, fd: int, st: os.stat_result) -> bool:
    """Add the lines appended since `index` was made; False when they need the full reader
    (a line that fails a check, or a complete last line without its newline)."""
    data = os.pread(fd, st.st_size - index.end, index.end)
    body_end = data.rfind(b"\n") + 1
    tail = data[body_end:]
    if tail:
        try:
            decode_outline(tail)
            return False
        except msgspec.DecodeError:
            pass  # torn: a writer is mid-line, so the line is not indexed yet
        except msgspec.ValidationError:
            return False
    position = index.end
    starts = []
    for line in data[:body_end].split(b"\n")[:-1]:
        try:
            outline = decode_outline(line)
            if not line.isascii():
                line.decode("utf-8")
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return False
        if index.checker.check(outline) is not None:
            return False
        starts.append(position)
        position += len(line) + 1
    index.starts.extend(starts)
    index.end = position
    index.size = st.st_size
    index.mtime_ns = st.st_mtime_ns
    return True


def _index(path: Path, fd: int) -> _Index:
    st = os.fstat(fd)
    key = os.fspath(path)
    with _lock:
        index = _cache.get(key)
        if index is not None and not index.fresh_for(st):
            if not (index.appended_to(st) and _extend(index, fd, st)):
                index = None
        if index is None:
            index = _build(path, st)
        _cache[key] = index
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
        return index


def page_entries(path: str | os.PathLike[str], offset: int, limit: int) -> tuple[int, list[Entry]]:
    """How many entries the transcript at `path` holds, and entries `offset … offset+limit`.
    A damaged file raises `CorruptSessionError` naming file and line, as a full read would."""
    path = Path(path)
    # Never through a symlink, never blocking on a FIFO; only a regular file is a transcript.
    handle = open_regular(path)
    fd = handle.fileno()
    try:
        index = _index(path, fd)
        total = len(index.starts)
        stop = min(offset + limit, total)
        if offset >= stop:
            return total, []
        first = index.starts[offset]
        last = index.starts[stop] if stop < total else index.end
        data = os.pread(fd, last - first, first)
    finally:
        handle.close()
    lines = data.split(b"\n")
    out = []
    for number, line in enumerate(lines[: stop - offset], offset + 1):
        try:
            out.append(Entry.model_validate_json(line))
        except ValidationError as exc:
            where, what = first_problem(exc)
            raise CorruptSessionError(path, number, f"{where}: {what}") from None
    return total, out

