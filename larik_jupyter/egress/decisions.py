"""What of each block may go to a destination: a block tagged with a restricted source
(`egress/tags.py`) is replaced by a marker per source and the view its policy allows; in any
other text the restricted values the index finds (`egress/restricted.py`) are replaced by
markers. Each block's decision and each text's search are kept for the next request."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.egress.accounting import measure, text_bytes
from larik_jupyter.egress.ledger import Part, Withheld
from larik_jupyter.egress.policy import Policy, parse_policy, stricter
from larik_jupyter.egress.restricted import RestrictedValues
from larik_jupyter.egress.tags import Tag, source_label, tag_of
from larik_jupyter.egress.values import DIGIT_RUN, MIN_DIGITS, Found, lower
from larik_jupyter.llm.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from larik_jupyter.llm.provider import Destination

# The policy a source has for a request to a destination (`EgressDoor.policy_of`).
PolicyOf = Callable[[str, Destination], Policy]
# What a block's decision depends on: the rules' and the index's versions, the destination's
# name, whether it is local, and whether the block is an earlier reply's thinking.
Key = tuple[int, int, str, bool, bool]


def advice(name: str, policy: Policy) -> str:
    """What the model can do instead, by policy; `name` is the variable or file."""
    if policy.kind == "never":
        return f"nothing of {name} may be sent; do not print it, ask the user"
    if policy.kind == "schema":
        return f"work with {name}'s schema or ask the user"
    if policy.kind == "stats":
        return f"work with {name}'s schema and statistics or ask the user"
    return f"work with {name}'s {policy.rows}-row sample or ask the user"


def marker(label: str, policy: Policy, name: str | None = None) -> str:
    """`[withheld: df.email — policy schema; work with df's schema or ask the user]`:
    `label` is what was withheld, `name` the variable or file it belongs to (default: label)."""
    return f"[withheld: {label} — policy {policy}; {advice(name or label, policy)}]"


def indexing_marker(label: str) -> str:
    """What replaces a text the door cannot search yet: `label`'s index is being built."""
    return f"[withheld: the restricted values of {label} are still being indexed; this content will be sent once they are]"


# Texts the door does not withhold while an index is unfinished: the person's prompts and the
# model's own replies (what it was sent); their values are still searched for once it is built.
_AUTHORED = frozenset({"prompts", "the model's replies"})


@dataclass
class Outcome:
    """One block as it leaves: the block, its parts and what was withheld from it."""

    block: Any
    parts: list[Part] = field(default_factory=list)
    withheld: list[Withheld] = field(default_factory=list)


# A text, the index version it was searched with and the values found in it.
_Search = tuple[str, int, list[Found]]


@dataclass
class _Cached:
    """A block's decision under `key`, and the searches of its texts it was made from (by the
    text's id)."""

    block: Any
    key: Key
    outcome: Outcome
    searches: dict[int, _Search]


