"""Copies of kernel values for undo, chosen by type, with their size in memory.

pandas and numpy objects copy themselves (`.copy()`, deep); other values go through
`copy.deepcopy`, then pickle protocol 5. Modules, functions and classes are never copied:
they are shared objects whose identity is the point. Nothing here imports pandas or numpy;
a value can only be one of theirs when its library is already loaded.
"""

from __future__ import annotations

import copy
import functools
import pickle
import sys
import types
from typing import Any

_FUNCTIONS = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    functools.partial,
)
# Containers whose parts `value_size` counts; anything else counts itself and its __dict__.
_SEQUENCES = (list, tuple, set, frozenset)


class NotCopyable(Exception):
    """A value undo cannot copy; the message is a short phrase such as `a module`."""


def kind_of_shared(value: object) -> str | None:
    """`a module`, `a function` or `a class` for values undo never copies, else None."""
    if isinstance(value, types.ModuleType):
        return "a module"
    if isinstance(value, type):
        return "a class"
    if isinstance(value, _FUNCTIONS):
        return "a function"
    return None


def array_or_frame(value: object) -> str | None:
    """`numpy` for an array, `pandas` for a frame, series or index, else None."""
    # `type()`, not `isinstance`: an object whose `__class__` raises is neither.
    numpy = sys.modules.get("numpy")
    if numpy is not None and issubclass(type(value), numpy.ndarray):
        return "numpy"
    pandas = sys.modules.get("pandas")
    if pandas is not None and issubclass(type(value), (pandas.DataFrame, pandas.Series, pandas.Index)):
        return "pandas"
    return None


def value_size(value: object) -> int:
    """Bytes a copy of `value` takes: exact for arrays and frames (their buffers; the Python
    objects of an object column are shared by the copy), `sys.getsizeof` summed over the
    object graph of containers and instance dictionaries otherwise."""
    total = 0
    seen: set[int] = set()
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        library = array_or_frame(item)
        if library == "numpy":
            total += int(item.nbytes)
            continue
        if library == "pandas":
            # Shallow: a deep copy of a frame shares its Python objects (strings), so this is
            # what the copy takes, and counting each string would cost more than the copy.
            used = item.memory_usage(deep=False)
            total += int(used.sum() if hasattr(used, "sum") else used)
            continue
        try:
            total += sys.getsizeof(item)
        except TypeError:
            continue
        if isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, _SEQUENCES):
            todo.extend(item)
        elif not isinstance(item, (str, bytes, bytearray, int, float, complex)):
            attrs = getattr(item, "__dict__", None)
            if isinstance(attrs, dict):
                todo.append(attrs)
    return total


def copy_value(value: object) -> object:
    """An independent copy of `value`; raises `NotCopyable` with the reason when there is none."""
    shared = kind_of_shared(value)
    if shared is not None:
        raise NotCopyable(shared)
    library = array_or_frame(value)
    if library == "numpy":
        return value.copy()  # type: ignore[attr-defined]
    if library == "pandas":
        return value.copy(deep=True)  # type: ignore[attr-defined]
    try:
        copied = copy.deepcopy(value)
    except Exception:
        pass
    else:
        if copied is value and not _immutable(value):
            # A `__deepcopy__` returning self: "restoring" it would put back the changed object.
            raise NotCopyable("its copy is the original object")
        return copied
    try:
        return pickle.loads(pickle.dumps(value, protocol=5))
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise NotCopyable(f"cannot be copied: {reason}") from None


_ATOMS = (int, float, complex, bool, str, bytes, range, type(None), type(Ellipsis))


def _immutable(value: object, depth: int = 0) -> bool:
    """Whether `value` cannot change, so sharing it is as good as a copy: atoms, and tuples
    and frozensets of them (what `deepcopy` returns unchanged)."""
    if type(value) in _ATOMS:
        return True
    if type(value) in (tuple, frozenset) and depth < 50:
        return all(_immutable(item, depth + 1) for item in value)  # type: ignore[attr-defined]
    return False


def human_size(size: int) -> str:
    """`512 MB`, `1.2 GB`, `340 KB`, `12 bytes` (powers of 1024)."""
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            amount = size / scale
            return f"{amount:.1f} {unit}" if amount < 10 else f"{amount:.0f} {unit}"
    return f"{size} bytes"
