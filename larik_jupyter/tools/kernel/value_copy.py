"""Copies of kernel values for undo, chosen by type, with their size in memory.

Frames of every library are copied through the frame layer (`larik_jupyter/frames/copies.py`:
pandas deeply, polars cloned, immutable Arrow, Spark and DuckDB objects shared, lazy plans
never computed), numpy arrays copy themselves, a DuckDB connection's tables are copied and put
back into the connection (`put_back`); other values go through `copy.deepcopy`, then pickle
protocol 5. Modules, functions and classes are never copied: they are shared objects whose
identity is the point. Nothing here imports a frame library or numpy; a value can only be one
of theirs when its library is already loaded.
"""

from __future__ import annotations

import copy
import functools
import pickle
import sys
import types
from typing import Any

from larik_jupyter.frames import duckdb_connection, frame_of, numpy_array
from larik_jupyter.frames.copies import copy_frame, frame_size
from larik_jupyter.frames.duckdb_tables import TablesCopy, copy_tables, size_of
from larik_jupyter.frames.duckdb_tables import put_back as put_tables_back

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
    """`numpy` for an array, the library's name for a frame of any library (`polars`), else None."""
    if numpy_array(value):
        return "numpy"
    frame = frame_of(value)
    return frame.library if frame is not None else None


def value_size(value: object) -> int:
    """Bytes a copy of `value` takes: exact for arrays and frames (their buffers; the Python
    objects of an object column are shared by the copy, as are immutable Arrow buffers and lazy
    plans), about the tables' for a DuckDB connection, `sys.getsizeof` summed over the
    object graph of containers and instance dictionaries otherwise."""
    total = 0
    seen: set[int] = set()
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if numpy_array(item):
            total += int(item.nbytes)
            continue
        if (frame := frame_of(item)) is not None:
            total += frame_size(frame)
            continue
        if duckdb_connection(item):
            total += size_of(item)
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
    if numpy_array(value):
        return value.copy()  # type: ignore[attr-defined]
    if (frame := frame_of(value)) is not None:
        return copy_frame(frame)
    if duckdb_connection(value):
        return copy_tables(value)
    if isinstance(value, TablesCopy):
        return value  # never changed: putting it back writes its tables, not itself
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


def put_back(copy: object) -> object:
    """What a name gets back from its `copy`: the copy itself, or for a DuckDB connection's
    tables the connection, its tables written back as they were."""
    return put_tables_back(copy) if isinstance(copy, TablesCopy) else copy


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
