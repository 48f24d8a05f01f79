"""The one door: every request passes `EgressDoor.pass_request` as the last step before it
leaves (the provider calls it with the model context it is about to send), and every answer to
an outside agent (an MCP client) passes `EgressDoor.pass_answer` (`notebook/outside.py`'s
`to_client` calls it with the blocks it is about to send back).

For each block of the request the door decides what may go: a block tagged with a restricted
source (`egress/tags.py`) is replaced by a marker per source and the view its policy allows;
in any other text (untagged content, the model's own replies, tool results, notebook
context) the distinctive values of restricted variables and files (`egress/values.py`) are
replaced by markers. Then it measures the request it hands on and appends the ledger line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import orjson

from larik_jupyter.egress.ledger import (
    Ledger,
    Part,
    RequestRecord,
    Withheld,
    ledger_path,
    now,
    read_ledger,
)
from larik_jupyter.egress.policy import FULL, NEVER, Policy, PolicySet, parse_policy, stricter
from larik_jupyter.egress.report import by_turn, withheld_line
from larik_jupyter.egress.tags import Tag, source_label, tag_of
from larik_jupyter.egress.values import Found, ValueIndex, file_forms, value_forms
from larik_jupyter.llm.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from larik_jupyter.llm.outside import PREFIX as OUTSIDE_PREFIX
from larik_jupyter.llm.provider import Destination

LOCAL_PROVIDERS = ("ollama", "openai-compatible")
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# Restricted files whose values are indexed, and how much of each is read.
MAX_FILES = 200
MAX_FILE_BYTES = 8 * 1024 * 1024
Build = Callable[[str, list[Message]], dict[str, Any]]
# The kind of a ledger line for an answer to an outside agent (a request's has none).
ANSWER = "answer"


@functools.lru_cache(maxsize=64)
def is_local(destination: Destination) -> bool:
    """An `ollama:`/`openai-compatible:` server on this machine, or no server at all (the
    scripted model, whose requests never leave the process). An outside agent (`mcp:<client>`)
    never is: its model sees what it gets, and where that model runs larik cannot tell."""
    if destination.name.partition(":")[0] == OUTSIDE_PREFIX:
        return False
    if destination.base_url is None:
        return True
    host = urlparse(destination.base_url).hostname or ""
    return destination.name.partition(":")[0] in LOCAL_PROVIDERS and host in _LOCAL_HOSTS


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


def text_bytes(text: str) -> int:
    """The bytes `text` takes inside a JSON string of the request body."""
    return len(orjson.dumps(text)) - 2


@dataclass
class _Outcome:
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
    key: tuple[int, int, str, bool, bool]
    outcome: _Outcome
    searches: dict[int, _Search]


class EgressDoor:
    """The egress policy applied to every request of one session (and its subagents), and
    the ledger it writes. `variables` lists the kernel's user variables (None: no kernel);
    `root` is the project root file targets are relative to."""

    def __init__(
        self,
        policies: PolicySet,
        root: Path,
        ledger: Ledger | None = None,
        variables: Callable[[], Iterable[tuple[str, object]]] | None = None,
    ) -> None:
        self.policies = policies
        self.root = root
        self.ledger = ledger
        self.variables = variables
        self.turn: int | None = None
        self.prompt: int | None = None
        self.records: list[RequestRecord] = []  # the running turn's
        self.index = ValueIndex()
        self._indexed: dict[str, tuple[object, ...]] = {}
        self._index_version = 0
        self._cache: dict[int, _Cached] = {}
        # The searches of the texts of the request's blocks, by the text's id: a block decided
        # again (a new rule or destination), or copied with the same texts (the model context
        # copies a result holding images each request), is not searched again.
        self._searches: dict[int, _Search] = {}
        self._used: dict[int, _Search] = {}  # those of the block being decided
        self._files_key: tuple[int | None, int] | None = None
        self._files: list[tuple[str, Path]] = []

    # -- rules ---------------------------------------------------------------------------

    def set_policy(self, target: str, policy: Policy) -> None:
        """Set `target`'s policy for this session (the notebook's `/egress`), recorded in the
        ledger so a resumed session keeps it."""
        self.policies.set(target, policy, "notebook")
        self._record({"type": "policy", "time": now(), "target": target, "policy": str(policy), "origin": "notebook"})

    def set_local_only(self, on: bool) -> None:
        """Mark the session local-models-only (or not), recorded in the ledger."""
        self.policies.notebook_local_only = on
        self.policies.version += 1
        self._record({"type": "local_only", "time": now(), "value": on})

    def reload(self, policies: PolicySet) -> None:
        """Take the config's rules again (after it changed), keeping the notebook's."""
        for target, resolved in self.policies.rules.items():
            if resolved.origin == "notebook":
                policies.set(target, resolved.policy, "notebook")
        policies.notebook_local_only = self.policies.notebook_local_only
        policies.version = self.policies.version + 1
        self.policies = policies

    def replay(self, records: list[dict[str, Any]]) -> None:
        """Apply the notebook's rules a ledger recorded, oldest first."""
        for record in records:
            try:
                if record.get("type") == "policy":
                    self.policies.set(str(record["target"]), parse_policy(str(record["policy"])), "notebook")
                elif record.get("type") == "local_only":
                    self.policies.notebook_local_only = bool(record["value"])
            except (KeyError, ValueError):
                continue  # a line a newer version wrote, or a hand edit: the config still applies

    def follow(self, other: EgressDoor) -> None:
        """Take the rules the notebook set in `other`'s session (and its local-models-only
        mark) that this one does not hold yet, each recorded in this ledger: the session of an
        outside agent follows the rules the person set in the notebook it works in."""
        for target, resolved in other.policies.rules.items():
            if resolved.origin == "notebook" and self.policies.rules.get(target) != resolved:
                self.set_policy(target, resolved.policy)
        wanted = other.policies.notebook_local_only
        if wanted is not None and wanted != self.policies.notebook_local_only:
            self.set_local_only(wanted)

    def withheld_line(self, turn: int | None) -> str | None:
        """The one line saying what the requests of `turn` (this process's) withheld, or None."""
        records = [r.to_json() for r in self.records if r.turn == turn]
        found = by_turn(records)
        return withheld_line(found[0]) if found else None

    def _record(self, record: dict[str, Any]) -> None:
        if self.ledger is not None:
            self.ledger.append(record)

    # -- policy of a source --------------------------------------------------------------

    def policy_of(self, source: str, destination: Destination | None = None) -> Policy:
        """The policy `source` (`variable:df`, `file:x.csv`) has for a request to `destination`:
        in a local-only session everything restricted goes in full to a local server and not
        at all elsewhere."""
        kind, _, name = source.partition(":")
        if kind == "variable":
            policy = self.policies.for_variable(name).policy
        elif kind == "file":
            policy = self.policies.for_file(name).policy
        else:
            return FULL
        if self.policies.is_local_only() and policy.restricted and destination is not None:
            return FULL if is_local(destination) else NEVER
        return policy

    # -- the value index -----------------------------------------------------------------

    def refresh(self) -> None:
        """Index the values of the restricted variables and files that changed since last."""
        if not self.policies.restricts_anything():
            return  # nothing to look for (what an earlier rule indexed is no longer restricted)
        wanted: dict[str, tuple[object, ...]] = {}
        values: dict[str, object] = {}
        if self.variables is not None:
            for name, value in self.variables():
                source = f"variable:{name}"
                if self.policies.for_variable(name).policy.restricted:
                    wanted[source] = _identity(value)
                    values[source] = value
        for rel, path in self._restricted_files():
            try:
                stat = path.stat()
            except OSError:
                continue
            wanted[f"file:{rel}"] = (stat.st_mtime_ns, stat.st_size)
            values[f"file:{rel}"] = path
        changed = False
        for source in [s for s in self._indexed if s not in wanted]:
            self.index.drop(source)
            del self._indexed[source]
            changed = True
        for source, key in wanted.items():
            if self._indexed.get(source) == key:
                continue
            self.index.add(source, _forms(source, values[source]))
            self._indexed[source] = key
            changed = True
        if changed:
            self._index_version += 1

    def _restricted_files(self) -> list[tuple[str, Path]]:
        """The project's files some rule or the default restricts (at most `MAX_FILES`), from
        one walk of the project a turn (hidden folders and virtual environments left out)."""
        key = (self.turn, self.policies.version)
        if self._files_key != key:
            self._files_key = key
            self._files = []
            # No rule can restrict a file: the project is not walked (a large one takes tens of ms).
            walk = _project_files(self.root) if self.policies.restricts_files() else ()
            for rel, path in walk:
                if self.policies.for_file(rel).policy.restricted:
                    self._files.append((rel, path))
                    if len(self._files) >= MAX_FILES:
                        break
        return self._files

    # -- the door ------------------------------------------------------------------------

    def pass_request(
        self, destination: Destination, system: str, messages: list[Message], build: Build
    ) -> dict[str, Any]:
        """Filter `messages`, build the request body with `build(system, messages)`, record
        its ledger line and return the body."""
        open_all = self.policies.is_local_only() and is_local(destination)
        if not open_all:
            self.refresh()
            # The untagged texts are searched first, one after another: interleaved with the
            # blocks' decisions the same lookups took 0.3-0.5 ms longer (bench_egress.py).
            for message in messages:
                for block in message.content:
                    if "egress" not in (block.model_extra or ()) and (text := _text_of(block)) is not None:
                        self._search(text)
        parts = [Part("system prompt", text_bytes(system))] if system else []
        withheld: list[Withheld] = []
        sent: list[Message] = []
        names = {c.id: c.name for m in messages for c in m.tool_uses()}
        # The thinking of the reply whose calls the last message answers must go back as it
        # came (signed, and the API requires it there); any other reply's may be left out.
        last_reply = -1
        if len(messages) >= 2 and messages[-1].tool_results() and messages[-2].role == "assistant":
            last_reply = len(messages) - 2
        key = (self.policies.version, self._index_version, destination.name, is_local(destination))
        # DeepSeek wants a tool-calling reply's reasoning back in every request.
        keeps_reasoning = not destination.name.startswith("anthropic:")
        for position, message in enumerate(messages):
            content: list[ContentBlock] = []
            changed = False
            for block in message.content:
                where = _where(block, message, names)
                if open_all:
                    outcome = _Outcome(block, _measure(block, where))
                else:
                    earlier = (
                        isinstance(block, ThinkingBlock)
                        and position != last_reply
                        and not (keeps_reasoning and message.tool_uses())
                    )
                    outcome = self._block(block, where, destination, (*key, earlier))
                if outcome.block is not None:
                    content.append(outcome.block)
                changed = changed or outcome.block is not block
                parts += outcome.parts
                withheld += outcome.withheld
            sent.append(message.model_copy(update={"content": content}) if changed else message)
        # Only the blocks of this request stay decided: what compaction dropped is let go.
        kept = {id(b) for m in messages for b in m.content}
        self._cache = {k: v for k, v in self._cache.items() if k in kept}
        self._searches = {k: v for c in self._cache.values() for k, v in c.searches.items()}
        body = build(system, sent)
        tools = body.get("tools")
        if tools:
            parts.append(Part("tool definitions", len(orjson.dumps(tools))))
        self._account(destination, body, parts, withheld)
        return body

    def pass_answer(
        self,
        destination: Destination,
        pieces: Sequence[tuple[str, ContentBlock]],
        build: Callable[[list[ContentBlock]], dict[str, Any]],
        withheld: Sequence[Withheld] = (),
    ) -> dict[str, Any]:
        """What goes back to an outside agent (an MCP client, `destination` `mcp:<client>`):
        each piece (the ledger's name for it, its block: a tool result as stored, with its tag,
        or a text) decided as a request's block is, the answer built with `build(blocks)`,
        measured and recorded (kind `answer`); `withheld` is what was kept out of a piece
        before it was made (`filter_messages`). Returns the answer."""
        self.refresh()
        parts: list[Part] = []
        held = list(withheld)
        blocks: list[ContentBlock] = []
        for where, block in pieces:
            outcome = self._decide(block, where, destination)
            blocks.append(outcome.block)
            parts += outcome.parts
            held += outcome.withheld
        body = build(blocks)
        self._account(destination, body, parts, held, kind=ANSWER)
        return body

    def filter_messages(self, destination: Destination, messages: Sequence[Message]) -> tuple[list[Message], list[Withheld]]:
        """`messages` as the door would let them out to `destination`, block by block (a
        thinking block with a restricted value left out), and what it withheld: a transcript
        sent as one text is made from these, so its tagged content is withheld as its tags say."""
        self.refresh()
        names = {c.id: c.name for m in messages for c in m.tool_uses()}
        out: list[Message] = []
        withheld: list[Withheld] = []
        for message in messages:
            content: list[ContentBlock] = []
            for block in message.content:
                where = _where(block, message, names)
                if isinstance(block, ThinkingBlock):
                    outcome = self._thinking(block, destination)
                else:
                    outcome = self._decide(block, where, destination)
                if outcome.block is not None:
                    content.append(outcome.block)
                withheld += outcome.withheld
            same = len(content) == len(message.content) and all(
                a is b for a, b in zip(content, message.content, strict=True)
            )
            out.append(message if same else message.model_copy(update={"content": content}))
        return out, withheld

    def _account(
        self, destination: Destination, body: dict[str, Any], parts: list[Part], withheld: list[Withheld],
        kind: str | None = None,
    ) -> None:
        """Measure `body` (its `framing` part is what the other parts do not cover) and append
        its ledger line."""
        total = len(orjson.dumps(body))
        parts.append(Part("framing", total - sum(p.bytes for p in parts)))
        record = RequestRecord(
            time=now(), destination=destination.name, local=is_local(destination), bytes=total,
            parts=_merged(parts), withheld=withheld, turn=self.turn, prompt=self.prompt, kind=kind,
        )
        # This process's records of the running turn (its one-line notice reads them).
        self.records = [r for r in self.records if r.turn == self.turn] + [record]
        if self.ledger is not None:
            self.ledger.append(record.to_json())

    def _block(self, block: Any, where: str, destination: Destination, key: tuple[int, int, str, bool, bool]) -> _Outcome:
        """`block` decided under `key` (the rules' and the index's versions, the destination,
        whether it is an earlier reply's thinking), or as it was last time under the same key."""
        cached = self._cache.get(id(block))
        if cached is not None and cached.block is not block:
            cached = None
        if cached is not None and cached.key == key:
            return cached.outcome
        self._used = {}
        if key[4]:
            outcome = self._thinking(block, destination)
        else:
            outcome = self._decide(block, where, destination)
        self._cache[id(block)] = _Cached(block, key, outcome, self._used)
        return outcome

    def _decide(self, block: Any, where: str, destination: Destination) -> _Outcome:
        if "egress" in (block.model_extra or ()):
            tag = tag_of(block)
            restricted = [(s, p) for s in tag.sources if (p := self.policy_of(s, destination)).restricted]
            if restricted:
                return self._replace(block, where, restricted, tag.views)
            if tag.spans:
                block, withheld = self._spans(block, where, tag, destination)
                outcome = self._decide(block, where, destination)
                outcome.withheld[:0] = withheld
                return outcome
        if isinstance(block, TextBlock):
            # Prompts too: a `--expand`ed `{df}` or a pasted row is data like any other.
            text, found = self._scrub(block.text, where, destination)
            new = block if not found else block.model_copy(update={"text": text})
            return _Outcome(new, [Part(where, text_bytes(text))], found)
        if isinstance(block, ToolResultBlock):
            return self._result(block, where, destination)
        if isinstance(block, ToolUseBlock):
            held: list[Withheld] = []
            scrubbed = self._scrub_json(block.input, where, destination, held)
            call = block if not held else block.model_copy(update={"input": scrubbed})
            return _Outcome(call, _measure(call, where), held)
        return _Outcome(block, _measure(block, where))

    def _result(self, block: ToolResultBlock, where: str, destination: Destination) -> _Outcome:
        if isinstance(block.content, str):
            text, found = self._scrub(block.content, where, destination)
            new = block if not found else block.model_copy(update={"content": text})
            return _Outcome(new, [Part(where, text_bytes(text))], found)
        inner: list[Any] = []
        parts: list[Part] = []
        withheld: list[Withheld] = []
        for item in block.content:
            label = f"image of {where.removeprefix('result of ')}" if isinstance(item, ImageBlock) else where
            outcome = self._decide(item, label, destination)
            inner.append(outcome.block)
            parts += outcome.parts
            withheld += outcome.withheld
        changed = any(a is not b for a, b in zip(inner, block.content, strict=True))
        return _Outcome(block.model_copy(update={"content": inner}) if changed else block, parts, withheld)

    def _thinking(self, block: ThinkingBlock, destination: Destination) -> _Outcome:
        """An earlier reply's thinking, left out when it holds a restricted value (a signed
        block cannot be changed, only dropped)."""
        found = [
            Withheld(item.label, str(policy), "the model's thinking")
            for item in self._find(block.thinking)
            if (policy := self.policy_of(item.source, destination)).restricted
        ]
        if found:
            return _Outcome(None, [], found)
        return _Outcome(block, [Part("the model's replies", text_bytes(block.thinking))])

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

    def _search(self, text: str) -> _Search:
        """`text`'s search under the index's version, made once."""
        search = self._searches.get(id(text))
        if search is None or search[0] is not text or search[1] != self._index_version:
            search = (text, self._index_version, self.index.find(text))
            self._searches[id(text)] = search
        return search

    def _find(self, text: str) -> list[Found]:
        """The indexed values in `text`, kept with the block being decided."""
        search = self._used[id(text)] = self._search(text)
        return search[2]

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
        # Longest first, and only whole tokens: `1234.5` is not withheld out of `91234.56`.
        for value in sorted(found, key=len, reverse=True):
            item, policy = found[value]
            at = text.find(value)
            while at >= 0:
                end = at + len(value)
                if _whole_token(text, at, end) and not any(a < end and at < b for a, b in taken):
                    spans.append((at, end, marker(item.label, policy, source_label(item.source))))
                    taken.append((at, end))
                    key = (item.label, str(policy))
                    if key in withheld:
                        withheld[key].count += 1
                    else:
                        withheld[key] = Withheld(item.label, str(policy), where)
                at = text.find(value, end)
        pieces = []
        last = 0
        for at, end, said in sorted(spans):
            pieces += [text[last:at], said]
            last = end
        return "".join([*pieces, text[last:]]), list(withheld.values())

    def _spans(self, block: Any, where: str, tag: Tag, destination: Destination) -> tuple[Any, list[Withheld]]:
        """`block` (untagged now) with each span of its text made from a restricted source
        replaced by the markers and views `_replace` would send for the whole."""
        text = _text_of(block)
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
    ) -> _Outcome:
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
        return _Outcome(new, parts, withheld)


