"""Reading a session file: decode, check every line, tolerate a torn last line.

Decoding path, chosen by measurement (bench/bench_session.py): each line is decoded by
msgspec into an outline (outline.py) with the garbage collector paused, which validates the
JSON syntax and the outline's types while skipping text bodies; a short Python pass checks
ids, the parent chain and tool linkage. Full pydantic `Entry` models are built lazily from
the line bytes (entry_list.py), so the schema still guards every entry that is used.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.entry_list import EntryList
from larik_jupyter.session.outline import (
    EntryOutline,
    MessageEntryOutline,
    MetaEntryOutline,
    MetaOutline,
    ToolResultOutline,
    ToolUseOutline,
    decode_outline,
)
from larik_jupyter.session.regular import open_regular, read_regular


@dataclass
class LoadResult:
    """What `load_entries` read. `torn_tail` is the byte offset where unreadable debris begins."""

    path: Path
    entries: EntryList
    torn_tail: int | None
    size: int
    ends_with_newline: bool
    checker: Checker
    error: CorruptSessionError | None = None


class Checker:
    """Checks entry outlines in file order: one meta first, unique ids, the parent chain, and
    that every tool_result follows its tool_use. `check` returns what is wrong, or None, and
    then remembers the entry; `check_all` does the same for a whole file at C speed when it
    is sound and falls back to `check` to name the first bad line when it is not."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.tool_ids: set[str] = set()
        self.last_id: str | None = None
        self.count = 0

    def check(self, o: EntryOutline) -> str | None:
        """What is wrong with the next entry, or None after remembering it."""
        problem = self.problem(o)
        if problem is None:
            self.accept(o)
        return problem

    def problem(self, o: EntryOutline) -> str | None:
        """What is wrong with `o` as the next entry, or None; remembers nothing."""
        if not o.id:
            return "empty `id`"
        if o.id in self.ids:
            return f"duplicate entry id {o.id!r}"
        if o.parent_id != self.last_id:
            expected = "no parent_id" if self.last_id is None else f"parent_id {self.last_id!r}"
            return f"broken parent chain: parent_id is {o.parent_id!r}, expected {expected}"
        is_meta = type(o) is MetaEntryOutline
        if is_meta != (self.count == 0):
            return "a meta entry after the first line" if self.count else "the first entry must be the meta entry"
        if is_meta and o.meta.fork_at is not None and o.meta.fork_at < 0:  # type: ignore[union-attr]
            return "negative `meta.fork_at`"
        if type(o) is MessageEntryOutline:
            tool_ids = self.tool_ids
            for block in o.message.content:
                if type(block) is ToolResultOutline and block.tool_use_id not in tool_ids:
                    return f"tool_result for {block.tool_use_id!r} without its tool_use"
        return None

    def accept(self, o: EntryOutline) -> None:
        """Remember `o` as the latest entry."""
        if type(o) is MessageEntryOutline:
            self.tool_ids.update(b.id for b in o.message.content if type(b) is ToolUseOutline)
        self.ids.add(o.id)
        self.last_id = o.id
        self.count += 1

    def check_all(self, outlines: list[EntryOutline]) -> tuple[int, str] | None:
        """Check a fresh checker's whole file: None if sound, else (index, what) of the first problem."""
        ids = [o.id for o in outlines]
        parents = [o.parent_id for o in outlines]
        id_set = set(ids)
        sound = (
            not outlines
            or (
                type(outlines[0]) is MetaEntryOutline
                and parents[0] is None
                and parents[1:] == ids[:-1]
                and len(id_set) == len(ids)
                and "" not in id_set
                and (outlines[0].meta.fork_at or 0) >= 0
            )
        )
        tool_ids: set[str] = set()
        if sound:
            for o in outlines[1:]:
                kind = type(o)
                if kind is MetaEntryOutline:  # a second meta entry
                    sound = False
                    break
                if kind is MessageEntryOutline:
                    for block in o.message.content:  # type: ignore[union-attr]
                        block_kind = type(block)
                        if block_kind is ToolUseOutline:
                            tool_ids.add(block.id)  # type: ignore[union-attr]
                        elif block_kind is ToolResultOutline and block.tool_use_id not in tool_ids:  # type: ignore[union-attr]
                            sound = False
                    if not sound:
                        break
        if sound:
            self.ids, self.tool_ids, self.count = id_set, tool_ids, len(ids)
            self.last_id = ids[-1] if ids else None
            return None
        for index, o in enumerate(outlines):
            problem = self.check(o)
            if problem is not None:
                return index, problem
        raise AssertionError("check_all and check disagree")  # pragma: no cover


