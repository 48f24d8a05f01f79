"""How code changed a variable it does not name as a target, read from its syntax tree after
the namespace comparison found the change: `f()` (a function of the namespace whose code uses
the name), `the alias d` (`d = df; d.drop(…)`), `random.shuffle(…)` (a call given the
variable), `globals()`, `exec`, `setattr`, `__import__`, `sys.modules`, `run_cell`. A best
reading for the report and the ask, never a reason to skip a change: None when none is found.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from larik_jupyter.tools.kernel.touched_names import root_name

# Names whose use lets code reach any global, as the route is then named.
_REACH_ANY = {
    "globals": "globals()", "exec": "exec", "eval": "eval", "setattr": "setattr",
    "__import__": "__import__('__main__')", "modules": "sys.modules", "run_cell": "get_ipython().run_cell",
    "vars": "vars()", "__dict__": "__dict__",
}
MAX_CALL_TEXT = 40


def _call_text(node: ast.Call) -> str:
    text = ast.unparse(node.func)
    return (text if len(text) <= MAX_CALL_TEXT else text[: MAX_CALL_TEXT - 1] + "…") + "(…)"


def _globals_of(code: types.CodeType) -> list[str]:
    """The global (and attribute) names a function's code and its nested code use."""
    names: list[str] = []
    todo = [code]
    while todo:
        current = todo.pop()
        names += current.co_names
        todo += [c for c in current.co_consts if isinstance(c, types.CodeType)]
    return names


def _uses(function: object, name: str) -> bool:
    """Whether `function` (a plain function of the namespace) uses the global `name`."""
    # `type()`, not `isinstance` or `getattr`: they would run a hostile object's own code.
    return type(function) is types.FunctionType and name in _globals_of(function.__code__)


def route_of(module: ast.Module | None, name: str, namespace: dict[str, Any]) -> str | None:
    """The likeliest way `module`'s code changed `name` (see the module docstring)."""
    if module is None:
        return None
    calls = [node for node in ast.walk(module) if isinstance(node, ast.Call)]
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == name:
            aliases = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if aliases:
                return f"the alias {aliases[0]}"
    for call in calls:
        given = [*call.args, *(k.value for k in call.keywords)]
        if any(root_name(arg.value if isinstance(arg, ast.Starred) else arg) == name for arg in given):
            return _call_text(call)
    called = [root_name(call.func) for call in calls]
    for function in called:
        if function is not None and function != name and _uses(namespace.get(function), name):
            return f"{function}()"
    for node in ast.walk(module):
        word = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if word in _REACH_ANY:
            return _REACH_ANY[word]
    for function in called:
        if function is not None and type(namespace.get(function)) is types.FunctionType:
            return f"{function}()"
    return None


def names_reached(module: ast.Module, namespace: dict[str, Any]) -> list[str]:
    """Globals the code may change through routes the target scan does not see and undo can
    still copy for: the globals named by the namespace functions it calls (`f()` whose body
    changes `df`), and the variables it binds to another name (`d = df`)."""
    found: dict[str, None] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            function = namespace.get(root_name(node.func) or "")
            if type(function) is types.FunctionType:
                found.update(dict.fromkeys(_globals_of(function.__code__)))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            found[node.value.id] = None
    return [name for name in found if name in namespace]
