"""What a `python` or `notebook_run` call did to the user's variables, as stored with its
`tool_result` (`variables`) and shown under the call by every view (live, terminal,
`/history`, export, the undo panel)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from larik_jupyter.llm.messages import Message
from larik_jupyter.plural import counted

Change = Literal["created", "rebound", "changed", "deleted", "unknown"]


class VariableChange(BaseModel):
    """One variable a call touched: `before` and `after` are its type and shape
    (`DataFrame 1000×5`), absent where it did not exist; `note` says why a change is unknown,
    or how a generator changed (`state advanced`, `consumed`; else it is `changed in place`);
    `route` how code that does not name it changed it (`f()`, `globals()`, `the alias d`);
    `rolled_back` true when protect mode put it back as it was before the call;
    `restricted_from` the restricted sources the call's code read, which make the variable
    restricted by `policy` too (lineage, `egress/lineage.py`); for a frame, `gained_missing`
    (column → how many more missing values) and `dtypes` (column → `int64 → float64`), the
    columns the call changed so (`frames/column_profile.py`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    change: Change
    before: str | None = None
    after: str | None = None
    note: str | None = None
    route: str | None = None
    rolled_back: bool | None = None
    restricted_from: list[str] | None = None
    policy: str | None = None
    gained_missing: dict[str, int] | None = None
    dtypes: dict[str, str] | None = None

    def text(self) -> str:
        """`df: DataFrame 1000×5 → 1000×4, changed in place`, `x: created int`, `y: deleted`,
        `rng: Generator, state advanced`, `gen: generator, consumed`,
        `df: DataFrame 1000×5, changed in place through f(), rolled back`."""
        how = f" through {self.route}" if self.route else ""
        derived = f", restricted (from {', '.join(self.restricted_from)}, {self.policy})" if self.restricted_from else ""
        columns = "".join(f", {c} gained {counted(n, 'missing value')}" for c, n in (self.gained_missing or {}).items())
        columns += "".join(f", {c} {change}" for c, change in (self.dtypes or {}).items())
        return self._what(how) + (", rolled back" if self.rolled_back else "") + columns + derived

    def _what(self, how: str) -> str:
        if self.change == "created":
            return f"{self.name}: created {self.after or ''}".rstrip()
        if self.change == "deleted":
            return f"{self.name}: deleted{how}"
        if self.change == "unknown":
            return f"{self.name}: {self.before}, may have changed ({self.note or 'not compared'})"
        before, after = self.before or "", self.after or ""
        shown = before
        if after != before:
            kind, _, shape = after.partition(" ")
            same_type = before.partition(" ")[0] == kind and shape
            shown = f"{kind} {_changed_words(before.partition(' ')[2], shape)}" if same_type else f"{before} → {after}"
        if self.change == "changed":
            return f"{self.name}: {shown}, {self.note or 'changed in place'}{how}"
        return f"{self.name}: {shown}" + (", rebound" if after == before or how else "") + how


def _changed_words(before: str, after: str) -> str:
    """`1000×5 → 1000×4`, `len 3 → len 4`; where both sides end in the same words (a unit),
    the words they share kept once around the arrow: `table orders 1,000 → 990 rows` (a DuckDB
    connection's tables)."""
    old, new = before.split(" "), after.split(" ")
    head = 0
    while head < min(len(old), len(new)) - 1 and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head - 1 and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if not tail:  # no unit after the numbers (`len 3 → len 4`): both sides whole
        return f"{before} → {after}"
    middle = f"{' '.join(old[head:len(old) - tail])} → {' '.join(new[head:len(new) - tail])}"
    return " ".join([*old[:head], middle, *old[len(old) - tail:]])


def changes_text(changes: Iterable[VariableChange]) -> str:
    """The changes of one call on one line."""
    return " · ".join(change.text() for change in changes)


def changes_of(stored: list[dict[str, Any]] | None) -> list[VariableChange]:
    """The changes a `tool_result` holds (a malformed item, from a damaged file, is skipped)."""
    out = []
    for item in stored or []:
        try:
            out.append(VariableChange.model_validate(item))
        except ValidationError:
            continue
    return out


def turn_changes(messages: Iterable[Message], prompt_number: int) -> list[VariableChange]:
    """What the turn of prompt `prompt_number` (1-based) did to each variable over all its calls: the
    first state before it and the last after it (a variable it created then deleted is left
    out), for the undo panel."""
    merged: dict[str, VariableChange] = {}
    seen = 0
    for message in messages:
        if message.is_prompt():
            seen += 1
        elif seen == prompt_number:
            for block in message.tool_results():
                for change in changes_of(block.variables):
                    merged[change.name] = _merge(merged.get(change.name), change)
    return [c for c in merged.values() if not (c.change == "deleted" and c.before is None)]


def _merge(first: VariableChange | None, then: VariableChange) -> VariableChange:
    if first is None:
        return then
    if then.change == "deleted":
        kind: Change = "deleted"
    elif first.change == "created":
        kind = "created"
    elif "unknown" in (first.change, then.change):
        kind = "unknown"
    elif "rebound" in (first.change, then.change):
        kind = "rebound"
    else:
        kind = "changed"
    return VariableChange(
        name=then.name, change=kind, before=first.before, after=then.after, note=then.note or first.note,
        route=then.route or first.route, rolled_back=then.rolled_back,
        gained_missing=_summed(first.gained_missing, then.gained_missing), dtypes={**(first.dtypes or {}), **(then.dtypes or {})} or None,
    )


def _summed(first: dict[str, int] | None, then: dict[str, int] | None) -> dict[str, int] | None:
    both = dict(first or {})
    for column, count in (then or {}).items():
        both[column] = both.get(column, 0) + count
    return both or None


def made_by_prompt(messages: Iterable[Message], undone: Iterable[int] = ()) -> dict[str, int]:
    """Each variable the agent's calls left made (created, rebound or changed, and not rolled
    back) with the last prompt (1-based) that did; prompts an undo put back (`undone`) and
    variables a later call deleted are left out. What `/check` names the agent's state by."""
    skipped = set(undone)
    made: dict[str, int] = {}
    number = 0
    for message in messages:
        if message.is_prompt():
            number += 1
        elif number not in skipped:
            for block in message.tool_results():
                for change in changes_of(block.variables):
                    if change.change == "deleted":
                        made.pop(change.name, None)
                    elif change.change != "unknown" and not change.rolled_back:
                        made[change.name] = number
    return made
