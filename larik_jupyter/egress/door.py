"""The one door: every request passes `EgressDoor.pass_request` as the last step before it
leaves (the provider calls it with the model context it is about to send), and every answer to
an outside agent (an MCP client) passes `EgressDoor.pass_answer` (`notebook/outside.py`'s
`to_client` calls it with the blocks it is about to send back).

For each block of the request the door decides what may go: a block tagged with a restricted
source (`egress/tags.py`) is replaced by a marker per source and the view its policy allows;
in any other text (untagged content, the model's own replies, tool results, notebook
context) the distinctive values of restricted variables and files (`egress/values.py`) are
replaced by markers (`egress/decisions.py`, with the index `egress/restricted.py` keeps). Then
it measures the request it hands on and appends the ledger line (`egress/accounting.py`).
The rules it decides by, kept in step with the kernel's and recorded, are `DoorRules`'
(`egress/door_rules.py`), which the door is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec
import orjson

from larik_jupyter.egress.accounting import (
    RESULT_OF_CALL,
    is_local,
    ledger_line,
    measure,
    text_bytes,
    where_of,
)
from larik_jupyter.egress.decisions import BlockDecisions, Outcome, text_of
from larik_jupyter.egress.door_rules import DoorRules
from larik_jupyter.egress.kernel_rules import recorded_origin
from larik_jupyter.egress.ledger import (
    ANSWER,
    Ledger,
    Part,
    RequestRecord,
    Withheld,
    ledger_path,
    read_ledger,
)
from larik_jupyter.egress.lineage import lineage_of
from larik_jupyter.egress.policy import PolicySet
from larik_jupyter.egress.report import TurnEgress, withheld_line
from larik_jupyter.egress.restricted import RestrictedValues
from larik_jupyter.egress.values import ValueIndex
from larik_jupyter.llm.messages import ContentBlock, Message, ThinkingBlock, ToolResultBlock
from larik_jupyter.llm.provider import Destination

# What `pass_answer` builds: the MCP link's answer, or an ask's words (anything sent as JSON).
Built = TypeVar("Built")

Build = Callable[[str, list[Message]], dict[str, Any]]


class TurnMark(NamedTuple):
    """The turn a ledger line belongs to: its checkpoint turn and its prompt number (None: none)."""

    turn: int | None
    prompt: int | None


NO_TURN = TurnMark(None, None)


@dataclass
class _Sent:
    """A message as it went in a request under `key` (the rules', the index's and the
    destination's, and whether it was the reply the last results answer): the message sent
    for it, its parts and what was withheld."""

    message: Message
    key: tuple[object, ...]
    sent: Message
    parts: list[Part]
    withheld: list[Withheld]


class EgressDoor(DoorRules):
    """The egress policy applied to every request of one session (and its subagents), and
    the ledger it writes. `variables` lists the kernel's user variables (None: no kernel);
    `root` is the project root file targets are relative to; `turn_of` says which turn a line
    belongs to now (the session's running turn, else its last: the door holds no turn of its own)."""

    def __init__(
        self,
        policies: PolicySet,
        root: Path,
        ledger: Ledger | None = None,
        variables: Callable[[], Iterable[tuple[str, object]]] | None = None,
        content_key: Callable[[str, object], object] | None = None,
        turn_of: Callable[[], TurnMark] = lambda: NO_TURN,
    ) -> None:
        super().__init__(policies, ledger)
        self.turn_of = turn_of
        self.records: list[RequestRecord] = []  # the running turn's
        # The calls' results whose withholding a turn's line said already (`withheld_line`).
        self._said: set[tuple[str, str]] = set()
        self._sent: dict[int, _Sent] = {}  # by the message's id
        self._names: dict[str, str] = {}  # each call's tool, by call id, of the messages seen
        self.values = RestrictedValues(root, variables, content_key)
        self.decisions = BlockDecisions(self.values, self.policy_of)

    def withheld_line(self, turn: int | None) -> str | None:
        """The one line saying what the requests of `turn` (this process's) withheld, or None. A
        call's result an earlier turn withheld already, sent again as history, is not said again:
        the line appears only on the turn that withheld."""
        said = TurnEgress(turn, self.turn_of().prompt)
        for record in self.records:
            if record.turn == turn:
                for item in record.withheld:
                    if (item.where, item.source) not in self._said:
                        said.hold(item.source, item.policy, item.count)
        self._said |= {
            (item.where, item.source) for record in self.records if record.turn == turn
            for item in record.withheld if item.where.startswith(RESULT_OF_CALL)
        }
        return withheld_line(said)

    def _rules_changed(self) -> None:
        # The index of what the rules now restrict starts building (in the background) now,
        # not at the next request (`egress/builder.py`).
        self.values.refresh(self.policies, self.turn_of().turn)

    # -- the value index -----------------------------------------------------------------

    @property
    def index(self) -> ValueIndex:
        """The index of the restricted values (`egress/restricted.py`)."""
        return self.values.index

    def refresh(self) -> None:
        """Take the notebook's rules changed since last, and index the values of the restricted
        variables and files that changed since last."""
        self.sync()
        self.values.refresh(self.policies, self.turn_of().turn)

    def _changed_by(self, blocks: Iterable[ContentBlock]) -> None:
        """The variables the calls whose new results are among `blocks` say they changed (a
        change in place keeps the object): looked at again before this request leaves."""
        for block in blocks:
            if isinstance(block, ToolResultBlock) and block.variables and not self.decisions.seen(block):
                self.values.stale(str(c.get("name")) for c in block.variables if isinstance(c, dict))
                self.derive(lineage_of([block]), resumed=False)

    # -- the door ------------------------------------------------------------------------

    def pass_request(
        self, destination: Destination, system: str, messages: list[Message], build: Build
    ) -> dict[str, Any]:
        """Filter `messages`, build the request body with `build(system, messages)`, record
        its ledger line and return the body. A message decided for an earlier request under
        the same rules, index and destination goes as it went then, unlooked at: the work per
        request is in proportion to what is new in it."""
        open_all = self.policies.is_local_only() and is_local(destination)
        # The thinking of the reply whose calls the last message answers must go back as it
        # came (signed, and the API requires it there); any other reply's may be left out.
        last_reply = -1
        if len(messages) >= 2 and messages[-1].tool_results() and messages[-2].role == "assistant":
            last_reply = len(messages) - 2
        if not open_all:
            self._changed_by(b for m in messages if self._went(m) is None for b in m.content)
            self.refresh()
        key = (self.policies.version, self.values.version, destination.name, is_local(destination))
        kept = [
            None if open_all else self._kept(message, (*key, position == last_reply))
            for position, message in enumerate(messages)
        ]
        if not open_all:
            # The untagged texts are searched first, as one batch: interleaved with the blocks'
            # decisions the same searches took longer (bench_egress.py).
            self.decisions.search_all([
                text
                for message, went in zip(messages, kept, strict=True)
                if went is None
                for block in message.content
                if "egress" not in (block.model_extra or ()) and (text := text_of(block)) is not None
            ])
        parts = [Part("system prompt", text_bytes(system))] if system else []
        withheld: list[Withheld] = []
        sent: list[Message] = []
        names = self._names
        # DeepSeek wants a tool-calling reply's reasoning back in every request.
        keeps_reasoning = not destination.name.startswith("anthropic:")
        for position, (message, went) in enumerate(zip(messages, kept, strict=True)):
            if went is None:
                # A call comes before its result: its message is new now, or was when it went.
                names.update((c.id, c.name) for c in message.tool_uses())
                content: list[ContentBlock] = []
                went_parts: list[Part] = []
                went_withheld: list[Withheld] = []
                changed = False
                for block in message.content:
                    where = where_of(block, message, names)
                    if open_all:
                        outcome = Outcome(block, measure(block, where))
                    else:
                        earlier = (
                            isinstance(block, ThinkingBlock)
                            and position != last_reply
                            and not (keeps_reasoning and message.tool_uses())
                        )
                        outcome = self.decisions.block(block, where, destination, (*key, earlier))
                    if outcome.block is not None:
                        content.append(outcome.block)
                    changed = changed or outcome.block is not block
                    went_parts += outcome.parts
                    went_withheld += outcome.withheld
                out = message.model_copy(update={"content": content}) if changed else message
                went = _Sent(message, (*key, position == last_reply), out, went_parts, went_withheld)
                if not open_all:
                    self._sent[id(message)] = went
            sent.append(went.sent)
            parts += went.parts
            withheld += went.withheld
        if len(self._sent) > 2 * len(messages) + 8:
            # Only the messages of this request stay decided: what compaction dropped is let go.
            self._sent = {id(m): went for m in messages if (went := self._sent.get(id(m))) is not None}
            self._names = {c.id: c.name for m in messages for c in m.tool_uses()}
            self.decisions.keep(messages)
        body = build(system, sent)
        tools = body.get("tools")
        if tools:
            parts.append(Part("tool definitions", len(orjson.dumps(tools))))
        self._account(destination, body, parts, withheld)
        return body

    def forget(self) -> None:
        """Forget how every message went and every search: the next request is decided from
        scratch, as in a new process."""
        self._sent.clear()
        self._names.clear()
        self.decisions.clear()

    def _went(self, message: Message) -> _Sent | None:
        """How `message` went in an earlier request (its blocks all decided then), or None."""
        went = self._sent.get(id(message))
        return went if went is not None and went.message is message else None

    def _kept(self, message: Message, key: tuple[object, ...]) -> _Sent | None:
        """How `message` went in an earlier request under `key`, or None."""
        went = self._went(message)
        return went if went is not None and went.key == key else None

    def pass_answer(
        self,
        destination: Destination,
        pieces: Sequence[tuple[str, ContentBlock]],
        build: Callable[[list[ContentBlock]], Built],
        withheld: Sequence[Withheld] = (),
    ) -> Built:
        """What goes back to an outside agent (an MCP client, `destination` `mcp:<client>`):
        each piece (the ledger's name for it, its block: a tool result as stored, with its tag,
        or a text) decided as a request's block is, the answer built with `build(blocks)`,
        measured as the JSON it is sent as and recorded (kind `answer`); `withheld` is what was
        kept out of a piece before it was made (`filter_messages`). Returns the answer."""
        self._changed_by(block for _, block in pieces)
        self.refresh()
        parts: list[Part] = []
        held = list(withheld)
        blocks: list[ContentBlock] = []
        for where, block in pieces:
            outcome = self.decisions.decide(block, where, destination)
            blocks.append(outcome.block)
            parts += outcome.parts
            held += outcome.withheld
        body = build(blocks)
        self._account(destination, msgspec.to_builtins(body), parts, held, kind=ANSWER)
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
                where = where_of(block, message, names)
                if isinstance(block, ThinkingBlock):
                    outcome = self.decisions.thinking(block, destination)
                else:
                    outcome = self.decisions.decide(block, where, destination)
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
        """Measure `body` and append its ledger line."""
        mark = self.turn_of()
        line = ledger_line(destination, body, parts, withheld, mark.turn, mark.prompt, kind)
        # This process's records of the running turn (its one-line notice reads them).
        if self.records and self.records[-1].turn != mark.turn:
            self.records = []
        self.records.append(line)
        if self.ledger is not None:
            self.ledger.append(line)


def open_door(
    policies: PolicySet,
    root: Path,
    transcript: Path,
    variables: Callable[[], Iterable[tuple[str, object]]] | None,
    inherited: Sequence[Path] = (),
    content_key: Callable[[str, object], object] | None = None,
    turn_of: Callable[[], TurnMark] = lambda: NO_TURN,
) -> EgressDoor:
    """The door of the session whose transcript is `transcript`: its ledger beside it, and
    the rules the notebook set in it before (recorded in the ledger) applied again, after
    those of the sessions it was forked from (`inherited`, oldest first): a branch keeps them."""
    door = EgressDoor(policies, root, Ledger(ledger_path(transcript)), variables, content_key, turn_of)
    for path in [*inherited, transcript]:
        origin = recorded_origin(path.name.removesuffix(".jsonl"))
        door.replay(read_ledger(ledger_path(path)), origin, own=path == transcript)
    door.sync()
    return door
