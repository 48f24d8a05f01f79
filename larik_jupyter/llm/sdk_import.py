"""Import a provider's official SDK with its re-export packages resolved name by name.

The SDKs' type packages (`anthropic.types`, `anthropic.types.beta`, ...) only re-export the
names of their submodules, thousands of pydantic models; importing such a package imports them
all, and any import of one model imports its package first. A package whose `__init__` is
nothing but `from .sub import name as name` lines (and an `__all__`) is loaded here as a module
whose `__getattr__` (PEP 562) imports the submodule of a name when the name is first used. The
SDK's own code and ours then run unchanged; importing `anthropic` just loads the models it
touches, a third less work (`bench/RESULTS.md`, first turn). Every other package, one whose
names shadow its submodules, and one without source, is imported as usual.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

_lock = threading.Lock()
# Replaced, never changed in place: another thread's import may be reading it.
_prefixes: tuple[str, ...] = ()


def import_sdk(name: str) -> ModuleType:
    """The SDK package `name`, its re-export subpackages loading names on first use."""
    global _prefixes
    if name not in sys.modules:
        with _lock:
            if not any(isinstance(finder, _ReexportFinder) for finder in sys.meta_path):
                sys.meta_path.insert(0, _ReexportFinder())
            if name + "." not in _prefixes:
                _prefixes = (*_prefixes, name + ".")
    return importlib.import_module(name)


class _ReexportFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname.startswith(prefix) for prefix in _prefixes):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if (
            spec is None
            or spec.submodule_search_locations is None
            or not isinstance(spec.loader, importlib.machinery.SourceFileLoader)
        ):
            return spec
        spec.loader = _ReexportLoader(spec.loader)
        return spec


class _ReexportLoader(importlib.abc.Loader):
    def __init__(self, real: importlib.machinery.SourceFileLoader) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        # The rest of the loader protocol (get_filename, get_source, get_resource_reader, ...)
        # is the file loader's, so `importlib.resources` and tracebacks work as before.
        return getattr(self._real, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        found = _reexports(Path(self._real.get_filename(module.__name__)))
        if found is None:
            self._real.exec_module(module)
            return
        where, public = found
        package = module.__name__

        def __getattr__(name: str) -> Any:
            sub = where.get(name)
            if sub is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(f"{package}.{sub}"), name)
            setattr(module, name, value)
            return value

        def __dir__() -> list[str]:
            return sorted(set(module.__dict__) | set(where))

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = __dir__  # type: ignore[method-assign]
        module.__all__ = public  # type: ignore[attr-defined]


def _reexports(init: Path) -> tuple[dict[str, str], list[str]] | None:
    """For a package `__init__.py` made only of relative re-exports: each name's submodule and
    the names `import *` takes; None for any other package."""
    try:
        tree = ast.parse(init.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    where: dict[str, str] = {}
    declared: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                if alias.name == "*" or alias.asname not in (None, alias.name):
                    return None
                where[alias.name] = node.module
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
            try:
                declared = [str(n) for n in ast.literal_eval(node.value)]
            except ValueError:
                return None
            continue
        return None
    # A name that is also a submodule would turn into that module once the submodule loads.
    submodules = {entry.name.removesuffix(".py") for entry in init.parent.iterdir()}
    if not where or submodules & where.keys():
        return None
    public = declared if declared is not None else [n for n in where if not n.startswith("_")]
    return where, public
