"""Watching the user's variables around one call: what it created, rebound, changed in place
or deleted (see `session/variable_changes.py` for how that is stored and shown).

Before the code runs, the existing names it may change (`touched_names`) are fingerprinted
(`fingerprint.py`); after, a name holding another object was rebound, the same object with
another digest was changed in place, one without a digest may have changed (said as such).
New names are found by comparing the namespace's keys. Modules, private names (`_x`) and
Python's own dunders are not the user's variables.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable
from typing import Any

from larik_jupyter.session.variable_changes import VariableChange
from larik_jupyter.tools.fingerprint import IMMUTABLE, Fingerprint, fingerprint, shape_of, type_name
from larik_jupyter.tools.touched_names import names_it_may_change


def is_user_name(name: object, value: object) -> bool:
    """Whether `name` holding `value` is one of the user's variables (a namespace may also hold
    keys that are not strings, which are no one's variables)."""
    return isinstance(name, str) and not name.startswith("_") and not isinstance(value, types.ModuleType)


def python_source(source: str) -> str:
    """A notebook cell's source with IPython's `%magic` and `!shell` lines read as `pass`."""
    return "\n".join(
        line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
        for line in source.splitlines()
    )


def cell_names(source: str) -> list[str]:
    """The names a notebook cell's code may change (what its magic and shell lines do to
    variables is not seen); a cell that does not parse has none."""
    try:
        return names_it_may_change(ast.parse(python_source(source))) or []
    except (SyntaxError, ValueError):
        return []


# Functions and classes hold code, not the user's data: calling one (`open(...)`, which the
# kernel's namespace holds) is not a change to report, though rebinding or deleting it is.
_CODE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)


def _summary(value: object) -> str:
    try:
        return f"{type_name(value)} {shape_of(value)}".rstrip()
    except Exception:
        return type_name(value)


class VariableWatch:
    """The state of `names` in `namespace` before a call, to compare with after it."""

    def __init__(self, namespace: dict[str, Any], names: Iterable[str] | None) -> None:
        """`names` None: the code could not be scanned, so only the names it creates are seen."""
        self.keys = set(namespace)
        self.before: dict[str, tuple[object, Fingerprint]] = {}
        for name in names or []:
            if name in namespace and is_user_name(name, namespace[name]):
                value = namespace[name]
                self.before[name] = (value, fingerprint(value))

    def changes(self, namespace: dict[str, Any]) -> list[VariableChange]:
        """What the call did, watched names first in the code's order, then names it created."""
        out: list[VariableChange] = []
        missing = object()
        for name, (old, print_before) in self.before.items():
            now = namespace.get(name, missing)
            if now is missing:
                out.append(VariableChange(name=name, change="deleted", before=print_before.summary))
            elif now is not old:
                out.append(VariableChange(name=name, change="rebound", before=print_before.summary, after=_summary(now)))
            elif print_before.digest != IMMUTABLE and not isinstance(old, _CODE):
                change = self._in_place(name, print_before, fingerprint(now))
                if change is not None:
                    out.append(change)
        for name in sorted(n for n in namespace.keys() - self.keys if isinstance(n, str)):
            value = namespace[name]
            if is_user_name(name, value):
                out.append(VariableChange(name=name, change="created", after=_summary(value)))
        return out

    @staticmethod
    def _in_place(name: str, before: Fingerprint, after: Fingerprint) -> VariableChange | None:
        if before.digest is None or after.digest is None:
            return VariableChange(
                name=name, change="unknown", before=before.summary, after=after.summary,
                note=before.why or after.why,
            )
        if before == after:
            return None
        return VariableChange(name=name, change="changed", before=before.summary, after=after.summary)
