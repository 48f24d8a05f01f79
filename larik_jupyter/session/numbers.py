"""Numbers in the agent's replies traced to what the model was shown or given.

A number a reply states counts as found when the same number appears in the turn's outputs
(tool results, the notebook context and data its prompt carried), the prompt the user typed,
the code the turn ran (the tool calls' inputs, the cells `notebook_run` ran), or an output of
an earlier turn the model context still held (no compaction or `/clear` since). "The same"
allows the rounding the reply shows, a percentage for a fraction and back, `k`/`M`/`million`/
`billion` and scientific notation, and any currency sign; it never takes a piece of a longer
number, a printed table's row or column label, or an object's address, and a stated sign must
agree (see `docs/format.md`, "Numbers in replies"). Numbers found nowhere are "unfound".
Everything is derived from the transcript when it is rendered, so the live view, `/history`,
the export, the terminal and the server's transcript pages agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from larik_jupyter.llm.messages import Message, TextBlock, is_context_text
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.number_claims import Claim, claims
from larik_jupyter.session.number_values import Values
from larik_jupyter.session.state import State

HINT = "not found in any output of this turn"
_STYLE = "text-decoration: underline dotted"

@dataclass
class TurnNumbers:
    """What tracing one turn found: its reply texts (its assistant text blocks, in order) and
    the unfound claims of each."""

    replies: list[str] = field(default_factory=list)
    unfound: list[list[Claim]] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(c) for c in self.unfound)

    def texts(self) -> list[str]:
        return [c.text for claims_ in self.unfound for c in claims_]


def _unfound(stated: list[list[Claim]], values: Values) -> list[list[Claim]]:
    return [[c for c in found if not values.supports(c)] for found in stated]


def _trace(replies: Sequence[str], sources: Sequence[str], earlier: Iterable[Values]) -> TurnNumbers:
    stated = [claims(text) for text in replies]
    if not any(stated):
        return TurnNumbers(list(replies), stated)  # nothing to look up: the sources are not even read
    left = _unfound(stated, Values(sources))
    for values in earlier:
        if not any(left):
            break
        left = _unfound(left, values)
    return TurnNumbers(list(replies), left)


def trace(replies: Sequence[str], sources: Sequence[str], earlier: Iterable[Sequence[str]] = ()) -> TurnNumbers:
    """The claims of `replies` that no number of `sources` supports, nor of `earlier` (groups
    of earlier outputs, newest first, read only while some claim is still unfound)."""
    return _trace(replies, sources, (Values(group) for group in earlier))


def mark(text: str, unfound: Sequence[Claim]) -> str:
    """`text` with each unfound claim wrapped in a dotted underline carrying the hint."""
    out, at = [], 0
    for claim in unfound:
        out.append(text[at:claim.start])
        shown = text[claim.start:claim.end]
        out.append(f'<span class="larik-unfound" style="{_STYLE}" title="{HINT}">{shown}</span>')
        at = claim.end
    out.append(text[at:])
    return "".join(out)


def footer(n: int) -> str:
    """`2 numbers not found in this turn's outputs` ("" when every number was found)."""
    if not n:
        return ""
    return f"{n} number{'s' if n != 1 else ''} not found in this turn's outputs"


def spread(parts: Sequence[str], traced: TurnNumbers) -> list[list[Claim]]:
    """The unfound claims of each of `parts`: texts that each join one or more consecutive
    replies of `traced`, in order, as a live view gathers streamed text (a part that starts
    with no reply left gets none)."""
    out: list[list[Claim]] = []
    replies, r = traced.replies, 0
    for text in parts:
        found: list[Claim] = []
        first = next((k for k in range(r, len(replies)) if replies[k] and text.startswith(replies[k])), None)
        at, r = (0, first) if first is not None else (len(text), r)
        while r < len(replies) and at < len(text) and text.startswith(replies[r], at):
            found += [replace(c, start=at + c.start, end=at + c.end) for c in traced.unfound[r]]
            at += len(replies[r])
            r += 1
        out.append(found)
    return out


# -- the sources of a turn ---------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    """The strings and numbers of a tool call's input, however nested."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield repr(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def outputs_of(messages: Iterable[Message]) -> list[str]:
    """What `messages` showed the model: tool results, and the notebook context and data a
    prompt carried (an undo's `<system-note>` is larik's, not an output)."""
    out: list[str] = []
    for message in messages:
        if message.role != "user":
            continue
        for block in message.content:
            if isinstance(block, TextBlock) and is_context_text(block.text) and not block.text.startswith("<system-note>"):
                out.append(block.text)
        out += [result.text() for result in message.tool_results()]
    return out


def given_in(messages: Iterable[Message]) -> list[str]:
    """What a turn's `messages` gave the model besides outputs: the prompt the user typed and
    the code it ran (every tool call's input, the cell source a `notebook_run` ran)."""
    out: list[str] = []
    for message in messages:
        if message.is_prompt():
            out.append(message.prompt_text())
        out += [text for call in message.tool_uses() for text in _strings(call.input)]
        out += [result.source for result in message.tool_results() if result.source]
    return out


