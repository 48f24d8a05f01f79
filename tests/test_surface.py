"""The front ends (`larik_jupyter/frontends/`: the notebook, the CLI, the server extension, the
MCP server and its kernel end) reach the core only through its public surface: `api` (the
`Agent` and every name a front end uses, declared once in `api/__init__.py`), `records`, the
event types and the wire modules. So the core can move and split behind the surface, and what a
front end may use is written in one place."""

from __future__ import annotations

import ast
import inspect
import types

import larik_jupyter.api as api
from larik_jupyter.api.agent import Agent
from larik_jupyter.lazy import type_checking_names
from tests.test_import_layers import GRAPH, MODULES, PACKAGE, _imports

SURFACE = {"api", "records", "agent.events", "bridge_protocol", "mcp_link", "approval_wire", "server_link"}
FRONT_ENDS = "frontends"


def _core_imports(module: str, targets: set[str]) -> set[str]:
    """The core modules `module` imports (front-end modules import each other freely)."""
    return {t for t in targets if t.split(".")[0] != FRONT_ENDS}


def _past_the_surface(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (module, target)
        for module, targets in graph.items()
        if module.split(".")[0] == FRONT_ENDS
        for target in _core_imports(module, targets)
        if target not in SURFACE
    )


def test_front_ends_import_only_the_public_surface() -> None:
    reached = _past_the_surface(GRAPH)
    assert not reached, f"front ends importing core modules past the surface (add the name to api/__init__.py): {reached}"
    # The walk sees the front ends' real imports, so the check cannot pass on nothing.
    assert "api" in GRAPH["frontends.cli.run"] and "agent.events" in GRAPH["frontends.notebook.view"]


def test_a_front_end_import_past_the_surface_is_found(tmp_path) -> None:
    # A deliberate violation: the rule above flags it.
    path = tmp_path / "bad.py"
    path.write_text("from larik_jupyter.session.catalog import resolve\nfrom larik_jupyter.api import Agent\n")
    graph = {"frontends.notebook.bad": set(_imports("frontends.notebook.bad", path))}
    assert _past_the_surface(graph) == [("frontends.notebook.bad", "session.catalog")]


def test_the_notebook_front_end_imports_at_most_ten_core_modules() -> None:
    used = set().union(*(
        _core_imports(m, GRAPH[m]) for m in MODULES if m.startswith(f"{FRONT_ENDS}.notebook")
    ))
    assert used and len(used) <= 10, sorted(used)


def test_agent_has_at_most_forty_public_members() -> None:
    public = [name for name, _ in inspect.getmembers(Agent) if not name.startswith("_")]
    assert 20 < len(public) <= 40, (len(public), public)


def test_every_surface_name_loads_and_none_is_a_whole_module() -> None:
    # Each name the surface declares for type checkers is what it gives at run time; a module
    # handed out whole would let a front end reach everything in it.
    declared = type_checking_names(api.__file__)
    assert len(declared) > 100
    for name in declared:
        value = getattr(api, name)
        assert not isinstance(value, types.ModuleType), f"api.{name} is a whole module"
    assert set(declared) == {a.asname or a.name for node in ast.walk(ast.parse((PACKAGE / "api" / "__init__.py").read_text()))
                              if isinstance(node, ast.ImportFrom) and node.module != "__future__"
                              and node.module not in ("typing", "larik_jupyter.lazy") for a in node.names}


def test_a_name_the_surface_does_not_declare_is_an_attribute_error() -> None:
    try:
        api.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("the surface gave a name it does not declare")
