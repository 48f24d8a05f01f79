"""Kernel variables a turn changed: copies taken before the `python` tool runs, restored on undo.

The copies live in this process's memory only, never on disk (unpickling a file from the
data directory would be code execution). The checkpoint manifest records just the names, so
an undo after a kernel restart can say that the values went with the kernel. Each session
has one `KernelSnapshots` per process (`kernel_snapshots`), so a session resumed, rewound or
switched back to in the same kernel still undoes its variables. Each variable's copy, within
the turn's budget, is `saved_value.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.errors import exception_text
from larik_jupyter.session.variable_changes import VariableChange
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.fingerprint_cache import Fingerprint
from larik_jupyter.tools.kernel.fingerprint import fingerprint
from larik_jupyter.tools.kernel.saved_value import (
    MISSING,
    Budget,
    SavedValue,
    as_before,
    intact,
    kept_whole,
    save,
    value_text,
)
from larik_jupyter.tools.kernel.value_copy import copy_value, put_back
from larik_jupyter.tools.kernel.variable_watch import VariableWatch, is_user_name

DEFAULT_BUDGET_MB = 512


@dataclass
class VariablesUndone:
    """What undoing one turn's variables did."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    not_restored: list[tuple[str, str]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)


@dataclass
class _Turn:
    namespace: dict[str, Any]
    budget: Budget
    saved: dict[str, SavedValue] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)  # names a call of the turn changed or created


@dataclass
class _Call:
    """The state around the last call, for protect mode to roll it back."""

    watch: VariableWatch
    own: set[str]
    copies: dict[str, SavedValue] = field(default_factory=dict)
    changes: list[VariableChange] = field(default_factory=list)


NOT_SCANNED = "not covered: the code that changed it could not be scanned for the variables it changes"


def _no_copy(route: str | None) -> str:
    """Why a variable changed in place through a route the scan did not see has no copy."""
    through = f" through {route}" if route else ""
    return f"changed in place{through}, which the code does not name, so undo had taken no copy of it"