def _replies(turn: Sequence[Message]) -> tuple[list[str], list[tuple[int, int]]]:
    """The texts of a turn's assistant text blocks, and where each is (message, block)."""
    replies: list[str] = []
    keys: list[tuple[int, int]] = []
    for i, message in enumerate(turn):
        if message.role == "assistant":
            for j, block in enumerate(message.content):
                if isinstance(block, TextBlock):
                    replies.append(block.text)
                    keys.append((i, j))
    return replies, keys


def _trace_turn(
    turn: Sequence[Message], earlier: Iterable[Values]
) -> tuple[dict[tuple[int, int], list[Claim]], TurnNumbers]:
    replies, keys = _replies(turn)
    numbers = _trace(replies, [*outputs_of(turn), *given_in(turn)], earlier)
    return {key: found for key, found in zip(keys, numbers.unfound, strict=True) if found}, numbers


def trace_turn(
    turn: Sequence[Message], earlier: Iterable[Sequence[Message]] = ()
) -> tuple[dict[tuple[int, int], list[Claim]], TurnNumbers]:
    """One turn's messages traced, with `earlier`: groups of the messages before it that the
    model context held, newest first (read only while a claim is unfound). Returns the unfound
    claims of each assistant text block by (message index, block index), and the turn's total."""
    return _trace_turn(turn, (Values(outputs_of(group)) for group in earlier))


def split_turns(messages: Sequence[Message]) -> list[list[int]]:
    """The indexes of `messages` by turn: each prompt with the messages up to the next one
    (messages before the first prompt form a turn of their own)."""
    turns: list[list[int]] = []
    for i, message in enumerate(messages):
        if message.is_prompt() or not turns:
            turns.append([])
        turns[-1].append(i)
    return turns


def trace_entries(
    entries: Iterable[tuple[int, Entry]], before: Iterable[Sequence[Message]] = ()
) -> tuple[dict[int, dict[int, list[Claim]]], dict[int, TurnNumbers]]:
    """Entries keyed by their index (in file order) traced turn by turn, each turn with the
    outputs of the turns before it since the latest compaction (or, with none among the
    entries, of `before` too: groups of the messages in context before the first entry, newest
    first, read only when needed). Returns the unfound claims by entry index and block index,
    and each turn with any by its last message's entry index."""
    segments: list[list[tuple[int, Message]]] = [[]]
    for index, entry in entries:
        if entry.type == "compaction":
            segments.append([])
        elif entry.type == "message" and entry.message is not None:
            segments[-1].append((index, entry.message))
    unfound: dict[int, dict[int, list[Claim]]] = {}
    turns: dict[int, TurnNumbers] = {}
    for n, segment in enumerate(segments):
        _trace_segment(segment, _Memo(before) if n == 0 else _Memo(()), unfound, turns)
    return unfound, turns


def _trace_segment(
    segment: list[tuple[int, Message]],
    outside: _Memo,
    unfound: dict[int, dict[int, list[Claim]]],
    turns: dict[int, TurnNumbers],
) -> None:
    """Trace the turns of one model context (`segment`, keyed messages), adding to `unfound`
    and `turns`; `outside` holds the context's messages before the segment."""
    messages = [message for _, message in segment]
    grouped = split_turns(messages)
    made: dict[int, Values] = {}  # each turn's outputs become numbers once, as later turns look

    def values_of(u: int) -> Values:
        if u not in made:
            made[u] = Values(outputs_of(messages[k] for k in grouped[u]))
        return made[u]

    for t, turn in enumerate(grouped):
        earlier = _chain((values_of(u) for u in range(t - 1, -1, -1)), outside.values())
        found, traced = _trace_turn([messages[k] for k in turn], earlier)
        for (k, block), claims_ in found.items():
            unfound.setdefault(segment[turn[k]][0], {})[block] = claims_
        if traced.count:
            turns[segment[turn[-1]][0]] = traced


class _Memo:
    """The numbers of groups of messages, made on first use and kept, as several turns look
    at the same earlier outputs."""

    def __init__(self, groups: Iterable[Sequence[Message]]) -> None:
        self._groups = iter(groups)
        self._made: list[Values] = []

    def values(self) -> Iterator[Values]:
        """The groups' numbers, in order."""
        i = 0
        while True:
            while i >= len(self._made):
                group = next(self._groups, None)
                if group is None:
                    return
                self._made.append(Values(outputs_of(group)))
            yield self._made[i]
            i += 1


def _chain(*parts: Iterator[Values]) -> Iterator[Values]:
    for part in parts:
        yield from part


def trace_last_turn(state: State) -> TurnNumbers | None:
    """The newest turn of a session traced with the earlier outputs its context held (None
    before the first prompt)."""
    if not state.prompt_positions:
        return None
    at = state.prompt_positions[-1]
    messages = state.all
    earlier = ([messages[i]] for i in range(at - 1, state.context_start - 1, -1))
    return trace_turn(messages[at:], earlier)[1]
