"""Lazily materialized entries and message views over one session file.

Building pydantic models for every line would dominate resume time (measured: 5-8x the
cost of reading the file at 100k entries), so a loaded session keeps each line's bytes and
its outline (outline.py), which the reader has checked, and builds each `Entry` on first
access. Replay, listing and forking work on outlines and lines and never pay for models.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import orjson
from pydantic import ValidationError

from larik_jupyter.errors import first_problem
from larik_jupyter.llm.messages import Message
from larik_jupyter.session.corrupt import CorruptSessionError
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.outline import EntryOutline, decode_outline

_Item = TypeVar("_Item")


class _Lazy(Sequence[_Item]):
    """A sequence whose items are made on access by `_at` (an index within `len`)."""

    def _at(self, index: int) -> _Item:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> _Item: ...
    @overload
    def __getitem__(self, index: slice) -> list[_Item]: ...
    def __getitem__(self, index: int | slice) -> _Item | list[_Item]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._at(index)

    def __iter__(self) -> Iterator[_Item]:
        for i in range(len(self)):
            yield self._at(i)


class EntryList(_Lazy[Entry]):
    """The entries of one session file, in file order; `Entry` models are built on first access."""

    def __init__(self, lines: list[bytes], outlines: list[EntryOutline], path: Path | None = None) -> None:
        self._lines = lines
        self._outlines = outlines
        self._built: list[Entry | None] = [None] * len(lines)
        self._path = path

    @classmethod
    def of(cls, entries: Sequence[Entry]) -> EntryList:
        """An EntryList over already built entries (e.g. from a caller's own list)."""
        if isinstance(entries, EntryList):
            return entries
        result = cls([], [])
        for entry in entries:
            result.append(entry, orjson.dumps(entry.to_json()))
        return result

    def __len__(self) -> int:
        return len(self._built)

    def raw(self, index: int) -> dict[str, Any]:
        """A fresh JSON object of entry `index` as stored, unknown keys included."""
        data: dict[str, Any] = orjson.loads(self._lines[index])
        return data

    def line(self, index: int) -> bytes:
        """The stored line of entry `index`, without its newline."""
        return self._lines[index]

    def outline(self, index: int) -> EntryOutline:
        """The checked outline of entry `index`."""
        return self._outlines[index]

    def outlines(self, start: int, stop: int) -> list[EntryOutline]:
        """The checked outlines of entries `start` to `stop` (exclusive)."""
        return self._outlines[start:stop]

    def append(self, entry: Entry, line: bytes, outline: EntryOutline | None = None) -> None:
        """Add an entry the caller has just written as `line` (newline excluded)."""
        self._lines.append(line)
        self._outlines.append(outline if outline is not None else decode_outline(line))
        self._built.append(entry)

    def _at(self, index: int) -> Entry:
        built = self._built[index]
        if built is None:
            try:
                built = Entry.model_validate_json(self._lines[index])
            except ValidationError as exc:
                # The reader's structural check mirrors the schema, so this is a gap in it;
                # still report it the way every other corruption is reported.
                where, what = first_problem(exc)
                raise CorruptSessionError(
                    self._path or Path("<memory>"), index + 1, f"{where}: {what}"
                ) from None
            self._built[index] = built
        return built


class MessageView(_Lazy[Message]):
    """A read-only view of some message entries of an EntryList, optionally led by one extra message.

    It grows as the session appends; slicing returns a plain list.
    """

    def __init__(self, entries: EntryList, indexes: list[int], start: int = 0, lead: Message | None = None):
        self._entries = entries
        self._indexes = indexes
        self._start = start
        self._lead = lead

    def __len__(self) -> int:
        return len(self._indexes) - self._start + (self._lead is not None)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"MessageView({len(self)} messages)"

    def _at(self, index: int) -> Message:
        if self._lead is not None:
            if index == 0:
                return self._lead
            index -= 1
        message = self._entries[self._indexes[self._start + index]].message
        assert message is not None
        return message
