"""Names of a package that load on first access, so importing the package stays cheap."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any


def lazy_names(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` giving each name of `where` (name -> module) from its module;
    a name imported under another (`from m import a as b`) is given as `m.a`."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, original = module.partition(":")
        return getattr(import_module(module), original or name)

    return __getattr__


def type_checking_names(path: str) -> dict[str, str]:
    """The names the module at `path` imports under `if TYPE_CHECKING:`, each with where it
    comes from (`module`, or `module:name` when imported under another name): what type checkers
    see of a surface is then exactly what it gives at run time, declared once."""
    import ast  # only a surface reads itself; `import larik_jupyter` stays without it

    where: dict[str, str] = {}
    for node in ast.parse(Path(path).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imported in node.body:
                if isinstance(imported, ast.ImportFrom) and imported.module:
                    for alias in imported.names:
                        original = f":{alias.name}" if alias.asname else ""
                        where[alias.asname or alias.name] = imported.module + original
    return where
