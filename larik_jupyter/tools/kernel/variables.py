"""The inspect_variables tool: the kernel's user variables with their types, shapes and columns."""

from __future__ import annotations

import types
from typing import Any

from larik_jupyter.errors import ToolError, exception_text
from larik_jupyter.tools.base import Tool, ToolResult
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
    short preview of a scalar. A part the value fails to give (its `__len__` raises, say) is
    named as unknown with the error; the rest is still described."""
    bits = [_type_name(value)]
    parts = [("its size", _size), ("its dtype", _dtype), ("its columns", _columns)]
    if preview:
        parts.append(("its value", _preview))
    for what, part in parts:
        try:
            bit = part(value)
        except Exception as exc:
            bit = f"{what} unknown ({exception_text(exc)})"
        if bit:
            bits.append(bit)
    return ", ".join(bits)


def _size(value: object) -> str | None:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return "shape " + "×".join(str(n) for n in shape) if shape else "shape ()"
    if hasattr(type(value), "__len__") and not issubclass(type(value), (str, bytes)):
        return f"len {len(value)}"  # type: ignore[arg-type]
    return None


def _dtype(value: object) -> str | None:
    dtype = getattr(value, "dtype", None)
    return f"dtype {dtype}" if dtype is not None and not issubclass(type(value), _SCALARS) else None


def _columns(value: object) -> str | None:
    dtypes = getattr(value, "dtypes", None)
    if dtypes is None or not hasattr(value, "columns") or not hasattr(dtypes, "items"):
        return None
    cols = [f"{name}: {kind}" for name, kind in list(dtypes.items())[: MAX_COLUMNS + 1]]
    more = ", …" if len(cols) > MAX_COLUMNS else ""
    return "columns [" + ", ".join(cols[:MAX_COLUMNS]) + more + "]"


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
