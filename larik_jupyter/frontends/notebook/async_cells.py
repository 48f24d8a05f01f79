"""The input transformers of `%larik`: a cell holding only one `%larik` call runs as an awaited
call, so the kernel keeps processing button clicks (approvals, Stop) while the turn runs; a
`%larik` line ending in `?` reaches the magic instead of IPython's help."""

from __future__ import annotations

import ast
import re
from typing import Any


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


# `%larik <text>` on a line of its own; the text must hold more than question marks, so that
# `%larik?` and `%larik??` stay IPython's help on the magic.
_QUESTION_LINE = re.compile(r"^(?P<indent>[ \t]*)%larik[ \t]+(?P<text>.*[^?\s].*?)[ \t]*$")


def keep_questions(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: a `%larik` line ending in `?` / `??` reaches the magic
    unchanged; left alone, IPython's help syntax would turn it into a lookup of its last word."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic's body is its prompt, verbatim
    out = []
    for line in lines:
        match = _QUESTION_LINE.match(line.rstrip("\r\n"))
        if match is None or not match["text"].endswith("?"):
            out.append(line)
            continue
        out.append(f"{match['indent']}get_ipython().run_line_magic('larik', {match['text']!r})\n")
    return out


def install_transformers(shell: Any) -> None:
    """Register both input transformers on `shell` (once)."""
    if keep_questions not in shell.input_transformers_cleanup:
        shell.input_transformers_cleanup.append(keep_questions)
    if async_cells not in shell.input_transformers_post:
        shell.input_transformers_post.append(async_cells)
