"""Watching the user's variables around one call: what it created, rebound, changed in place
or deleted (see `session/variable_changes.py` for how that is stored and shown), by any route.

Before the code runs every user variable the code could change (`reach.py`; for a notebook cell
every one) is fingerprinted (`fingerprint.py`; the names the code may change first, then the
rest, within one byte budget a phase; a fingerprint the previous call of the turn took after it
ran is reused), the others are only compared by identity; after, a name holding another object was
rebound, the same object with another digest was changed in place. A change to a name the code
does not name as a target is given its route (`change_routes.py`). A named value without a
digest may have changed (said as such); an unnamed one over the budget is "not compared", said
once a turn. New names are found by comparing the namespace's keys. Modules, private names
(`_x`), IPython's own names and Python's dunders are not the user's variables.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable
from typing import Any

from larik_jupyter.frames.column_profile import column_changes, profile
from larik_jupyter.session.variable_changes import VariableChange
from larik_jupyter.tools.fingerprint_cache import IMMUTABLE, Fingerprint, FingerprintCache
from larik_jupyter.tools.kernel.change_routes import route_of
from larik_jupyter.tools.kernel.fingerprint import (
    BUDGET_BYTES,
    fingerprint,
    shape_of,
    type_name,
)
from larik_jupyter.tools.kernel.reach import EVERYTHING, Reach
from larik_jupyter.tools.kernel.rng_state import change_word
from larik_jupyter.tools.kernel.touched_names import names_it_may_change

# IPython's own names in the user namespace (`Out` changes with every cell), never the user's.
IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})


def is_user_name(name: object, value: object) -> bool:
    """Whether `name` holding `value` is one of the user's variables (a namespace may also hold
    keys that are not strings, which are no one's variables)."""
    return (
        isinstance(name, str) and not name.startswith("_") and name not in IPYTHON_NAMES
        # `type()`, not `isinstance`: an object whose `__class__` raises is still a variable.
        and not issubclass(type(value), types.ModuleType)
    )


def python_source(source: str) -> str:
    """A notebook cell's source with IPython's `%magic` and `!shell` lines read as `pass`."""
    return "\n".join(
        line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in source.splitlines()
    )


def cell_code(source: str) -> ast.Module | None:
    """A notebook cell's syntax tree (its magic and shell lines as `pass`), None when it does
    not parse."""
    try:
        return ast.parse(python_source(source))
    except (SyntaxError, ValueError):
        return None


def cell_names(module: ast.Module | None) -> list[str]:
    """The names a notebook cell's code may change (what its magic and shell lines do to
    variables is not seen); a cell that does not parse has none."""
    return (names_it_may_change(module) or []) if module is not None else []


# Functions and classes hold code, not the user's data: calling one (`open(...)`, which the
# kernel's namespace holds) is not a change to report, though rebinding or deleting it is.
_CODE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)
_MISSING = object()


# The `why` of a variable the code could not reach, which is not fingerprinted.
UNREACHED = "the code could not change it"


def _shape(value: object) -> str:
    try:
        return shape_of(value)
    except Exception:
        return ""


def _summary(value: object) -> str:
    try:
        return f"{type_name(value)} {shape_of(value)}".rstrip()
    except Exception:
        return type_name(value)


