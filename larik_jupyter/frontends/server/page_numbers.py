"""The numbers of a transcript page's replies that nothing the model was shown or given
supports, traced by `session/numbers.py` exactly as the export traces them: the page's turns
are read whole, and the entries before them (back to the latest compaction, the context those
turns had) only while some number is still unfound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from larik_jupyter.api import Claim, Entry, Message, TextBlock, page_entries, trace_entries
from larik_jupyter.api import numbers_footer as footer
from larik_jupyter.frontends.server.schema import UnfoundCount, UnfoundInBlock, UnfoundNumber

# Entries read at a time when a turn reaches past the page's edge (and, doubling up to
# `_MOST`, when a number is looked for in the context before the page's turns).
_STEP = 16
_MOST = 1024


def _prompts(entries: list[Entry]) -> list[int]:
    """Where the prompts (the starts of turns) are among `entries`."""
    return [i for i, entry in enumerate(entries) if entry.message is not None and entry.message.is_prompt()]


def _whole_turns(path: Path, offset: int, entries: list[Entry], total: int) -> tuple[int, list[Entry]]:
    """The page's entries widened to whole turns, and where they now start: back to the prompt
    that begins the page's first turn (or the transcript's start), on to just before the prompt
    after the page (or the end)."""
    start, window = offset, list(entries)
    while start > 0 and not _prompts(window[:1]):
        low = max(start - _STEP, 0)
        earlier = page_entries(path, low, start - low)[1]
        found = _prompts(earlier)
        cut = found[-1] if found else 0
        start, window = low + cut, earlier[cut:] + window
    stop = offset + len(entries)
    while stop < total:
        later = page_entries(path, stop, _STEP)[1]
        found = _prompts(later)
        window += later[: found[0]] if found else later
        stop = total if found or not later else stop + len(later)
    return start, window


def _context_before(path: Path, start: int) -> Iterator[list[Message]]:
    """The messages before entry `start` back to the latest compaction (the model context of a
    turn starting at `start`), newest first, read a growing number of entries at a time."""
    stop, step = start, _STEP
    while stop > 0:
        low = max(stop - step, 0)
        chunk = page_entries(path, low, stop - low)[1]
        cut = max((k + 1 for k, entry in enumerate(chunk) if entry.type == "compaction"), default=0)
        yield [entry.message for entry in chunk[cut:] if entry.type == "message" and entry.message is not None]
        if cut:
            return
        stop, step = low, min(step * 2, _MOST)


def _utf16(text: str, index: int) -> int:
    """Index `index` of `text` counted in UTF-16 code units."""
    return len(text[:index].encode("utf-16-le")) // 2


def _numbers(block: object, claims: list[Claim]) -> list[UnfoundNumber]:
    text = block.text if isinstance(block, TextBlock) else ""
    return [UnfoundNumber(start=_utf16(text, c.start), end=_utf16(text, c.end), text=c.text) for c in claims]


def page_numbers(
    path: Path, offset: int, entries: list[Entry], total: int
) -> tuple[list[UnfoundInBlock], list[UnfoundCount]]:
    """The unfound numbers of the text blocks of `entries` (the page at `offset` of the
    transcript at `path`), and the count lines of the turns that end in the page."""
    if not entries:
        return [], []
    start, window = _whole_turns(path, offset, entries, total)
    unfound, turns = trace_entries(enumerate(window, start), _context_before(path, start))
    on_page = range(offset, offset + len(entries))
    by_index = {i: entry.message for i, entry in enumerate(window, start) if entry.message is not None}
    blocks = [
        UnfoundInBlock(entry=i, block=b, numbers=_numbers(by_index[i].content[b], claims))
        for i, by_block in sorted(unfound.items())
        if i in on_page
        for b, claims in sorted(by_block.items())
    ]
    counts = [
        UnfoundCount(entry=i, count=traced.count, text=footer(traced.count), numbers=traced.texts())
        for i, traced in sorted(turns.items())
        if i in on_page
    ]
    return blocks, counts