class BlockDecisions:
    """The decisions of one door: `values` is its index of restricted values, `policy_of` its
    rules."""

    def __init__(self, values: RestrictedValues, policy_of: PolicyOf) -> None:
        self.values = values
        self.policy_of = policy_of
        self._cache: dict[int, _Cached] = {}
        # The searches of the texts of the request's blocks, by the text's id: a block decided
        # again (a new rule or destination), or copied with the same texts (the model context
        # copies a result holding images each request), is not searched again.
        self._searches: dict[int, _Search] = {}
        self._used: dict[int, _Search] = {}  # those of the block being decided

    def keep(self, messages: list[Message]) -> None:
        """Keep only the decisions of the blocks of `messages` (what compaction dropped is let
        go) and the searches they were made from."""
        kept = {id(b) for m in messages for b in m.content}
        self._cache = {k: v for k, v in self._cache.items() if k in kept}
        self._searches = {k: v for c in self._cache.values() for k, v in c.searches.items()}

    def seen(self, block: Any) -> bool:
        """Whether `block` was decided for an earlier request."""
        cached = self._cache.get(id(block))
        return cached is not None and cached.block is block

    def clear(self) -> None:
        """Forget every decision and search (the next request is decided from scratch)."""
        self._cache.clear()
        self._searches.clear()

    def block(self, block: Any, where: str, destination: Destination, key: Key) -> Outcome:
        """`block` decided under `key`, or as it was last time under the same key."""
        cached = self._cache.get(id(block))
        if cached is not None and cached.block is not block:
            cached = None
        if cached is not None and cached.key == key:
            return cached.outcome
        self._used = {}
        if key[4]:
            outcome = self.thinking(block, destination)
        else:
            outcome = self.decide(block, where, destination)
        self._cache[id(block)] = _Cached(block, key, outcome, self._used)
        return outcome

    def decide(self, block: Any, where: str, destination: Destination) -> Outcome:
        """`block` as it may go to `destination`; `where` is the ledger's name for it."""
        if "egress" in (block.model_extra or ()):
            tag = tag_of(block)
            restricted = [(s, p) for s in tag.sources if (p := self.policy_of(s, destination)).restricted]
            if restricted:
                return self._replace(block, where, restricted, tag.views)
            if tag.spans:
                block, withheld = self._spans(block, where, tag, destination)
                outcome = self.decide(block, where, destination)
                outcome.withheld[:0] = withheld
                return outcome
        if isinstance(block, (TextBlock, ToolResultBlock)) and where not in _AUTHORED:
            unfinished = [(s, p) for s in self.values.unfinished if (p := self.policy_of(s, destination)).restricted]
            if unfinished:
                return _indexing(block, where, unfinished)
        if isinstance(block, (TextBlock, ToolResultBlock)) and (text := _plain(block)) is not None:
            # Content of a `never` file goes not at all, whatever part of it the search found.
            never = self._never_files(text, destination)
            if never:
                return self._replace(block, where, never, {})
        if isinstance(block, TextBlock):
            # Prompts too: a `--expand`ed `{df}` or a pasted row is data like any other.
            text, found = self._scrub(block.text, where, destination)
            new = block if not found else block.model_copy(update={"text": text})
            return Outcome(new, [Part(where, text_bytes(text))], found)
        if isinstance(block, ToolResultBlock):
            return self._result(block, where, destination)
        if isinstance(block, ToolUseBlock):
            held: list[Withheld] = []
            scrubbed = self._scrub_json(block.input, where, destination, held)
            call = block if not held else block.model_copy(update={"input": scrubbed})
            return Outcome(call, measure(call, where), held)
        return Outcome(block, measure(block, where))

    def _result(self, block: ToolResultBlock, where: str, destination: Destination) -> Outcome:
        if isinstance(block.content, str):
            text, found = self._scrub(block.content, where, destination)
            new = block if not found else block.model_copy(update={"content": text})
            return Outcome(new, [Part(where, text_bytes(text))], found)
        inner: list[Any] = []
        parts: list[Part] = []
        withheld: list[Withheld] = []
        for item in block.content:
            label = f"image of {where.removeprefix('result of ')}" if isinstance(item, ImageBlock) else where
            outcome = self.decide(item, label, destination)
            inner.append(outcome.block)
            parts += outcome.parts
            withheld += outcome.withheld
        changed = any(a is not b for a, b in zip(inner, block.content, strict=True))
        return Outcome(block.model_copy(update={"content": inner}) if changed else block, parts, withheld)

    def thinking(self, block: ThinkingBlock, destination: Destination) -> Outcome:
        """An earlier reply's thinking, left out when it holds a restricted value (a signed
        block cannot be changed, only dropped)."""
        found = [
            Withheld(item.label, str(policy), "the model's thinking")
            for item in self._find(block.thinking)
            if (policy := self.policy_of(item.source, destination)).restricted
        ]
        if found:
            return Outcome(None, [], found)
        return Outcome(block, [Part("the model's replies", text_bytes(block.thinking))])

    def _scrub_json(self, value: Any, where: str, destination: Destination, found: list[Withheld]) -> Any:
        """`value` (a tool call's input) with restricted values in its strings replaced."""
        if isinstance(value, str):
            text, withheld = self._scrub(value, where, destination)
            found += withheld
            return text
        if isinstance(value, list):
            return [self._scrub_json(v, where, destination, found) for v in value]
        if isinstance(value, dict):
            return {k: self._scrub_json(v, where, destination, found) for k, v in value.items()}
        return value

    def search(self, text: str) -> _Search:
        """`text`'s search under the index's version, made once."""
        search = self._current(text)
        if search is None:
            search = self._searches[id(text)] = (text, self.values.version, self.values.index.find(text))
        return search

    def search_all(self, texts: list[str]) -> None:
        """Search those of `texts` not searched under the index's version yet, as one batch."""
        new = list({id(text): text for text in texts if self._current(text) is None}.values())
        version = self.values.version
        for text, found in zip(new, self.values.index.find_all(new), strict=True):
            self._searches[id(text)] = (text, version, found)

    def _current(self, text: str) -> _Search | None:
        """`text`'s search if it was made under the index's present version."""
        search = self._searches.get(id(text))
        return search if search is not None and search[0] is text and search[1] == self.values.version else None

    def _find(self, text: str) -> list[Found]:
        """The indexed values in `text`, kept with the block being decided."""
        search = self._used[id(text)] = self.search(text)
        return search[2]

    def _never_files(self, text: str, destination: Destination) -> list[tuple[str, Policy]]:
        """The `never` files a value found in `text` comes from (each once)."""
        out: dict[str, Policy] = {}
        for item in self._find(text):
            if item.source.startswith("file:") and (policy := self.policy_of(item.source, destination)).kind == "never":
                out[item.source] = policy
        return list(out.items())

    def _scrub(self, text: str, where: str, destination: Destination) -> tuple[str, list[Withheld]]:
        """`text` with each restricted value found in it replaced by its marker (one pass)."""
        values = self._find(text)
        if not values:
            return text, []
        found = {
            item.text: (item, policy)
            for item in values
            if (policy := self.policy_of(item.source, destination)).restricted
        }
        if not found:
            return text, []
        withheld: dict[tuple[str, str], Withheld] = {}
        spans: list[tuple[int, int, str]] = []
        taken: list[tuple[int, int]] = []
        lowered = lower(text)
        runs: list[tuple[int, int, str]] | None = None  # the text's digit groups, found once
        # Longest first, and only whole tokens: `1234.5` is not withheld out of `91234.56`;
        # whatever the case of its letters, and a long number also where written in groups.
        for value in sorted(found, key=len, reverse=True):
            item, policy = found[value]
            where_found = _occurrences(lowered, value)
            if value.isdigit() and len(value) >= MIN_DIGITS:
                if runs is None:
                    runs = [(m.start(), m.end(), re.sub(r"[ -]", "", m.group())) for m in DIGIT_RUN.finditer(text)]
                where_found += [(a, b) for a, b, digits in runs if digits == value]
            for at, end in where_found:
                if _whole_token(text, at, end) and not any(a < end and at < b for a, b in taken):
                    spans.append((at, end, marker(item.label, policy, source_label(item.source))))
                    taken.append((at, end))
                    key = (item.label, str(policy))
                    if key in withheld:
                        withheld[key].count += 1
                    else:
                        withheld[key] = Withheld(item.label, str(policy), where)
        pieces = []
        last = 0
        for at, end, said in sorted(spans):
            pieces += [text[last:at], said]
            last = end
        return "".join([*pieces, text[last:]]), list(withheld.values())

    def _spans(self, block: Any, where: str, tag: Tag, destination: Destination) -> tuple[Any, list[Withheld]]:
        """`block` (untagged now) with each span of its text made from a restricted source
        replaced by the markers and views `_replace` would send for the whole."""
        text = text_of(block)
        withheld: list[Withheld] = []
        if text is None:
            return block.model_copy(update={"egress": None}), withheld
        for start, end, sources in sorted(tag.spans, key=lambda s: -s[0]):
            restricted = [(s, p) for s in sources if (p := self.policy_of(s, destination)).restricted]
            if restricted and 0 <= start <= end <= len(text):
                said = self._replace(TextBlock(text=text[start:end]), where, restricted, tag.views)
                text = text[:start] + said.block.text + text[end:]
                withheld += said.withheld
        return _with_text(block, text), withheld

    def _replace(
        self, block: Any, where: str, restricted: list[tuple[str, Policy]], views: dict[str, dict[str, str]]
    ) -> Outcome:
        """The block's content replaced by a marker per restricted source and what its policy
        lets out (the view stored with the tag, when it is no looser than the policy now)."""
        pieces: list[tuple[str, str]] = []
        withheld = []
        for source, policy in restricted:
            label = source_label(source)
            what = "image" if isinstance(block, ImageBlock) else "content"
            pieces.append((f"{where} (withheld)", f"{marker(label, policy)} (the {what} was made from {label})\n"))
            withheld.append(Withheld(label, str(policy), where))
            view = views.get(source) or {}
            shown = view.get("policy")
            if shown and view.get("text") and _no_looser(shown, policy):
                pieces.append((f"summary of {label}", view["text"] + "\n"))
        text = "".join(t for _, t in pieces).rstrip("\n")
        parts = [Part(label, text_bytes(t)) for label, t in pieces]
        parts[-1].bytes = text_bytes(pieces[-1][1].rstrip("\n"))
        if isinstance(block, ToolResultBlock):
            new: Any = block.model_copy(update={"content": text})
        else:
            new = TextBlock(text=text)
        return Outcome(new, parts, withheld)