def _describe_bad_line(line: bytes, exc: Exception) -> str:
    nul = line.find(b"\x00")
    if nul >= 0:
        return f"a run of NUL bytes at byte {nul} of the line"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start} of the line"
    if not line.strip():
        return "an empty line"
    if isinstance(exc, msgspec.ValidationError):
        return f"not a valid entry ({exc})"
    return f"bad JSON ({exc})"


def _no_meta(data: bytes) -> str:
    """What is wrong with a file that holds no complete entry."""
    return "no meta entry: the file is empty" if not data else "no meta entry: the file holds only a torn line"


def read_meta(path: str | os.PathLike[str]) -> MetaOutline:
    """The meta of a session file, from its first line alone (which must be a meta entry);
    refuses what `load_entries` would refuse for that line, with the same error."""
    path = Path(path)
    with open_regular(path) as f:
        line = f.readline()
    body = line.removesuffix(b"\n")
    try:
        outline = decode_outline(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        torn = isinstance(exc, msgspec.DecodeError) and not line.endswith(b"\n")
        what = _no_meta(line) if torn or not line else _describe_bad_line(body, exc)
        raise CorruptSessionError(path, 1, what) from None
    if type(outline) is not MetaEntryOutline:
        raise CorruptSessionError(path, 1, "the first entry must be the meta entry")
    return outline.meta


def prefix_boundary(outlines: Sequence[EntryOutline]) -> int | None:
    """The last message position of a (valid) prefix a fork may keep: its end when no tool call is
    left open, else its last prompt; None when the prefix has no meta entry."""
    if not outlines:
        return None
    count = 0
    last_prompt = 0
    open_calls: set[str] = set()
    for o in outlines:
        if type(o) is not MessageEntryOutline:
            continue
        if o.message.is_prompt():
            last_prompt = count
        for block in o.message.content:
            if type(block) is ToolUseOutline:
                open_calls.add(block.id)
            elif type(block) is ToolResultOutline:
                open_calls.discard(block.tool_use_id)
        count += 1
    return last_prompt if open_calls else count


def load_entries(path: str | os.PathLike[str], *, prefix: bool = False) -> LoadResult:
    """Read and check a session file.

    A torn last line (no trailing newline and unparsable) is tolerated and reported as
    `torn_tail`. Any other damage, and a file without a single entry, raises
    `CorruptSessionError` naming file and line; with `prefix=True` it is returned in `.error`
    instead, with the entries before it. A path that is not a regular file raises
    `UnreadableFileError` and is never read.
    """
    path = Path(path)
    data = read_regular(path)
    body_end = data.rfind(b"\n") + 1
    lines = data.split(b"\n")  # not data[:body_end]: that would copy the whole file first
    tail = lines.pop()  # what follows the last newline: nothing, or an unterminated line
    torn_tail: int | None = None
    if tail:
        try:
            decode_outline(tail)
            lines.append(tail)
        except msgspec.DecodeError:
            torn_tail = body_end
        except msgspec.ValidationError:
            lines.append(tail)  # complete JSON, so not torn: judged like every other line

    checker = Checker()
    outlines: list[EntryOutline] = []
    bad_index, what = len(lines), ""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # decoding allocates many objects the collector would rescan for nothing
    try:
        try:
            outlines = [decode_outline(line) for line in lines]
        except (msgspec.DecodeError, msgspec.ValidationError):
            outlines = []
            for line in lines:
                try:
                    outlines.append(decode_outline(line))
                except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                    bad_index, what = len(outlines), _describe_bad_line(line, exc)
                    break
        if not data.isascii():  # outlines skip text bodies, so check their UTF-8 here
            for index, line in enumerate(lines[:bad_index]):
                if not line.isascii():
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        bad_index, what = index, f"invalid UTF-8 at byte {exc.start} of the line"
                        break
        found = checker.check_all(outlines[:bad_index] if what else outlines)
        if found is not None:
            bad_index, what = found
    finally:
        if gc_was_enabled:
            gc.enable()
    error: CorruptSessionError | None = None
    if not what and not outlines:
        bad_index, what = 0, _no_meta(data)
    if what:
        del outlines[bad_index:], lines[bad_index:]
        error = CorruptSessionError(path, bad_index + 1, what, prefix_boundary(outlines))
        if not prefix:
            raise error
    return LoadResult(
        path=path,
        entries=EntryList(lines, outlines, path),
        torn_tail=torn_tail,
        size=len(data),
        ends_with_newline=not tail or torn_tail is not None,
        checker=checker,
        error=error,
    )
