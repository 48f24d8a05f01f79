"""What a piece of kernel code was made from, for its result's egress tag: the user's
variables it names (also through functions of the namespace it calls, one level down) and
the project files its string literals name."""

from __future__ import annotations

import ast
import os
import types
from pathlib import Path
from typing import Any

from larik_jupyter.tools.kernel.variables import user_variables


def _names(module: ast.Module) -> set[str]:
    return {node.id for node in ast.walk(module) if isinstance(node, ast.Name)}


def variables_read(module: ast.Module, namespace: dict[str, Any]) -> dict[str, object]:
    """The user variables `module` names, and those the namespace's functions it calls read
    (their code's global names): name -> value now."""
    names = _names(module)
    for name in list(names):
        value = namespace.get(name)
        # Only a plain function's code is read: `type()` asks the object nothing, so a value
        # whose every attribute look-up raises cannot stop the call.
        if type(value) is types.FunctionType:
            names.update(value.__code__.co_names)
    return {name: value for name, value in user_variables(namespace) if name in names}


def files_named(module: ast.Module, cwd: Path, root: Path) -> list[str]:
    """The files inside `root` that string literals of `module` name (relative to `cwd` or
    absolute), as POSIX paths relative to `root`."""
    found: list[str] = []
    for node in ast.walk(module):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if not text or len(text) > 4096 or "\n" in text or "\0" in text:
            continue
        path = Path(os.path.realpath(cwd / text))
        try:
            if path.is_relative_to(root) and path.is_file():
                found.append(path.relative_to(root).as_posix())
        except OSError:
            continue
    return list(dict.fromkeys(found))
