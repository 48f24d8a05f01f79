"""Lineage: a variable a call created or changed while its code read a restricted source (a
variable, one already derived from one, or a file) is restricted by the same policy.

The call's result records it on each such variable change (`restricted_from`: the sources'
names, `policy`: the strictest of their policies; `agent/tool_calls.py` writes them), so a
resumed session finds it again (`lineage_of`); the door makes it a rule of the kernel
(`KernelRules.derive`), shown by `/egress` as `top (from cust, schema)` and lifted by the
person with `/egress top full`.
"""

from __future__ import annotations

from collections.abc import Iterable

from larik_jupyter.egress.policy import Policy, PolicySet, parse_policy, stricter
from larik_jupyter.egress.tags import Tag
from larik_jupyter.llm.messages import Message, ToolResultBlock


def restricted_read(policies: PolicySet, tag: Tag | None) -> tuple[list[str], Policy | None]:
    """The restricted sources a call's code read (`tag`: what it read), by name, and the
    strictest of their policies (None: it read nothing restricted)."""
    read: list[str] = []
    policy: Policy | None = None
    for source in tag.sources if tag is not None else []:
        kind, _, name = source.partition(":")
        resolved = policies.for_variable(name) if kind == "variable" else policies.for_file(name)
        if resolved.policy.restricted:
            read.append(name)
            policy = resolved.policy if policy is None else stricter(policy, resolved.policy)
    return read, policy


def derive(policies: PolicySet, name: str, policy: Policy, sources: tuple[str, ...]) -> Policy:
    """Restrict variable `name`, made from `sources` (whose strictest policy is `policy`), in
    `policies` at once (the next call of the same reply that reads it sees it restricted): a
    variable restricted already keeps the stricter of both. Returns the policy it now has."""
    own = policies.for_variable(name).policy
    kept = stricter(own, policy) if own.restricted else policy
    policies.derive(name, kept, sources)
    return kept


def lineage_of(blocks: Iterable[object]) -> list[tuple[str, Policy, tuple[str, ...]]]:
    """The lineage the results among `blocks` recorded: (variable, policy, sources), oldest first."""
    found = []
    for block in blocks:
        if not isinstance(block, ToolResultBlock) or not block.variables:
            continue
        for change in block.variables:
            sources = change.get("restricted_from") if isinstance(change, dict) else None
            if isinstance(sources, list) and sources and isinstance(change.get("policy"), str):
                try:
                    found.append((str(change["name"]), parse_policy(change["policy"]), tuple(map(str, sources))))
                except (KeyError, ValueError):
                    continue  # a hand edit or a newer version's line: the rest still holds
    return found


def messages_lineage(messages: Iterable[Message]) -> list[tuple[str, Policy, tuple[str, ...]]]:
    """`lineage_of` every block of `messages`."""
    return lineage_of(block for message in messages for block in message.content)
