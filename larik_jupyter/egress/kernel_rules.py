"""The rules a person sets with `/egress`: they belong to the kernel, not to one session.

One `KernelRules` is held by the kernel's agent and shared with every session it opens
(`/new`, `/clear`, `/resume`, `/model`, a branch) and with the sessions of outside agents
working in the kernel (MCP clients): each session's door takes what changed here before its
next request or answer (`EgressDoor.sync`). A rule stays until the person sets another policy
for its target; nothing that changes the session drops one. They last as long as the kernel:
each session records the rules it applied in its ledger, so a resumed session brings them back
(and they join the kernel's), but a new kernel starts with none of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from larik_jupyter.egress.policy import LINEAGE, Policy, Resolved

# Where a rule came from, as `/egress` lists it.
KERNEL_ORIGIN = "set with /egress in this kernel"


def recorded_origin(session_id: str) -> str:
    """The origin of a rule a session's ledger brought back (`/resume`, a branch's source)."""
    return f"recorded in session {session_id}"


@dataclass
class KernelRules:
    """The notebook's rules in one kernel (target -> policy and where it came from; lineage's
    too) and its local-models-only mark (None: not set, the config decides); `version` counts
    changes."""

    rules: dict[str, Resolved] = field(default_factory=dict)
    local_only: bool | None = None
    version: int = 0

    def derive(self, name: str, policy: Policy, sources: tuple[str, ...]) -> None:
        """Variable `name` was made from `sources` (lineage): restricted by `policy`."""
        self.set(name, policy, LINEAGE, sources)

    def set(self, target: str, policy: Policy, origin: str, sources: tuple[str, ...] = ()) -> None:
        if self.rules.get(target) != Resolved(policy, origin, sources):
            self.rules[target] = Resolved(policy, origin, sources)
            self.version += 1

    def set_local_only(self, on: bool | None) -> None:
        if on != self.local_only:
            self.local_only = on
            self.version += 1

    def adopt(self, other: KernelRules) -> None:
        """Take the rules of `other` (a session's ledger) this kernel does not hold yet: a rule
        set in the kernel since stays as set."""
        for target, resolved in other.rules.items():
            if target not in self.rules:
                self.rules[target] = resolved
                self.version += 1
        if self.local_only is None and other.local_only is not None:
            self.set_local_only(other.local_only)
