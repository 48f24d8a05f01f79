"""The numbers of a transcript page's replies that no output of their turn supports, traced by
`session/numbers.py` exactly as the export traces them, reading only the page's turns."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.llm.messages import Message, TextBlock
from larik_jupyter.server.schema import UnfoundCount, UnfoundInBlock, UnfoundNumber
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.numbers import Claim, footer, trace_turns
from larik_jupyter.session.page_index import page_entries

# Entries read at a time when a turn reaches past the page's edge.
_STEP = 16


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
    messages: list[tuple[int, Message]] = [
        (i, entry.message) for i, entry in enumerate(window, start) if entry.type == "message" and entry.message
    ]
    unfound, turns = trace_turns(messages)
    on_page = range(offset, offset + len(entries))
    by_index = dict(messages)
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
