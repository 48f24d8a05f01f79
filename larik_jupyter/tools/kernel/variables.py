"""The inspect_variables tool: the kernel's user variables with their types, shapes and columns."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from larik_jupyter.errors import ToolError, exception_text
from larik_jupyter.frames import Frame, duckdb_connection, frame_of
from larik_jupyter.frames.duckdb_tables import tables_label
from larik_jupyter.frames.schema import NOT_COMPUTED, columns, shape
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.env import Env

# IPython's own names in the user namespace, never the user's variables.
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
MAX_VARIABLES = 200
MAX_COLUMNS = 50
MAX_PREVIEW = 80
MAX_PART = 2000  # characters of one part of a description (its columns, its dtype)
_SCALARS = (int, float, complex, bool, str, bytes, type(None))


def user_variables(namespace: dict[str, Any]) -> list[tuple[str, Any]]:
    """The names a user defined: not private, not modules, functions, classes or IPython's."""
    return sorted(
        ((name, value) for name, value in namespace.items() if _is_user_variable(name, value)),
        key=lambda item: item[0],
    )


def _is_user_variable(name: object, value: object) -> bool:
    if not isinstance(name, str) or name.startswith("_") or name in _IPYTHON_NAMES:
        return False
    try:
        return not isinstance(value, types.ModuleType) and not callable(value)
    except Exception:  # an object whose `__class__` raises is still the user's variable
        return True


def _type_name(value: object) -> str:
    cls = type(value)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__name__
    return f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def describe(value: object, *, preview: bool = True) -> str:
    """One line about a value: type, shape or length, dtype, columns, and (with `preview`) a
    short preview of a scalar; a frame of any library through the frame layer (a lazy one as
    `LazyFrame (not computed)`, its columns from metadata). A part the value fails to give (its
    `__len__` raises, say) is named as unknown with the error; the rest is still described."""
    bits = [_type_name(value)]
    frame = frame_of(value)
    parts: list[tuple[str, Callable[[Any], str | None]]] = [("its size", _size), ("its dtype", _dtype)]
    if frame is not None:
        parts = [("its size", lambda _: _frame_size(frame)), ("its columns", lambda _: _frame_columns(frame))]
    elif duckdb_connection(value):
        parts = [("its tables", tables_label)]
    if preview:
        parts.append(("its value", _preview))
    for what, part in parts:
        try:
            bit = part(value)
        except Exception as exc:
            bit = f"{what} unknown ({exception_text(exc)})"
        if bit:
            # A value's own text may be anything (a proxy's dtype that is itself, repr'd at length).
            bits.append(bit if len(bit) <= MAX_PART else bit[: MAX_PART - 1] + "…")
    return ", ".join(bits)


def _frame_size(frame: Frame) -> str:
    found = shape(frame)
    return f"LazyFrame {NOT_COMPUTED}" if found is None else "shape " + "×".join(map(str, found))


def _frame_columns(frame: Frame) -> str | None:
    found = columns(frame)
    if frame.series:
        return f"dtype {found[0][1]}" if found else None
    cols = [f"{name}: {kind}" for name, kind in found[: MAX_COLUMNS + 1]]
    more = ", …" if len(cols) > MAX_COLUMNS else ""
    return "columns [" + ", ".join(cols[:MAX_COLUMNS]) + more + "]"


def _size(value: object) -> str | None:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return "shape " + "×".join(str(n) for n in shape) if shape else "shape ()"
    if hasattr(type(value), "__len__") and not issubclass(type(value), (str, bytes)):
        return f"len {len(value)}"  # type: ignore[arg-type]
    return None


def _dtype(value: object) -> str | None:
    dtype = getattr(value, "dtype", None)
    if dtype is None or callable(dtype) or issubclass(type(value), _SCALARS):
        return None
    return f"dtype {dtype}"


def _preview(value: object) -> str | None:
    if not issubclass(type(value), _SCALARS):
        return None
    shown = repr(value)
    if len(shown) > MAX_PREVIEW:
        shown = shown[:MAX_PREVIEW] + "…"
    return f"= {shown}"


class InspectVariablesTool(Tool):
    name = "inspect_variables"
    writes = frozenset()
    needs_kernel = True
    description = (
        "List the user's variables in the live Jupyter kernel: type, shape or length, dtype, "
        "and column names with dtypes for data frames."
    )
    input_schema = {"type": "object", "properties": {}}
    inline = True

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        if env.host is None:
            raise ToolError(
                "inspect_variables needs a live kernel; run the agent inside Jupyter to use it."
            )
        found = user_variables(env.host.namespace)
        if not found:
            return ToolResult("No user variables are defined in the kernel.")
        rows = []
        for name, value in found[:MAX_VARIABLES]:
            # The egress policy shapes the report itself: no preview of a restricted value.
            policy = env.egress.for_variable(name).policy
            if policy.kind == "never":
                rows.append(f"{name}: [withheld: {name} — policy never; ask the user about it]")
                continue
            try:
                rows.append(f"{name}: {describe(value, preview=not policy.restricted)}")
            except Exception as exc:
                rows.append(f"{name}: {_type_name(value)} (could not inspect: {exc!r})")
        if len(found) > MAX_VARIABLES:
            rows.append(f"[{len(found) - MAX_VARIABLES} more variables cut]")
        return ToolResult("\n".join(rows))
