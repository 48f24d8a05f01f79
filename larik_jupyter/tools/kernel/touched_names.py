"""Which global names a piece of code may rebind or change, read from its syntax tree.

Undo snapshots these before the code runs: names the module scope assigns, deletes,
imports or defines; names declared `global` anywhere; and the root names of attribute and
item assignments and deletions (`df.x = …`, `del d[k]`) and of method calls
(`data.append(4)`, `df["a"].fillna(0, inplace=True)`). A value changed through a function
argument (`shuffle(data)`) or another alias is not seen; names set through `globals()`,
`exec` or `setattr` on the module are not seen here either (`kernel_undo` reports those it
finds rebound as not covered).
"""

from __future__ import annotations

import ast


def root_name(node: ast.expr) -> str | None:
    """`df` for `df`, `df.loc[0]`, `df["a"].fillna`, `df.groupby("a").x`; None otherwise."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


class _Visitor(ast.NodeVisitor):
    def __init__(self) -> None:
        self.names: dict[str, None] = {}  # an ordered set: first mention first
        self.depth = 0  # > 0 inside a function, lambda or class body: their names are local

    def _bind(self, name: str | None) -> None:
        if name is not None and self.depth == 0:
            self.names[name] = None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._bind(node.name)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(default)
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name)
        for expr in node.bases + node.decorator_list + [k.value for k in node.keywords]:
            self.visit(expr)
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_Global(self, node: ast.Global) -> None:
        self.names.update(dict.fromkeys(node.names))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._bind(node.id)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        # A walrus binds in the enclosing function or module, even inside a comprehension.
        self._bind(node.target.id)
        self.visit(node.value)

    def _comprehension(self, node: ast.AST) -> None:
        # Loop variables are the comprehension's own; only a walrus inside leaks out.
        for child in ast.walk(node):
            if isinstance(child, ast.NamedExpr):
                self._bind(child.target.id)
            elif child is not node and isinstance(child, (ast.Attribute, ast.Subscript, ast.Call)):
                self._effects(child)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def _effects(self, node: ast.AST) -> None:
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.names[root_name(node.value) or ""] = None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            self.names[root_name(node.func.value) or ""] = None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._effects(node)
        self.generic_visit(node)

    visit_Subscript = visit_Attribute  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        self._effects(node)
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._bind(alias.asname or alias.name.partition(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self._bind(alias.asname or alias.name)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._bind(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._bind(node.rest)
        self.generic_visit(node)


def names_it_may_change(module: ast.Module) -> list[str] | None:
    """The global names `module` may rebind, delete or mutate (see the module docstring),
    in the order the code first mentions them; None when the code cannot be scanned (nested
    deeper than the recursion limit, as 1,500 chained additions are)."""
    visitor = _Visitor()
    try:
        visitor.visit(module)
    except RecursionError:
        return None
    visitor.names.pop("", None)
    return list(visitor.names)
