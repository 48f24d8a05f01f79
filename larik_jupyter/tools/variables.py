"""The inspect_variables tool: the kernel's user variables with their types, shapes and columns."""

from __future__ import annotations

import types
from typing import Any

from larik_jupyter.tools.base import Tool, ToolError, ToolResult
from larik_jupyter.tools.env import Env

# IPython's own names in the user namespace, never the user's variables.
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
MAX_VARIABLES = 200
MAX_COLUMNS = 50
MAX_PREVIEW = 80
_SCALARS = (int, float, complex, bool, str, bytes, type(None))


def user_variables(namespace: dict[str, Any]) -> list[tuple[str, Any]]:
    """The names a user defined: not private, not modules, functions, classes or IPython's."""
    return sorted(
        (name, value)
        for name, value in namespace.items()
        if not name.startswith("_")
        and name not in _IPYTHON_NAMES
        and not isinstance(value, types.ModuleType)
        and not callable(value)
    )


def _type_name(value: object) -> str:
    cls = type(value)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__name__
    return f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def describe(value: object, *, preview: bool = True) -> str:
    """One line about a value: type, shape or length, dtype, columns, and (with `preview`) a
    short preview of a scalar."""
    bits = [_type_name(value)]
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        bits.append("shape " + "×".join(str(n) for n in shape) if shape else "shape ()")
    elif hasattr(value, "__len__") and not isinstance(value, (str, bytes)):
        bits.append(f"len {len(value)}")
    dtype = getattr(value, "dtype", None)
    if dtype is not None and not isinstance(value, _SCALARS):
        bits.append(f"dtype {dtype}")
    dtypes = getattr(value, "dtypes", None)
    if dtypes is not None and hasattr(value, "columns") and hasattr(dtypes, "items"):
        cols = [f"{name}: {kind}" for name, kind in list(dtypes.items())[: MAX_COLUMNS + 1]]
        more = ", …" if len(cols) > MAX_COLUMNS else ""
        bits.append("columns [" + ", ".join(cols[:MAX_COLUMNS]) + more + "]")
    if preview and isinstance(value, _SCALARS):
        shown = repr(value)
        if len(shown) > MAX_PREVIEW:
            shown = shown[:MAX_PREVIEW] + "…"
        bits.append(f"= {shown}")
    return ", ".join(bits)


class InspectVariablesTool(Tool):
    name = "inspect_variables"
    description = (
        "List the user's variables in the live Jupyter kernel: type, shape or length, dtype, "
        "and column names with dtypes for data frames."
    )
    input_schema = {"type": "object", "properties": {}}
    inline = True

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        if env.namespace is None:
            raise ToolError(
                "inspect_variables needs a live kernel; run the agent inside Jupyter to use it."
            )
        found = user_variables(env.namespace)
        if not found:
            return ToolResult("No user variables are defined in the kernel.")
        rows = []
        for name, value in found[:MAX_VARIABLES]:
            try:
                rows.append(f"{name}: {describe(value)}")
            except Exception as exc:
                rows.append(f"{name}: {_type_name(value)} (could not inspect: {exc!r})")
        if len(found) > MAX_VARIABLES:
            rows.append(f"[{len(found) - MAX_VARIABLES} more variables cut]")
        return ToolResult("\n".join(rows))