class KernelSnapshots:
    """The variable snapshots of one session's turns in this kernel, by turn number.

    Around each run (`VariableWatch` compares the namespace), `before_run` copies the names the
    code may change (in protect mode every user variable but the agent's own), and `after_run`
    records what the call changed: names it created, and names changed without a copy (through
    `globals()`, `exec`, a function it called): a rebound one keeps its original object to put
    back, one changed in place is reported not restorable, never silently left changed.
    `own`: variables the agent created in this session, by id and fingerprint, as long as
    nobody touched them since."""

    def __init__(self) -> None:
        self._turns: dict[int, _Turn] = {}
        self._turn = 0
        self._budget_mb = DEFAULT_BUDGET_MB
        self._scanned = True
        self._call: _Call | None = None
        self.protect = False
        self.own: dict[str, tuple[int, Fingerprint]] = {}

    def adopt(self, namespace: dict[str, Any], names: Iterable[str]) -> None:
        """Count `names` (the session's record says the agent made them) among the agent's own
        variables as they are bound now: a fork, rewind or resume keeps knowing them."""
        for name in names:
            if name not in self.own and name in namespace and is_user_name(name, namespace[name]):
                value = namespace[name]
                self.own[name] = (id(value), fingerprint(value, identity=True))

    def own_names(self, namespace: dict[str, Any]) -> set[str]:
        """The agent's own variables still bound to what it left there (whether their content
        is untouched is checked by `before_run`)."""
        return {n for n, (ident, _) in self.own.items() if n in namespace and id(namespace[n]) == ident}

    def call_own(self) -> set[str]:
        """The agent's own, untouched variables as the last call began."""
        return self._call.own if self._call is not None else set()

    def last_changes(self) -> list[VariableChange]:
        """What the last call did to the variables (its result may never come: a Stop)."""
        return self._call.changes if self._call is not None else []

    def forget_call(self) -> None:
        """The turn ended: drop the last call's state (it holds the variables' objects)."""
        self._call = None

    def open_turn(self, turn: int, budget_mb: int = DEFAULT_BUDGET_MB, *, protect: bool = False) -> None:
        """Captures from now on belong to `turn`, whose copies may take `budget_mb` MB; a stale
        snapshot under that number (its turn never reached the disk) is dropped. `protect`:
        copy every user variable, so a change by any route can be rolled back."""
        self._turn, self._budget_mb, self.protect = turn, budget_mb, protect
        self._turns.pop(turn, None)

    def _open(self, namespace: dict[str, Any]) -> _Turn:
        turn = self._turns.get(self._turn)
        if turn is None:
            turn = self._turns[self._turn] = _Turn(namespace, Budget(self._budget_mb))
        return turn

    def before_run(self, namespace: dict[str, Any], names: Iterable[str] | None, watch: VariableWatch) -> None:
        """Copy the existing `names` the code may change, each once per turn (None: the code
        could not be scanned, so nothing is copied); in protect mode every user variable the
        code could change (`watch.reach`) not the agent's own too, again when an earlier call
        of the turn changed it."""
        self._scanned = names is not None
        self.own = {
            n: (ident, found) for n, (ident, found) in self.own.items()
            if n in watch.bound and id(watch.bound[n]) == ident and watch.before[n] == found
        }
        wanted = [n for n in names or () if n in namespace]
        if self.protect:  # every variable the code could change (`reach.py`)
            wanted += [n for n in watch.bound if n not in self.own and n in watch.reach]
        self._call = _Call(watch, set(self.own))
        if not wanted:
            return
        turn = self._open(namespace)
        for name in dict.fromkeys(wanted):
            found = watch.before.get(name)
            saved = turn.saved.get(name)
            if saved is None:
                turn.saved[name] = save(turn.budget, name, namespace[name], found)
            elif self.protect and saved.existed and found is not None and found.digest is not None and saved.print != found:
                self._call.copies[name] = save(turn.budget, name, namespace[name], found)

    def after_run(self, namespace: dict[str, Any], changes: Iterable[VariableChange]) -> None:
        """Record what the call changed (see the class)."""
        if self._call is None:
            return
        watch = self._call.watch
        self._call.changes = changes = list(changes)
        # Private names the code created go on undo too; dunders (`__builtins__`) are Python's.
        created = sorted(n for n in namespace.keys() - watch.keys if not _dunder(n) and not _history(n))
        changes = [c for c in changes if c.change != "created"]
        if not created and not changes:
            return
        turn = self._open(namespace)
        for name in created:
            turn.saved.setdefault(name, SavedValue(name, existed=False))
            turn.changed.add(name)
            if (found := watch.cache.prints.get(name)) is not None:
                self.own[name] = (id(found[0]), found[1])
        for change in changes:
            name = change.name
            turn.changed.add(name)
            if name in self.own and change.change == "rebound" and name in namespace:
                value = namespace[name]  # the agent's own, bound again by the agent: still its own
                self.own[name] = (id(value), fingerprint(value, identity=True))
            elif name in self.own and (found := watch.cache.prints.get(name)) is not None:
                self.own[name] = (id(found[0]), found[1])  # the agent's own, changed by the agent
            if name in turn.saved:
                continue
            old, before = watch.bound[name], watch.before[name]
            if not self._scanned:
                turn.saved[name] = SavedValue(name, True, reason=NOT_SCANNED, before=value_text(old))
            elif change.change == "changed":
                turn.saved[name] = SavedValue(name, True, reason=_no_copy(change.route), before=value_text(old))
            elif (held := kept_whole(turn.budget, old)) is not None:
                turn.saved[name] = SavedValue(name, True, reason=held, before=value_text(old))
            elif intact(old, before):
                turn.saved[name] = SavedValue(name, True, copy=old, before=value_text(old), print=before, by_reference=True)
            else:
                reason = "rebound after its object was changed in place, which undo had no copy of"
                turn.saved[name] = SavedValue(name, True, reason=reason, before=value_text(old))

    def roll_back(self, namespace: dict[str, Any], names: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
        """Put `names` back as they were before the last call (protect mode); returns those put
        back and those that could not be, with why."""
        call, turn = self._call, self._turns.get(self._turn)
        done: list[str] = []
        failed: list[tuple[str, str]] = []
        for name in names:
            if call is None or name not in call.watch.bound:
                failed.append((name, "it did not exist before the call"))
                continue
            old, before = call.watch.bound[name], call.watch.before[name]
            saved = call.copies.get(name) or (turn.saved.get(name) if turn is not None else None)
            if saved is not None and saved.reason is None and saved.existed and saved.print == before:
                try:  # a fresh copy: the snapshot stays for undo
                    namespace[name] = saved.copy if saved.by_reference else put_back(copy_value(saved.copy))
                except Exception as exc:
                    failed.append((name, f"its copy could not be copied again: {exception_text(exc)}"))
                    continue
            elif namespace.get(name, MISSING) is not old and intact(old, before):
                namespace[name] = old
            else:
                why = saved.reason if saved is not None and saved.reason else "no copy of it was taken before the call"
                failed.append((name, why))
                continue
            done.append(name)
        return done, failed

    def rebind(self, namespace: dict[str, Any], name: str, value: object) -> None:
        """Bind `name` to `value` outside any code run (`%larik -o`), as a change of the turn
        opened last: undo puts back the object `name` held (rebinding leaves it as it was, so
        it is kept, not copied) or deletes `name`."""
        turn = self._turns.get(self._turn)
        if turn is None:
            turn = self._turns[self._turn] = _Turn(namespace, Budget(self._budget_mb))
        if name not in turn.saved:
            old = namespace.get(name, MISSING)
            turn.saved[name] = (
                SavedValue(name, False) if old is MISSING
                else SavedValue(name, True, copy=old, before=value_text(old), by_reference=True)
            )
        turn.changed.add(name)
        namespace[name] = value

    def recorded(self, turn: int) -> list[tuple[str, bool]]:
        """`(name, existed before the turn)` for every variable `turn` snapshotted or created."""
        saved = self._turns.get(turn)
        return [(s.name, s.existed) for s in saved.saved.values() if s.name in saved.changed] if saved else []

    def changes(self, turn: int) -> list[dict[str, Any]] | None:
        """Each variable of `turn`: name, `before` and `after` (type and shape), `restorable`
        and `reason`; None when this kernel holds no snapshot of that turn."""
        saved = self._turns.get(turn)
        if saved is None:
            return None
        rows = []
        for s in saved.saved.values():
            if s.name not in saved.changed:
                continue
            now = saved.namespace.get(s.name, MISSING)
            rows.append({
                "name": s.name,
                "before": s.before if s.existed else DID_NOT_EXIST,
                "after": "(deleted)" if now is MISSING else value_text(now),
                "restorable": s.reason is None,
                "reason": s.reason,
                "same": as_before(s, now),
            })
        return rows

    def restore(self, turn: int, names: list[str], *, keep: bool) -> VariablesUndone:
        """Put `turn`'s variables back and delete the ones it created; `names` are those the
        checkpoint recorded (reported gone when this kernel has no snapshot of them). With
        `keep` the snapshot stays (the files' undo is to be retried) and copies are put back."""
        done = VariablesUndone()
        saved = self._turns.get(turn)
        if saved is None:
            done.gone = list(names)
            return done
        ns = saved.namespace
        for s in saved.saved.values():
            if s.name not in saved.changed:
                continue
            if not s.existed:
                if ns.pop(s.name, MISSING) is not MISSING:
                    done.removed.append(s.name)
            elif s.reason is None:
                ns[s.name] = put_back(copy_value(s.copy) if keep and not s.by_reference else s.copy)
                done.restored.append(s.name)
            elif s.shared is not None:  # a module, function or class: put back the object itself
                if ns.get(s.name, MISSING) is not s.shared:
                    ns[s.name] = s.shared
                    done.restored.append(s.name)
            else:
                done.not_restored.append((s.name, s.reason))
        done.gone = [n for n in names if n not in saved.saved or n not in saved.changed]
        if not keep:
            del self._turns[turn]
        return done

def _history(name: object) -> bool:
    """IPython's output history names (`_i9`, `_9`, `_ii`) that a nested `run_cell` adds."""
    return isinstance(name, str) and re.fullmatch(r"_(i*|i?\d+)", name) is not None


def _dunder(name: object) -> bool:
    """Python's own names (and keys that are no names: `globals()[1] = …` is possible)."""
    return not isinstance(name, str) or (name.startswith("__") and name.endswith("__"))


# A variable's `before` in `changes` when the turn created it.
DID_NOT_EXIST = "(did not exist)"
_BY_SESSION: dict[str, KernelSnapshots] = {}


def kernel_snapshots(session_id: str) -> KernelSnapshots:
    """This process's variable snapshots of `session_id` (created empty on first use): the one
    place they are kept, for the tools, the loop, undo and the undo panel alike."""
    return _BY_SESSION.setdefault(session_id, KernelSnapshots())


def call_snapshots(env: Env) -> KernelSnapshots | None:
    """The snapshots a kernel call of `env` records into: its session's, when its agent keeps
    kernel variables for undo (`Env.keeps_variables`), else None."""
    return kernel_snapshots(env.call.session_id) if env.keeps_variables else None
