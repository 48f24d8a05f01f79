"""Replay of a session's entries into State: meta, model context, full transcript, usage, cost."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass, field

from larik_jupyter.llm.messages import (
    INTERRUPTED_TOOL_RESULT,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    Usage,
)
from larik_jupyter.session.entry import Entry, Meta
from larik_jupyter.session.entry_list import EntryList, MessageView
from larik_jupyter.session.outline import (
    CompactionEntryOutline,
    MessageEntryOutline,
    TextOutline,
    ToolResultOutline,
    ToolUseOutline,
    UsageEntryOutline,
)
from larik_jupyter.session.tally import Tally

__all__ = ["INTERRUPTED_TOOL_RESULT", "State", "replay"]


@dataclass
class State:
    """What a session's entries add up to.

    `messages` is the model context (after the latest compaction: its summary as a user
    message, then every message that followed); `all` is every message, never shortened.
    Both are read-only sequences that grow as the session appends (`context_start` is the
    index in `all` where `messages` resumes after `summary`). `interrupted` describes
    an interrupted turn at the end of the transcript, if any. `cost` is None when some model's
    price is unknown. `prompt_positions` are the positions in `all` of the prompts,
    `compactions` the lengths of `all` when each compaction happened, and `entry_indexes`
    the entry index of each message. `model` is the model named by the newest usage or
    compaction entry (a `/model` switch writes a usage entry with no tokens), else None.
    `pending_note` is the note of the newest usage entry when no prompt followed it (an
    `/undo`'s note the next prompt still has to carry). `undone` are the prompts (1-based)
    whose turns an undo put back (the `undone` of usage entries).
    """

    meta: Meta
    messages: MessageView
    all: MessageView
    prompt_positions: list[int] = field(default_factory=list)
    compactions: list[int] = field(default_factory=list)
    entry_indexes: list[int] = field(default_factory=list)
    context_start: int = 0
    summary: Message | None = None
    model: str | None = None
    undone: set[int] = field(default_factory=set)
    _note: str | None = field(default=None, repr=False)
    _note_prompts: int = field(default=-1, repr=False)
    _entries: EntryList = field(default_factory=lambda: EntryList([], []), repr=False)
    _pending: dict[str, str] = field(default_factory=dict, repr=False)
    _pending_at: int = field(default=-1, repr=False)
    _last_interrupted: bool = field(default=False, repr=False)
    _orphans: dict[int, dict[str, str]] = field(default_factory=dict, repr=False)
    _tally: Tally = field(default_factory=Tally, repr=False)

    @property
    def interrupted(self) -> str | None:
        """Why the transcript ends in an interrupted turn, or None."""
        if self._last_interrupted:
            return "the last assistant reply was interrupted"
        if self._pending:
            calls = ", ".join(f"{name} ({tid})" for tid, name in self._pending.items())
            return f"tool call {calls} never got a result"
        return None

    @property
    def pending_note(self) -> str | None:
        """The undo note no prompt has carried yet, or None."""
        return self._note if self._note_prompts == len(self.prompt_positions) else None

    @property
    def usage(self) -> Usage:
        """Token totals of every usage entry."""
        return self._tally.usage()

    @property
    def cost(self) -> float | None:
        """Dollars spent, or None when some model's price is unknown."""
        return self._tally.cost()

    def apply(self, index: int) -> None:
        """Fold entry `index` of the underlying EntryList into the state."""
        self.fold(index, index + 1)

    def fold(self, start: int, stop: int) -> None:
        """Fold entries `start` to `stop` (exclusive) into the state, in one tight loop:
        this is most of resume's Python time, hence the local names."""
        entry_indexes, prompts, orphans = self.entry_indexes, self.prompt_positions, self._orphans
        pending, pending_at, last_interrupted = self._pending, self._pending_at, self._last_interrupted
        tally = self._tally
        priced_as: dict[str | None, str] = {}  # `provider:model` of each usage entry's model
        for index, o in enumerate(self._entries.outlines(start, stop), start):
            kind = type(o)
            if kind is MessageEntryOutline:
                message = o.message  # type: ignore[union-attr]
                position = len(entry_indexes)
                entry_indexes.append(index)
                if message.role == "assistant":
                    if pending:
                        orphans[pending_at] = pending
                        pending = {}
                    for block in message.content:
                        if type(block) is ToolUseOutline:
                            pending[block.id] = block.name
                    pending_at = position
                    last_interrupted = bool(message.interrupted)
                    continue
                text = answers = False
                for block in message.content:
                    block_kind = type(block)
                    if block_kind is ToolResultOutline:
                        answers = True
                        pending.pop(block.tool_use_id, None)  # type: ignore[union-attr]
                    elif block_kind is TextOutline:
                        text = True
                if text and not answers:
                    prompts.append(position)
                if pending:
                    orphans[pending_at] = pending
                    pending = {}
                last_interrupted = False
            elif kind is UsageEntryOutline:
                usage = o.usage  # type: ignore[union-attr]
                if o.model:
                    self.model = o.model
                if o.undone:  # type: ignore[union-attr]
                    self.undone.update(o.undone)  # type: ignore[union-attr]
                if o.note:  # type: ignore[union-attr]
                    self._note, self._note_prompts = o.note, len(prompts)  # type: ignore[union-attr]
                name = priced_as.get(o.model)
                if name is None:
                    name = priced_as[o.model] = self._model_name(o.model)
                tally.add(name, usage)
            elif kind is CompactionEntryOutline:
                if o.model:
                    self.model = o.model
                self.compactions.append(len(entry_indexes))
                self.summary = Message(role="user", content=[TextBlock(text=o.summary)])  # type: ignore[union-attr]
                self.context_start = len(entry_indexes)
                self.messages = MessageView(self._entries, entry_indexes, self.context_start, self.summary)
        self._pending, self._pending_at, self._last_interrupted = pending, pending_at, last_interrupted

    def _model_name(self, model: str | None) -> str:
        name = model or self.meta.model or ""
        if ":" not in name and self.meta.provider:
            return f"{self.meta.provider}:{name}"
        return name

    def context_for_model(self) -> list[Message]:
        """The messages to send next: `messages`, with every unanswered tool call answered by an
        error result and interrupted replies cleaned of what a provider would reject."""
        out: list[Message] = [self.summary] if self.summary is not None else []
        start = self.context_start
        for position in range(start, len(self.all)):
            message = self.all[position]
            if message.interrupted:
                message = _clean_interrupted(message)
                if not message.content:
                    continue
            calls = self._orphans.get(position - 1) if position > start else None
            if calls and message.role == "user":
                message = _answer(calls, message)
            elif calls:
                out.append(_answer(calls, None))
            out.append(message)
        if self._pending and self._pending_at >= start:
            out.append(_answer(self._pending, None))
        return out


def _clean_interrupted(message: Message) -> Message:
    """Drop thinking that never got its signature; providers refuse unsigned thinking."""
    kept = [b for b in message.content if not (isinstance(b, ThinkingBlock) and not b.signature)]
    return message.model_copy(update={"content": kept})


def _answer(calls: dict[str, str], message: Message | None) -> Message:
    answered = {r.tool_use_id for r in message.tool_results()} if message else set()
    errors = [
        ToolResultBlock(tool_use_id=tid, content=INTERRUPTED_TOOL_RESULT, is_error=True)
        for tid in calls
        if tid not in answered
    ]
    if message is None:
        return Message(role="user", content=list(errors))
    return message.model_copy(update={"content": [*errors, *message.content]})


def undone_notice(prompt_number: int) -> str:
    """What a transcript (`/history`, the export) says where an undo put a prompt's turn back."""
    return (f"Prompt {prompt_number} was undone: its changes were put back, and /notebook and replay "
            "leave it out.")


def replay(entries: Sequence[Entry]) -> State:
    """Fold a session's entries, in file order, into State; the first entry must be meta."""
    entry_list = EntryList.of(entries)
    if not len(entry_list):
        raise ValueError("a session needs a meta entry first")
    meta = entry_list[0].meta
    if meta is None:
        raise ValueError("a session's first entry must be a meta entry")
    indexes: list[int] = []
    state = State(
        meta=meta,
        messages=MessageView(entry_list, indexes),
        all=MessageView(entry_list, indexes),
        entry_indexes=indexes,
        _entries=entry_list,
    )
    gc_was_enabled = gc.isenabled()
    gc.disable()  # replay allocates only live objects; collections would rescan them for nothing
    try:
        state.fold(1, len(entry_list))
    finally:
        if gc_was_enabled:
            gc.enable()
    return state
