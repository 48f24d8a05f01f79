"""The rules a session's egress door applies: the config's (`PolicySet`) and the notebook's,
held with the kernel's (`KernelRules`, shared by every session of the kernel), kept in step
before every request, answer and turn, each change recorded in the session's ledger and
brought back from it on resume; the lineage of a variable made from restricted data as a
rule; and the policy a source has for a request to a destination. `EgressDoor` (`door.py`)
is a `DoorRules`, adding the request path.
"""

from __future__ import annotations

from larik_jupyter.egress.accounting import is_local
from larik_jupyter.egress.kernel_rules import KERNEL_ORIGIN, KernelRules
from larik_jupyter.egress.ledger import Ledger, LedgerRecord, LocalOnlyRecord, PolicyRecord, now
from larik_jupyter.egress.policy import FULL, LINEAGE, NEVER, Policy, PolicySet, parse_policy
from larik_jupyter.llm.provider import Destination


class DoorRules:
    """The rules of one session's door and their record in its `ledger` (None: not recorded)."""

    def __init__(self, policies: PolicySet, ledger: Ledger | None) -> None:
        self.policies = policies
        # The notebook's rules: this session's own until `hold` gives it the kernel's.
        self.shared = KernelRules()
        self._synced: tuple[int, int, int] | None = None
        self._recorded: dict[str, str] = {}  # each target's policy as the ledger last says it
        self._recorded_local: bool | None = None
        self.ledger = ledger

    def _rules_changed(self) -> None:
        """What the door does when the rules in force changed (`EgressDoor`: index what they
        restrict)."""
        raise NotImplementedError

    def set_policy(self, target: str, policy: Policy) -> None:
        """Set `target`'s policy in the notebook (`/egress`): a rule of the kernel this door's
        rules are held by (`hold`), so every session of it keeps it; recorded in the ledger so
        a resumed session brings it back."""
        self.shared.set(target, policy, KERNEL_ORIGIN)
        self.sync()

    def set_local_only(self, on: bool) -> None:
        """Mark the kernel local-models-only (or not), recorded in the ledger."""
        self.shared.set_local_only(on)
        self.sync()

    def hold(self, shared: KernelRules) -> None:
        """Take the notebook's rules from `shared` (the kernel's) from now on; the rules this
        session's ledger brought back join them where the kernel has none for their target."""
        shared.adopt(self.shared)
        self.shared = shared
        self.sync()

    def sync(self) -> None:
        """Apply what changed in the notebook's rules since last (a rule set in another session
        of the kernel, or the notebook for an outside agent), each change recorded in the
        ledger, and start indexing what they restrict. Called before every request, answer and turn."""
        shared = self.shared
        if self._synced == (id(shared), shared.version, self.policies.version):
            return
        policies = self.policies
        for target, resolved in shared.rules.items():
            if policies.rules.get(target) != resolved:
                policies.set(target, resolved.policy, resolved.origin, resolved.sources)
            if resolved.origin == LINEAGE:
                continue  # recorded with the call that made the variable, not in the ledger
            if self._recorded.get(target) != str(resolved.policy):
                self._recorded[target] = str(resolved.policy)
                self._record(PolicyRecord(time=now(), target=target, policy=str(resolved.policy)))
        if shared.local_only is not None and policies.notebook_local_only != shared.local_only:
            policies.notebook_local_only = shared.local_only
            policies.version += 1
        if shared.local_only is not None and self._recorded_local != shared.local_only:
            self._recorded_local = shared.local_only
            self._record(LocalOnlyRecord(time=now(), value=shared.local_only))
        self._synced = (id(shared), shared.version, policies.version)
        self._rules_changed()

    def reload(self, policies: PolicySet) -> None:
        """Take the config's rules again (after it changed), keeping the notebook's."""
        policies.version = self.policies.version + 1
        self.policies = policies
        self.sync()

    def replay(self, records: list[LedgerRecord], origin: str, own: bool) -> None:
        """Apply the notebook's rules a ledger recorded, oldest first (`origin`: where they are
        said to come from; `own`: this session's ledger, which need not record them again)."""
        for record in records:
            if isinstance(record, PolicyRecord):
                try:
                    policy = parse_policy(record.policy)
                except ValueError:
                    continue  # a policy a newer version wrote, or a hand edit: the config still applies
                self.shared.set(record.target, policy, origin)
                if own:
                    self._recorded[record.target] = str(policy)
            elif isinstance(record, LocalOnlyRecord):
                self.shared.set_local_only(record.value)
                if own:
                    self._recorded_local = record.value

    def _record(self, record: LedgerRecord) -> None:
        if self.ledger is not None:
            self.ledger.append(record)

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

    def derive(self, lineage: list[tuple[str, Policy, tuple[str, ...]]], *, resumed: bool) -> None:
        """Make the lineage calls recorded (variable, policy, sources) rules of the kernel: the
        variable is restricted in every session of it, until the person sets another policy.
        `resumed`: recorded by a session opened again, whose explicit rules (a lifted one)
        stay; a call of now replaces any rule (the variable holds restricted data anew)."""
        for name, policy, sources in lineage:
            held = self.shared.rules.get(name)
            if not resumed or held is None or held.origin == LINEAGE:
                self.shared.derive(name, policy, sources)
        self.sync()
