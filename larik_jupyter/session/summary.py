"""What one read of a session file says about it, cached by file identity.

The listing (`catalog`), the fork tree (`branch.fork_tree`), the tree widget and the server's
views all project this summary, so a sessions list or a tree of a thousand sessions re-reads
only the files whose identity (device, inode, size, modification time) changed since the
last call in this process.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Usage
from larik_jupyter.session.corrupt import session_id_of
from larik_jupyter.session.entry import Meta
from larik_jupyter.session.outline import MessageEntryOutline, UsageEntryOutline
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from larik_jupyter.session.tally import Tally

# Summaries kept per process; a tree of 1,000 sessions fits with room for other directories.
CACHE_SIZE = 4096
# How much of each prompt a summary keeps for searching: a pasted data dump past this is cut.
PROMPT_TEXT_LIMIT = 20_000
# A file modified this recently may change again within the clock's granularity without its
# identity changing (git's "racy" files), so its summary is not kept.
RACY_SECONDS = 2.0


@dataclass(frozen=True)
class PromptSummary:
    """One prompt: its number (1-based), message position, first line, whole text (what a
    search matches, up to `PROMPT_TEXT_LIMIT` characters), time, and its turn's usage, cost
    (None: price unknown), whether a reply in the turn was interrupted and whether an undo put
    its turn back (`undone`)."""

    number: int
    position: int
    first_line: str
    text: str
    time: str | None
    usage: Usage
    cost: float | None
    interrupted: bool
    undone: bool = False


@dataclass(frozen=True)
class SessionSummary:
    """A session file in one read. `meta` is None and `error` set when nothing is readable;
    a damaged file is summarized up to its damage, with `error` naming it."""

    id: str
    path: Path
    time: str
    size: int
    meta: Meta | None = None
    started: str | None = None
    prompts: tuple[PromptSummary, ...] = ()
    message_count: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = 0.0
    interrupted: str | None = None
    compactions: tuple[int, ...] = ()
    error: str | None = None
    updated: str = ""
    model: str | None = None

    @property
    def fork_prompt(self) -> int | None:
        """For a branch, the number of the last prompt it shares with its source (0: it
        branched before the first); None when the session is no branch. Counted in the
        branch's own copy of the prefix, so it holds after the source is deleted."""
        if self.meta is None or self.meta.fork_of is None:
            return None
        return prompts_before([p.position for p in self.prompts], self.meta.fork_at)


def prompts_before(prompt_positions: list[int], fork_at: int | None) -> int:
    """How many prompts (by message position) a branch made at message `fork_at` shares with its
    source: the prompt number people read for a fork point (None: the source's end)."""
    return sum(1 for position in prompt_positions if fork_at is None or position < fork_at)


def session_time(path: Path) -> str:
    """When a session started: from its id, else its file's modification time."""
    try:
        return datetime.strptime(session_id_of(path)[:15], "%Y%m%d-%H%M%S").isoformat()
    except ValueError:
        return datetime.fromtimestamp(os.lstat(path).st_mtime).isoformat(timespec="seconds")


def activity_time(time: str | None, path: Path) -> str:
    """When a session was last written to, in UTC RFC 3339: its last entry's `time`, else (no
    readable time) its file's modification time; what "latest" and the listings sort by."""
    try:
        stamp = datetime.fromisoformat(time) if time else None
    except ValueError:
        stamp = None
    if stamp is None:
        try:
            stamp = datetime.fromtimestamp(os.lstat(path).st_mtime, UTC)
        except OSError:
            stamp = datetime.fromtimestamp(0, UTC)
    if stamp.tzinfo is None:
        stamp = stamp.astimezone()
    return stamp.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def first_line(text: str, limit: int = 120) -> str:
    """The first non-empty line of `text`, cut to `limit` characters."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


_cache: OrderedDict[str, tuple[tuple[int, int, int, int], SessionSummary]] = OrderedDict()
_lock = threading.Lock()


def summary(path: str | os.PathLike[str]) -> SessionSummary:
    """The summary of the session file at `path`, read again only when the file changed."""
    path = Path(path)
    st = os.lstat(path)  # a link is judged (and refused) by the reader, never followed here
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    key = os.fspath(path)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == identity:
            _cache.move_to_end(key)
            return hit[1]
    made = read_summary(path)
    if time.time() - st.st_mtime < RACY_SECONDS:
        return made
    with _lock:
        _cache[key] = (identity, made)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return made


def read_summary(path: Path) -> SessionSummary:
    """Read `path` once and summarize it (uncached); a file that cannot be read (not a regular
    file) is summarized by its error alone."""
    try:
        result = load_entries(path, prefix=True)
    except LarikError as exc:
        return SessionSummary(
            id=session_id_of(path), path=path, time=session_time(path), size=0, error=str(exc), updated=activity_time(None, path)
        )
    entries = result.entries
    base = SessionSummary(
        id=session_id_of(path),
        path=path,
        time=session_time(path),
        size=result.size,
        error=None if result.error is None else str(result.error),
        updated=activity_time(entries.outline(len(entries) - 1).time if len(entries) else None, path),
    )
    if not len(entries):
        return base
    state = replay(entries)
    meta = state.meta
    # One pass for what replay does not keep per turn: usage and interrupted replies.
    turns: list[tuple[Tally, list[bool]]] = []
    for index in range(1, len(entries)):
        o = entries.outline(index)
        if type(o) is MessageEntryOutline:
            if o.message.is_prompt():
                turns.append((Tally(), [False]))
            elif turns and o.message.interrupted:
                turns[-1][1][0] = True
        elif type(o) is UsageEntryOutline and turns:
            model = o.model or meta.model or ""
            turns[-1][0].add(f"{meta.provider}:{model}" if ":" not in model and meta.provider else model, o.usage)
    prompts = []
    for number, (position, (tally, interrupted)) in enumerate(zip(state.prompt_positions, turns, strict=True), 1):
        text = state.all[position].prompt_text()
        prompts.append(
            PromptSummary(
                number=number,
                position=position,
                first_line=first_line(text),
                text=text[:PROMPT_TEXT_LIMIT],
                time=entries.outline(state.entry_indexes[position]).time,
                usage=tally.usage(),
                cost=tally.cost(),
                interrupted=interrupted[0],
                undone=number in state.undone,
            )
        )
    first = entries.outline(0)
    return SessionSummary(
        id=base.id,
        path=path,
        time=base.time,
        size=base.size,
        error=base.error,
        meta=meta,
        started=first.time,
        prompts=tuple(prompts),
        message_count=len(state.all),
        usage=state.usage,
        cost=state.cost,
        interrupted=state.interrupted,
        compactions=tuple(state.compactions),
        updated=base.updated,
        model=current_model(state.model, meta),
    )


def current_model(recorded: str | None, meta: Meta) -> str | None:
    """The session's current model as `provider:model`: the newest one a turn or `/model`
    recorded, else its meta's."""
    model = recorded or meta.model
    if model and ":" not in model and meta.provider:
        return f"{meta.provider}:{model}"
    return model or None