def _indexing(block: TextBlock | ToolResultBlock, where: str, unfinished: list[tuple[str, Policy]]) -> Outcome:
    """`block` withheld whole while the index of `unfinished` (restricted sources) is built: one
    marker per source (`indexing_marker`); the next request after it is built sends it."""
    said = [indexing_marker(source_label(source)) for source, _ in unfinished]
    text = "\n".join(said)
    withheld = [Withheld(source_label(source), str(policy), where) for source, policy in unfinished]
    new: Any = block.model_copy(update={"content": text}) if isinstance(block, ToolResultBlock) else TextBlock(text=text)
    return Outcome(new, [Part(f"{where} (withheld)", text_bytes(text))], withheld)


def text_of(block: Any) -> str | None:
    """The text a span tag's offsets count in: a text block's, or a result's (its string, or
    its first text block)."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return block.content
        first = next((b for b in block.content if isinstance(b, TextBlock)), None)
        return first.text if first is not None else None
    return None


def _plain(block: TextBlock | ToolResultBlock) -> str | None:
    """A text block's text, or a result's when it is one string."""
    if isinstance(block, TextBlock):
        return block.text
    return block.content if isinstance(block.content, str) else None


def _occurrences(lowered: str, value: str) -> list[tuple[int, int]]:
    """Where `value` stands in a text whose lower-case twin is `lowered`, case aside."""
    found: list[tuple[int, int]] = []
    wanted = lower(value)
    at = lowered.find(wanted)
    while at >= 0:
        found.append((at, at + len(value)))
        at = lowered.find(wanted, at + len(value))
    return found


def _with_text(block: Any, text: str) -> Any:
    """`block` with the text `text_of` reads replaced, and no tag."""
    if isinstance(block, TextBlock):
        return block.model_copy(update={"text": text, "egress": None})
    if isinstance(block.content, str):
        return block.model_copy(update={"content": text, "egress": None})
    index = next(i for i, b in enumerate(block.content) if isinstance(b, TextBlock))
    content = list(block.content)
    content[index] = content[index].model_copy(update={"text": text})
    return block.model_copy(update={"content": content, "egress": None})


_TOKEN = frozenset("_@+-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _whole_token(text: str, start: int, end: int) -> bool:
    """Whether `text[start:end]` is not part of a longer token (a full stop may follow)."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    if after == "." and end + 1 < len(text) and text[end + 1] in _TOKEN:
        return False
    return before not in _TOKEN and before != "." and after not in _TOKEN


def _no_looser(shown: str, policy: Policy) -> bool:
    view_policy = parse_policy(shown)
    return stricter(view_policy, policy) == view_policy

