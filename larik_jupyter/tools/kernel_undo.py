"""Kernel variables a turn changed: copies taken before the `python` tool runs, restored on undo.

The copies live in this process's memory only, never on disk (unpickling a file from the
data directory would be code execution). The checkpoint manifest records just the names, so
an undo after a kernel restart can say that the values went with the kernel. Each session
has one `KernelSnapshots` per process (`kernel_snapshots`), so a session resumed, rewound or
switched back to in the same kernel still undoes its variables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.errors import exception_text
from larik_jupyter.tools.value_copy import (
    NotCopyable,
    copy_value,
    human_size,
    kind_of_shared,
    value_size,
)
from larik_jupyter.tools.variables import describe

DEFAULT_BUDGET_MB = 512


@dataclass
class SavedValue:
    """One variable as it was before the turn.

    `existed` False: the turn created it (undo deletes it). Otherwise `copy` is the value to
    put back (with `same_object`, the very object the name held: it was only rebound, never
    changed), or `reason` says why there is none; for a module, function or class `shared` is
    the original object, so undo can tell whether the name was rebound at all.
    """

    name: str
    existed: bool
    copy: object = None
    shared: object = None
    reason: str | None = None
    before: str = ""
    same_object: bool = False


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
    budget_mb: int
    used: int = 0
    saved: dict[str, SavedValue] = field(default_factory=dict)


def _describe(value: object) -> str:
    try:
        return describe(value, preview=False)
    except Exception:
        return type(value).__name__


# Why a variable the code rebound or deleted without the scan naming it cannot be put back.
NOT_COVERED = (
    "not covered: it was set through globals()[...], exec, setattr on the module or a function "
    "the code called, which undo does not follow"
)
NOT_SCANNED = "not covered: the code that changed it could not be scanned for the variables it changes"


class KernelSnapshots:
    """The variable snapshots of one session's turns in this kernel, by turn number.

    Around each run, `before_run` snapshots the names the code may change and notes what every
    name is bound to; `after_run` then records the names the code created, and the names it
    rebound or deleted that were not snapshotted (set through `globals()`, `exec`, a function's
    `global`): those are reported as not covered, never silently left changed."""

    def __init__(self) -> None:
        self._turns: dict[int, _Turn] = {}
        self._turn = 0
        self._budget_mb = DEFAULT_BUDGET_MB
        self._bound: dict[str, Any] = {}
        self._scanned = True

    def open_turn(self, turn: int, budget_mb: int = DEFAULT_BUDGET_MB) -> None:
        """Captures from now on belong to `turn`, whose copies may take `budget_mb` MB; a stale
        snapshot under that number (its turn never reached the disk) is dropped."""
        self._turn, self._budget_mb = turn, budget_mb
        self._turns.pop(turn, None)

    def before_run(self, namespace: dict[str, Any], names: Iterable[str] | None) -> None:
        """Snapshot the existing `names` the code may change, each once per turn (None: the
        code could not be scanned, so nothing is snapshotted)."""
        self._bound, self._scanned = dict(namespace), names is not None
        turn = self._turns.get(self._turn)
        for name in names or ():
            if name not in namespace or (turn is not None and name in turn.saved):
                continue
            if turn is None:
                turn = self._turns[self._turn] = _Turn(namespace, self._budget_mb)
            turn.saved[name] = self._save(turn, name, namespace[name])

    def after_run(self, namespace: dict[str, Any]) -> None:
        """Note the names the code created, and the ones it rebound or deleted unsnapshotted."""
        before, self._bound = self._bound, {}
        # Dunder names (`__builtins__` that exec adds, `__warningregistry__`) are Python's own.
        created = {n for n in namespace.keys() - before.keys() if not _dunder(n)}
        turn = self._turns.get(self._turn)
        saved = turn.saved if turn is not None else {}
        changed = sorted(
            n for n, value in before.items()
            if not _dunder(n) and n not in saved and namespace.get(n, _MISSING) is not value
        )
        if not created and not changed:
            return
        if turn is None:
            turn = self._turns[self._turn] = _Turn(namespace, self._budget_mb)
        for name in sorted(created):
            turn.saved.setdefault(name, SavedValue(name, existed=False))
        reason = NOT_COVERED if self._scanned else NOT_SCANNED
        for name in changed:
            turn.saved[name] = SavedValue(name, True, reason=reason, before=_describe(before[name]))

    def rebind(self, namespace: dict[str, Any], name: str, value: object) -> None:
        """Bind `name` to `value` outside any code run (`%larik -o`), as a change of the turn
        opened last: undo puts back the object `name` held (rebinding leaves it as it was, so
        it is kept, not copied) or deletes `name`."""
        turn = self._turns.get(self._turn)
        if turn is None:
            turn = self._turns[self._turn] = _Turn(namespace, self._budget_mb)
        if name not in turn.saved:
            old = namespace.get(name, _MISSING)
            turn.saved[name] = (
                SavedValue(name, False) if old is _MISSING
                else SavedValue(name, True, copy=old, before=_describe(old), same_object=True)
            )
        namespace[name] = value

    def recorded(self, turn: int) -> list[tuple[str, bool]]:
        """`(name, existed before the turn)` for every variable `turn` snapshotted or created."""
        saved = self._turns.get(turn)
        return [(s.name, s.existed) for s in saved.saved.values()] if saved else []

    def changes(self, turn: int) -> list[dict[str, Any]] | None:
        """Each variable of `turn`: name, `before` and `after` (type and shape), `restorable`
        and `reason`; None when this kernel holds no snapshot of that turn."""
        saved = self._turns.get(turn)
        if saved is None:
            return None
        rows = []
        for s in saved.saved.values():
            now = saved.namespace.get(s.name, _MISSING)
            rows.append({
                "name": s.name,
                "before": s.before if s.existed else "(did not exist)",
                "after": "(deleted)" if now is _MISSING else _describe(now),
                "restorable": s.reason is None,
                "reason": s.reason,
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
            if not s.existed:
                if ns.pop(s.name, _MISSING) is not _MISSING:
                    done.removed.append(s.name)
            elif s.reason is None:
                ns[s.name] = copy_value(s.copy) if keep and not s.same_object else s.copy
                done.restored.append(s.name)
            elif s.shared is None or ns.get(s.name, _MISSING) is not s.shared:
                done.not_restored.append((s.name, s.reason))
        done.gone = [n for n in names if n not in saved.saved]
        if not keep:
            del self._turns[turn]
        return done

    def _save(self, turn: _Turn, name: str, value: object) -> SavedValue:
        before = _describe(value)
        try:
            return self._copy(turn, name, value, before)
        except Exception as exc:  # a value whose type, size or copy raises: noted, never fatal
            return SavedValue(name, True, reason=f"it cannot be copied: {exception_text(exc)}", before=before)

    def _copy(self, turn: _Turn, name: str, value: object, before: str) -> SavedValue:
        shared = kind_of_shared(value)
        if shared is not None:
            return SavedValue(name, True, shared=value, reason=shared, before=before)
        try:
            size = value_size(value)
        except Exception as exc:  # a value whose size itself fails is one undo cannot bound
            return SavedValue(name, True, reason=f"its size cannot be measured ({exc!r})", before=before)
        budget = turn.budget_mb << 20
        if size > budget - turn.used:
            where = "the" if size > budget else "what is left of the"
            reason = f"{human_size(size)}, over {where} {turn.budget_mb} MB budget"
            return SavedValue(name, True, reason=reason, before=before)
        try:
            copied = copy_value(value)
        except NotCopyable as exc:
            return SavedValue(name, True, reason=str(exc), before=before)
        turn.used += size
        return SavedValue(name, True, copy=copied, before=before)


def _dunder(name: object) -> bool:
    """Python's own names (and keys that are no names: `globals()[1] = …` is possible)."""
    return not isinstance(name, str) or (name.startswith("__") and name.endswith("__"))


_MISSING = object()
_BY_SESSION: dict[str, KernelSnapshots] = {}


def kernel_snapshots(session_id: str) -> KernelSnapshots:
    """This process's variable snapshots of `session_id` (created empty on first use)."""
    return _BY_SESSION.setdefault(session_id, KernelSnapshots())
