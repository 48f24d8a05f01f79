"""What a person does with a session's door, in one sentence each: set a rule, mark the session
local-models-only, read its ledger back (`Agent.egress`: `set`, `local_only`, `report`,
`totals`)."""

from __future__ import annotations

from collections.abc import Mapping

from larik_jupyter.egress.door import EgressDoor
from larik_jupyter.egress.ledger import LedgerRecord, read_ledger
from larik_jupyter.egress.policy import PolicyError, check_target, is_variable_target, parse_policy
from larik_jupyter.egress.report import by_turn, render, rule_lines, totals
from larik_jupyter.errors import LarikError


def set_rule(door: EgressDoor, target: str, policy: str) -> str:
    """Set `policy` for variable, file or pattern `target` on `door`; the sentence saying what
    now holds. A bad policy or target raises LarikError naming it."""
    try:
        parsed = parse_policy(policy)
        target = check_target(target)
    except PolicyError as exc:
        raise LarikError(str(exc)) from None
    door.set_policy(target, parsed)
    policies = door.policies
    resolved = policies.for_variable(target) if is_variable_target(target) else policies.for_file(target)
    kind = "Variable" if is_variable_target(target) else "Files"
    said = f"{kind} `{target}`: policy `{resolved.policy}` from the next request on."
    if resolved.policy != parsed:
        said += f" The repository's config allows no more than `{resolved.policy}`, so that holds."
    return said


def set_local_only(door: EgressDoor, on: bool) -> str:
    """Mark `door`'s session local-models-only (or not); the sentence saying what holds."""
    door.set_local_only(on)
    if door.policies.is_local_only():
        also = " (the repository's config requires it)" if not on else ""
        return (
            "Local models only" + also + ": restricted data goes in full to ollama:/openai-compatible: "
            "servers on this machine and not at all to any other."
        )
    return "Local models only is off: restricted data goes as its policy allows to any model."


def _records(door: EgressDoor) -> list[LedgerRecord]:
    return read_ledger(door.ledger.path) if door.ledger is not None else []


def ledger_report(door: EgressDoor, calls: Mapping[str, str] | None = None) -> str:
    """The rules in force, the last turn's requests by source (`calls`: each call's name, by id)
    and the session's totals."""
    return render(_records(door), rule_lines(door.policies, origins=True), calls)


def ledger_totals(door: EgressDoor) -> str:
    """What the session has sent in all and what was withheld, from its ledger."""
    return totals(by_turn(_records(door)))
