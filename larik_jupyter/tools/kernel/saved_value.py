"""One variable as it was before a turn (`SavedValue`): its copy, taken within the turn's
memory budget (`Budget`), the original object itself where code only rebound the name, or why
undo holds none; and whether a variable is now as it was before.

The copies live in this process's memory only, never on disk; `undo.py`'s `KernelSnapshots`
keeps them per session and turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from larik_jupyter.errors import exception_text
from larik_jupyter.tools.fingerprint_cache import IMMUTABLE, Fingerprint
from larik_jupyter.tools.kernel.fingerprint import fingerprint
from larik_jupyter.tools.kernel.value_copy import (
    NotCopyable,
    copy_value,
    human_size,
    kind_of_shared,
    value_size,
)
from larik_jupyter.tools.kernel.variables import describe

# A name a namespace does not hold (`namespace.get(name, MISSING)`).
MISSING = object()


@dataclass
class SavedValue:
    """One variable as it was before the turn.

    `existed` False: the turn created it (undo deletes it). Otherwise `copy` is the value to
    put back (`by_reference`: the original object itself, which code rebound and left as it
    was), or `reason` says why there is none; for a module, function or class `shared` is the
    original object, so undo can tell whether the name was rebound at all. `print`: the
    value's fingerprint when it was saved."""

    name: str
    existed: bool
    copy: object = None
    shared: object = None
    reason: str | None = None
    before: str = ""
    print: Fingerprint | None = None
    by_reference: bool = False


@dataclass
class Budget:
    """The memory a turn's copies may take (`mb`) and what they take so far (`used`, bytes)."""

    mb: int
    used: int = 0

    def over(self, size: int) -> str | None:
        """Why `size` bytes do not fit what is left, or None when they do."""
        limit = self.mb << 20
        if size <= limit - self.used:
            return None
        where = "the" if size > limit else "what is left of the"
        return f"{human_size(size)}, over {where} {self.mb} MB budget"


def value_text(value: object) -> str:
    """`value` described in a few words (a value whose description fails: its type)."""
    try:
        return describe(value, preview=False)
    except Exception:
        return type(value).__name__


def kept_whole(budget: Budget, value: object) -> str | None:
    """None when undo may keep `value` itself (an object the code unbound) within `budget`,
    else why not."""
    try:
        size = 0 if kind_of_shared(value) else value_size(value)
    except Exception as exc:
        return f"its size cannot be measured ({exception_text(exc)})"
    if (reason := budget.over(size)) is None:
        budget.used += size
    return reason


def save(budget: Budget, name: str, value: object, found: Fingerprint | None) -> SavedValue:
    """Variable `name` as it is now (`found`: its fingerprint): a copy within `budget`, the
    object itself for a module, function or class, or why there is no copy; never raises."""
    before = value_text(value)
    try:
        saved = _copy(budget, name, value, before)
    except Exception as exc:  # a value whose type, size or copy raises: noted, never fatal
        return SavedValue(name, True, reason=f"it cannot be copied: {exception_text(exc)}", before=before)
    saved.print = found
    return saved


def _copy(budget: Budget, name: str, value: object, before: str) -> SavedValue:
    shared = kind_of_shared(value)
    if shared is not None:
        return SavedValue(name, True, shared=value, reason=shared, before=before)
    try:
        size = value_size(value)
    except Exception as exc:  # a value whose size itself fails is one undo cannot bound
        return SavedValue(name, True, reason=f"its size cannot be measured ({exc!r})", before=before)
    if (reason := budget.over(size)) is not None:
        return SavedValue(name, True, reason=reason, before=before)
    try:
        copied = copy_value(value)
    except NotCopyable as exc:
        return SavedValue(name, True, reason=str(exc), before=before)
    budget.used += size
    return SavedValue(name, True, copy=copied, before=before)


def as_before(saved: SavedValue, now: object) -> bool:
    """Whether the variable is now as it was before the turn (changed back since, or never
    really changed): a created one gone again, the very object put back unchanged, or a value
    equal by content to the copy undo holds. False where nothing can tell."""
    if not saved.existed:
        return now is MISSING
    if now is MISSING or saved.reason is not None:
        return False
    if saved.by_reference:
        return now is saved.copy and saved.print is not None and intact(now, saved.print)
    now_print, copy_print = fingerprint(now), fingerprint(saved.copy)
    return now_print.digest is not None and now_print == copy_print


def intact(old: object, before: Fingerprint) -> bool:
    """Whether an object a name no longer holds is still as it was before the call (one
    without a digest is taken as it is: nothing can tell)."""
    return before.digest is None or before.digest == IMMUTABLE or fingerprint(old, identity=True) == before