def _text_of(block: Any) -> str | None:
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


def _with_text(block: Any, text: str) -> Any:
    """`block` with the text `_text_of` reads replaced, and no tag."""
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


# Folders never searched for restricted files: tools' and environments' own.
_SKIPPED = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "env"})
MAX_WALKED = 50_000


def _project_files(root: Path) -> Iterable[tuple[str, Path]]:
    """The regular files under `root` (no link followed), relative POSIX path and path, at most
    `MAX_WALKED` entries looked at."""
    walked = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
        for name in sorted(files):
            walked += 1
            if walked > MAX_WALKED:
                return
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                yield path.relative_to(root).as_posix(), path


def _no_looser(shown: str, policy: Policy) -> bool:
    view_policy = parse_policy(shown)
    return stricter(view_policy, policy) == view_policy


def _identity(value: object) -> tuple[object, ...]:
    """What says a restricted variable changed since it was indexed: the object, its shape and
    length (a value whose look-ups raise is known by the object alone)."""
    try:
        return (id(value), getattr(value, "shape", None), len(value))  # type: ignore[arg-type]
    except Exception:
        try:
            return (id(value), getattr(value, "shape", None), None)
        except Exception:
            return (id(value), None, None)


def _forms(source: str, value: object) -> Iterable[tuple[str, str]]:
    kind, _, name = source.partition(":")
    if kind == "file" and isinstance(value, Path):
        try:
            with open(value, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as handle:
                text = handle.read(MAX_FILE_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return []
        return list(file_forms(name, text))
    try:
        return list(value_forms(name, value))
    except Exception:  # a value that cannot be walked is still covered by its tags
        return []


def _where(block: Any, message: Message, names: dict[str, str]) -> str:
    """The ledger's name for the part a block is."""
    if isinstance(block, ToolResultBlock):
        tool = names.get(block.tool_use_id)
        return f"result of call {block.tool_use_id}" + (f" ({tool})" if tool else "")
    if message.role == "assistant":
        return "the model's replies"
    if isinstance(block, TextBlock):
        if block.text.startswith("<notebook-context"):
            return "notebook context"
        if block.text.startswith("<notebook-data"):
            return "attachments"
        if block.text.startswith("<system-note>"):
            return "system notes"
        return "prompts" if message.is_prompt() else "earlier context"
    if isinstance(block, ImageBlock):
        return "images attached to prompts"
    return "earlier context"


def _measure(block: Any, where: str) -> list[Part]:
    if isinstance(block, TextBlock):
        return [Part(where, text_bytes(block.text))]
    if isinstance(block, ImageBlock):
        return [Part(where, len(str(block.source.get("data") or block.source.get("url") or "")))]
    if isinstance(block, ToolUseBlock):
        return [Part(where, len(orjson.dumps(block.input)))]
    if isinstance(block, ToolResultBlock):
        if isinstance(block.content, str):
            return [Part(where, text_bytes(block.content))]
        return [p for item in block.content for p in _measure(item, where)]
    text = getattr(block, "thinking", None)
    return [Part(where, text_bytes(text))] if isinstance(text, str) else []


def _merged(parts: list[Part]) -> list[Part]:
    """Parts of the same source added up, in first-seen order."""
    merged: dict[str, Part] = {}
    for part in parts:
        if part.source in merged:
            merged[part.source].bytes += part.bytes
        else:
            merged[part.source] = Part(part.source, part.bytes)
    return list(merged.values())



def open_door(
    policies: PolicySet,
    root: Path,
    transcript: Path,
    variables: Callable[[], Iterable[tuple[str, object]]] | None,
    inherited: Sequence[Path] = (),
) -> EgressDoor:
    """The door of the session whose transcript is `transcript`: its ledger beside it, and
    the rules the notebook set in it before (recorded in the ledger) applied again, after
    those of the sessions it was forked from (`inherited`, oldest first): a branch keeps them."""
    door = EgressDoor(policies, root, Ledger(ledger_path(transcript)), variables)
    for path in [*inherited, transcript]:
        door.replay(read_ledger(ledger_path(path)))
    return door
