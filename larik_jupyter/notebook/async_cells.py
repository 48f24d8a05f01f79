"""The input transformer that runs a cell holding only one `%larik` call as an awaited call, so
the kernel keeps processing button clicks (approvals, Stop) while the turn runs."""

from __future__ import annotations

import ast


def _magic_call(node: ast.stmt) -> ast.Call | None:
    """The `get_ipython().run_line_magic('larik', …)` / `run_cell_magic` call a cell became."""
    if not isinstance(node, ast.Expr) or not isinstance(call := node.value, ast.Call):
        return None
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in ("run_line_magic", "run_cell_magic")
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "get_ipython"
    ):
        return None
    args = call.args
    if len(args) < 2 or not (isinstance(args[0], ast.Constant) and args[0].value == "larik"):
        return None
    return call


def async_cells(lines: list[str]) -> list[str]:
    """IPython input transformer: a cell that is exactly one `%larik` / `%%larik` call is run as
    `await magics.run_async(...)`, so the kernel keeps processing button clicks during the turn."""
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return lines
    if len(tree.body) != 1 or (call := _magic_call(tree.body[0])) is None:
        return lines
    line = ast.unparse(call.args[1])
    cell = ast.unparse(call.args[2]) if len(call.args) > 2 else "None"
    return [
        "await get_ipython().magics_manager.registry['LarikMagics']"
        f".run_async({line}, {cell})\n"
    ]
