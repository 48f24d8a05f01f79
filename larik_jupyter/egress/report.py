"""The egress ledger in words: a turn's requests by source, the session's totals, and the one
line a turn that withheld something ends with (`/egress`, `larik-jupyter egress`, the sidebar)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.egress.accounting import RESULT_OF_CALL
from larik_jupyter.egress.ledger import ANSWER, LedgerRecord, RequestRecord
from larik_jupyter.egress.policy import PolicySet, is_variable_target, stricter
from larik_jupyter.plural import counted


@dataclass
class TurnEgress:
    """What the requests of one turn sent: `bytes` by source, in all, and what was withheld
    (`source (policy)` -> times). `requests` counts every line, `answers` those that were
    answers to an outside agent (MCP)."""

    turn: int | None
    prompt: int | None
    requests: int = 0
    answers: int = 0
    bytes: int = 0
    parts: dict[str, int] = field(default_factory=dict)
    withheld: dict[str, int] = field(default_factory=dict)
    destinations: list[str] = field(default_factory=list)

    def hold(self, source: str, policy: str, count: int) -> None:
        """Count `count` values of `source` withheld under `policy`."""
        name = f"{source} ({policy})"
        self.withheld[name] = self.withheld.get(name, 0) + count

    def sent(self) -> str:
        """`2 requests`, `1 answer to an outside agent`, or both."""
        return _counted(self.requests - self.answers, self.answers)

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn, "prompt": self.prompt, "requests": self.requests, "bytes": self.bytes,
            "parts": self.parts, "withheld": self.withheld, "destinations": self.destinations,
        }


def by_turn(records: Iterable[LedgerRecord]) -> list[TurnEgress]:
    """The ledger's request lines grouped by turn, oldest first. What a turn withheld counts
    once, on that turn: a call's result withheld again when later requests send it as history
    is not counted again."""
    turns: dict[int | None, TurnEgress] = {}
    held: dict[tuple[str, str], int | None] = {}  # (where, source) of a call's result: the turn that withheld it
    for record in records:
        if not isinstance(record, RequestRecord):
            continue
        key = record.turn
        turn = turns.get(key)
        if turn is None:
            turn = turns[key] = TurnEgress(key, record.prompt)
        turn.requests += 1
        if record.kind == ANSWER:
            turn.answers += 1
        turn.bytes += record.bytes
        for part in record.parts:
            turn.parts[part.source] = turn.parts.get(part.source, 0) + part.bytes
        for item in record.withheld:
            if item.where.startswith(RESULT_OF_CALL) and held.setdefault((item.where, item.source), key) != key:
                continue
            turn.hold(item.source, item.policy, item.count)
        if record.destination not in turn.destinations:
            turn.destinations.append(record.destination)
    return list(turns.values())


def withheld_line(turn: TurnEgress) -> str | None:
    """`Withheld from the model this turn: df (schema), data/x.csv (never).` or None."""
    if not turn.withheld:
        return None
    return "Withheld from the model this turn: " + ", ".join(turn.withheld) + " (`%larik /egress` shows the ledger)."


def _counted(requests: int, answers: int) -> str:
    said = [counted(requests, "request")] if requests or not answers else []
    return " and ".join([*said, *([f"{counted(answers, 'answer')} to an outside agent"] if answers else [])])


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1024:,.1f} KiB"


def named(source: str, calls: Mapping[str, str]) -> str:
    """A ledger part as people read it: `result of call 3 (`python: df.head()`)` for the
    `result of call <id> (<tool>)` of a call `calls` names (by id), else as recorded."""
    if source.startswith(RESULT_OF_CALL):
        call_id = source.removeprefix(RESULT_OF_CALL).split(" ", 1)[0]
        if call_id in calls:
            return f"result of {calls[call_id]}"
    return source


def render(records: Iterable[LedgerRecord], rules: list[str] | None = None, calls: Mapping[str, str] | None = None) -> str:
    """The last turn's requests by source and the session's totals, as Markdown; `calls` names
    the session's calls by id (`tools.calls.numbered_calls`)."""
    turns = by_turn(records)
    lines: list[str] = []
    if rules:
        lines += ["**Rules in force**", "", *(f"- {r}" for r in rules), ""]
    if not turns:
        lines.append("No request has left this session yet.")
        return "\n".join(lines)
    last = turns[-1]
    label = f"prompt {last.prompt}" if last.prompt is not None else "the last turn"
    lines += [
        f"**Last turn ({label})**: {last.sent()}, {_size(last.bytes)} to {', '.join(last.destinations)}",
        "",
        "| source | bytes |",
        "|---|---:|",
        *(f"| {named(source, calls or {})} | {n:,} |" for source, n in last.parts.items()),
        "",
    ]
    lines.append(withheld_line(last) or "Nothing was withheld in that turn.")
    lines += ["", "**Session**: " + totals(turns)]
    return "\n".join(lines)


def totals(turns: list[TurnEgress]) -> str:
    """`3 requests in 2 turns, 1,234 B sent.`, then what was withheld in all, if anything."""
    withheld: dict[str, int] = {}
    for turn in turns:
        for name, n in turn.withheld.items():
            withheld[name] = withheld.get(name, 0) + n
    said = (
        f"{_counted(sum(t.requests - t.answers for t in turns), sum(t.answers for t in turns))} "
        f"in {counted(len(turns), 'turn')}, {_size(sum(t.bytes for t in turns))} sent."
    )
    if withheld:
        said += "\nWithheld: " + ", ".join(f"{name} ×{n}" for name, n in withheld.items()) + "."
    return said


def rule_lines(policies: PolicySet, *, origins: bool = False) -> list[str]:
    """One line per rule in force (`variable df: schema`), the default and local-only mode;
    with `origins`, where each was set."""

    def origin(text: str) -> str:
        return f" ({text})" if origins else ""

    lines = []
    default = stricter(policies.default, policies.floor_default)
    if default.restricted:
        where = "repository config" if default != policies.default else policies.default_origin
        lines.append(f"every variable and data file no rule names: {default}{origin(where)}")
    for target in dict.fromkeys([*policies.rules, *policies.floor]):
        if is_variable_target(target):
            resolved = policies.for_variable(target)
            if resolved.sources:  # lineage: `variable top (from cust, schema)`
                lines.append(f"variable {target} (from {', '.join(resolved.sources)}, {resolved.policy})")
            else:
                lines.append(f"variable {target}: {resolved.policy}{origin(resolved.origin)}")
        else:
            resolved = policies.for_file(target)
            lines.append(f"files {target}: {resolved.policy}{origin(resolved.origin)}")
    if policies.is_local_only():
        lines.append("local models only: restricted data goes only to ollama:/openai-compatible: servers on this machine")
    return lines
