"""Protect mode: what a `python` call's code would do to the user's existing variables, read
from its syntax tree before it runs, so the approval can name each variable and the change.

Seen: rebinding a name (`df = …`, `df += 1`, `for df in …`, `import df`), `del name` and
`del name[…]`, item and attribute assignment (`df["c"] = …`, `df.loc[0] = …`, `m.x = …`), a
call with `inplace=True` (pandas) or `in_place=True` (polars' `vstack`) on anything rooted at
the name, and a call of a method known to change its object (`data.append(4)`,
`df.insert(…)`, `arr.fill(0)`, polars' `df.insert_column(…)`). Not seen here: a value
changed through a function argument (`shuffle(data)`), another alias, `globals()` or `exec`;
those the namespace comparison after the call finds (`variable_watch.py`), and the agent
loop then asks whether to keep them or roll them back.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Collection, Mapping
from typing import Any

from larik_jupyter.tools.kernel.rng_state import draws
from larik_jupyter.tools.kernel.touched_names import names_it_may_change, root_name
from larik_jupyter.tools.kernel.variable_watch import is_user_name

# The short words of a plain rebinding and deletion (the approval says "replace x", "delete x").
REBINDS, DELETES = "rebinds", "deletes"
# `+=` for ast.Add: how an approval writes an augmented assignment.
_AUGMENTED = {
    "Add": "+", "Sub": "-", "Mult": "*", "MatMult": "@", "Div": "/", "FloorDiv": "//", "Mod": "%",
    "Pow": "**", "LShift": "<<", "RShift": ">>", "BitOr": "|", "BitXor": "^", "BitAnd": "&",
}
# An approval names at most this many variables, then says how many more.
_MAX_NAMED = 6

# Methods of builtin containers, numpy arrays, pandas and polars objects that change their object.
MUTATING_METHODS = frozenset({
    "insert_column", "replace_column",
    "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse",
    "update", "popitem", "setdefault", "add", "discard", "difference_update",
    "intersection_update", "symmetric_difference_update",
    "fill", "resize", "put", "itemset", "partition", "setflags", "byteswap",
    "__setitem__", "__delitem__", "__setattr__", "__iadd__",
})


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}
        self.short: dict[str, list[str]] = {}  # the same, in an approval's few words
        self.depth = 0  # inside a function, lambda or class body: plain names are local
        self.globals: set[str] = set()

    def _note(self, name: str | None, what: str, short: str) -> None:
        if name is not None and what not in self.found.setdefault(name, []):
            self.found[name].append(what)
            self.short.setdefault(name, []).append(short)

    def _scoped(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _scoped
    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scoped

    def visit_Global(self, node: ast.Global) -> None:
        self.globals.update(node.names)

    def visit_Name(self, node: ast.Name) -> None:
        if self.depth == 0 or node.id in self.globals:
            if isinstance(node.ctx, ast.Store):
                self._note(node.id, "rebinds it", REBINDS)
            elif isinstance(node.ctx, ast.Del):
                self._note(node.id, "deletes it", DELETES)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and (self.depth == 0 or node.target.id in self.globals):
            op = type(node.op).__name__
            self._note(
                node.target.id, f"updates it in place or rebinds it ({op} assignment)",
                f"{_AUGMENTED.get(op, op)}=",
            )
            self.visit(node.value)
        else:
            self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Store):
            self._note(root_name(node.value), "assigns to an item of it", "an item set")
        elif isinstance(node.ctx, ast.Del):
            self._note(root_name(node.value), "deletes an item of it", "an item deleted")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Store):
            self._note(root_name(node.value), f"sets its attribute .{node.attr}", f"sets .{node.attr}")
        elif isinstance(node.ctx, ast.Del):
            self._note(root_name(node.value), f"deletes its attribute .{node.attr}", f"deletes .{node.attr}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            # pandas' `inplace=True`, polars' `in_place=True` (`vstack`).
            inplace = any(
                k.arg in ("inplace", "in_place") and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in node.keywords
            )
            if inplace:
                self._note(root_name(func.value), f"calls .{func.attr}(…, inplace=True)", f"in place: {func.attr}")
            elif any(k.arg is None for k in node.keywords):
                self._note(
                    root_name(func.value), f"calls .{func.attr}(**…), which may pass inplace=True",
                    f"maybe in place: {func.attr}",
                )
            elif func.attr in MUTATING_METHODS:
                self._note(root_name(func.value), f"calls .{func.attr}(…), which changes it", f"in place: {func.attr}")
        self.generic_visit(node)


def _visited(module: ast.Module) -> _Visitor | None:
    visitor = _Visitor()
    try:
        visitor.visit(module)
    except RecursionError:
        return None
    return visitor


def changes_in(module: ast.Module) -> dict[str, list[str]]:
    """Every global name `module`'s code visibly changes, with what it does to it (empty when
    it is nested too deeply to read)."""
    visitor = _visited(module)
    return visitor.found if visitor is not None else {}


def protected_changes(code: str, namespace: dict[str, Any], own: Collection[str] = ()) -> dict[str, list[str]]:
    """The user's existing variables `code` would change, each with what it does to them;
    empty when none (or when the code does not parse: running it changes nothing). `own`: the
    agent's own variables, which are not the user's."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError):
        return {}
    found = changes_in(module)
    for name, what in draws(module, namespace).items():
        found[name] = [*found.get(name, []), *what]
    return {
        name: what
        for name, what in found.items()
        if name in namespace and is_user_name(name, namespace[name]) and name not in own
    }


def protect_text(changes: dict[str, list[str]]) -> str:
    """The approval's lines above the code (as comments): each protected variable and what the
    code does to it."""
    lines = [f"#   {name}: {', '.join(what)}" for name, what in changes.items()]
    return "# Protect mode: this code changes your existing variables:\n" + "\n".join(lines)


def effects_sentence(code: str, namespace: Mapping[str, Any]) -> str:
    """What running `code` may do to the kernel's variables, read from its text, as the
    sentence an approval adds to its question: `It may change df (in place: drop) and create
    clean.` Existing user variables are changed, replaced or deleted; names that do not exist
    yet are created. Routes the text does not show (`f(df)`, `globals()`) are not seen here."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError):
        return "It is not valid Python: it would stop with a SyntaxError before doing anything."
    visitor = _visited(module)
    touched = names_it_may_change(module)
    if visitor is None or touched is None:
        return "What it changes cannot be read from its text (it is nested too deeply)."
    phrases = []
    for name, short in visitor.short.items():
        if name not in namespace or not is_user_name(name, namespace[name]):
            continue
        if short == [REBINDS]:
            phrases.append(f"replace {name}")
        elif short == [DELETES]:
            phrases.append(f"delete {name}")
        else:
            words = {REBINDS: "replaced", DELETES: "deleted"}
            phrases.append(f"change {name} ({', '.join(words.get(w, w) for w in short)})")
    # A name the code only changes through (`df["b"] = 1`, `df.drop(…, inplace=True)`) and
    # that does not exist is no creation: the code would fail there.
    created = [
        n for n in touched
        if n not in namespace and not n.startswith("_") and not hasattr(builtins, n)
        and (n not in visitor.short or REBINDS in visitor.short[n])
    ]
    if created:
        phrases.append("create " + _and(created))
    if not phrases:
        return "It changes no variable by name."
    return f"It may {_and(phrases)}."


def _and(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`; past `_MAX_NAMED`, `… and 3 more`."""
    if len(items) > _MAX_NAMED:
        items = [*items[:_MAX_NAMED], f"{len(items) - _MAX_NAMED} more"]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