class VariableWatch:
    """Every user variable of `namespace` before a call, to compare with after it.

    `names`: those the code may change (from the scan; None when it could not be scanned),
    fingerprinted first; `module`: the code, to find routes; `cache`: the turn's fingerprints
    (`KernelHost.fingerprints`); `route`: said for a change no other route explains, the
    code's own included (`cell c1`); `reach`: the variables the code could change
    (`reach.py`), the only ones fingerprinted (the others are compared by identity)."""

    def __init__(
        self,
        namespace: dict[str, Any],
        names: Iterable[str] | None,
        *,
        module: ast.Module | None = None,
        cache: FingerprintCache | None = None,
        route: str | None = None,
        reach: Reach = EVERYTHING,
    ) -> None:
        self.keys = set(namespace)
        self.reach = reach
        self.named = dict.fromkeys(names or ())  # an ordered set
        self.module, self.route = module, route
        self.cache = cache if cache is not None else FingerprintCache()
        self.bound = {n: v for n, v in namespace.items() if is_user_name(n, v)}
        # Names holding a module are no variables, but code that binds one to a value (`mod =
        # 5`) changes what the user's name means: that is a change undo puts back.
        self.modules = {
            n: v for n, v in namespace.items()
            if isinstance(n, str) and not n.startswith("_") and n not in IPYTHON_NAMES
            and issubclass(type(v), types.ModuleType)
        }
        order = [n for n in self.named if n in self.bound] + list(self.bound)
        self.before: dict[str, Fingerprint] = {}
        left = BUDGET_BYTES
        for name in dict.fromkeys(order):
            value = self.bound[name]
            found = self.cache.get(name, value)
            if found is None and name not in reach:
                found = Fingerprint(type_name(value), _shape(value), None, UNREACHED)
            elif found is None:
                found = fingerprint(value, left, identity=True)
                left -= found.hashed
            self.before[name] = found
        self.not_compared: list[str] = []
        # The columns of the frames the code names, to say which gained missing values.
        self.profiles = {n: p for n in self.named if n in self.bound and (p := profile(self.bound[n])) is not None}

    def changes(self, namespace: dict[str, Any]) -> list[VariableChange]:
        """What the call did, named variables first in the code's order, then the others, then
        names it created; the fingerprints taken go to the cache for the next call."""
        out: list[VariableChange] = []
        left = BUDGET_BYTES
        after: dict[str, tuple[object, Fingerprint]] = {}
        order = [n for n in self.named if n in self.bound] + list(self.bound)
        for name in dict.fromkeys(order):
            old, print_before = self.bound[name], self.before[name]
            now = namespace.get(name, _MISSING)
            if now is _MISSING:
                out.append(self._change(namespace, name, "deleted", before=print_before.summary))
            elif now is not old:
                out.append(self._change(namespace, name, "rebound", before=print_before.summary, after=_summary(now)))
            elif name not in self.reach or print_before.digest == IMMUTABLE or issubclass(type(old), _CODE):
                if print_before.why != UNREACHED:  # still true: the code could not change it
                    after[name] = (old, print_before)
            elif print_before.digest is None and name not in self.named:
                if print_before.why.startswith("over") and name not in self.cache.said:
                    self.not_compared.append(f"{name} ({print_before.why})")
                    self.cache.said.add(name)
            else:
                print_after = fingerprint(now, left, identity=True)
                left -= print_after.hashed
                after[name] = (now, print_after)
                change = self._in_place(namespace, name, print_before, print_after)
                if change is not None:
                    out.append(change)
        for name, old in self.modules.items():
            now = namespace.get(name, _MISSING)
            if now is not _MISSING and now is not old and is_user_name(name, now):
                out.append(self._change(namespace, name, "rebound", before=f"module {_module_name(old)}",
                                        after=_summary(now)))
        for name in sorted(n for n in namespace.keys() - self.keys if isinstance(n, str)):
            value = namespace[name]
            if is_user_name(name, value):
                out.append(VariableChange(name=name, change="created", after=_summary(value)))
                found = fingerprint(value, left, identity=True)
                left -= found.hashed
                after[name] = (value, found)
        self.cache.prints = after
        return [self._columns(namespace, change) for change in out]

    def _columns(self, namespace: dict[str, Any], change: VariableChange) -> VariableChange:
        """`change` with the columns of a frame that gained missing values or changed dtype."""
        before = self.profiles.get(change.name)
        now = profile(namespace[change.name]) if before is not None and change.name in namespace else None
        if before is None or now is None:
            return change
        columns = column_changes(before, now)
        return change.model_copy(update={
            "gained_missing": columns.gained_missing or None, "dtypes": columns.dtypes or None,
        })

    def note(self) -> str:
        """The result's line naming the variables not compared (each once a turn), or ""."""
        if not self.not_compared:
            return ""
        return "[not compared, so changes to them are not seen: " + ", ".join(self.not_compared) + "]"

    def _change(self, namespace: dict[str, Any], name: str, change: str, **fields: Any) -> VariableChange:
        found = None if name in self.named else route_of(self.module, name, namespace)
        route = found or self.route
        return VariableChange(name=name, change=change, route=route, **fields)

    def _in_place(
        self, namespace: dict[str, Any], name: str, before: Fingerprint, after: Fingerprint
    ) -> VariableChange | None:
        if before.digest is None or after.digest is None:
            if name not in self.named:
                return None
            return VariableChange(
                name=name, change="unknown", before=before.summary, after=after.summary,
                note=before.why or after.why,
            )
        if before == after:
            return None
        return self._change(
            namespace, name, "changed", before=before.summary, after=after.summary,
            note=change_word(namespace[name]),
        )


def _module_name(module: object) -> str:
    """A module's `__name__` as a name (a module whose name is not a string: `?`)."""
    name = getattr(module, "__name__", None)
    return name if isinstance(name, str) else "?"
