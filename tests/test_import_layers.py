"""The package's imports follow docs/architecture.md: no layer imports a later one, and no two
modules of different concerns import each other (directly or round a longer circle).

Imports are read from the source (`ast`), at any depth: a function-level import is still a
dependency, and so is one under `if TYPE_CHECKING:` (a type named across two concerns ties them
as much as a call does).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import larik_jupyter

PACKAGE = Path(larik_jupyter.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

# Circles allowed, each with why it is still there (none: no two modules import each other,
# not even for a type).
ALLOWED_CYCLES: dict[frozenset[str], str] = {}

# Imports from a lower layer into a later one, each with why it is still there (none today).
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _known(name: str) -> str | None:
    """The package module `name` (dotted, without `larik_jupyter.`) is, or lies in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str, path: Path) -> Iterator[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def walk(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            yield from walk(child)

    for node in walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
                module = f"larik_jupyter.{module}" if module else "larik_jupyter"
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" for alias in node.names]
        for target in targets:
            if target == "larik_jupyter" or not target.startswith("larik_jupyter."):
                continue
            found = _known(target.removeprefix("larik_jupyter."))
            if found is not None and found != name:
                yield found


GRAPH = {name: set(_imports(name, path)) for name, path in MODULES.items()}


def _layers() -> list[tuple[str, list[str]]]:
    """The layer table of docs/architecture.md: each layer with the module paths it names."""
    rows = []
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]  # not the other tables
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("layer", "") and not set(cells[0]) <= {"-"}:
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
    return rows


def _layer_of() -> dict[str, int]:
    """Each module's layer index, from the table: `dir/` names a folder, `dir/a.py` a module,
    and a bare `b.py` after one lies in the same folder."""
    where: dict[str, int] = {}
    for index, (_, names) in enumerate(_layers()):
        folder = ""
        for entry in names:
            entry = entry.split(" ")[0]
            if entry.endswith("/"):
                prefix = entry.rstrip("/").replace("/", ".")
                if prefix == "labextension":
                    continue
                if folder and "." not in prefix:  # `widgets/` after `notebook/…` entries
                    prefix = f"{folder}.{prefix}"
                for module in MODULES:
                    if module == prefix or module.startswith(prefix + "."):
                        where.setdefault(module, index)
                continue
            if not entry.endswith(".py"):
                continue
            if "/" in entry:
                folder = entry.rpartition("/")[0].replace("/", ".")
                entry = entry.rpartition("/")[2]
            module = ".".join(filter(None, [folder, entry.removesuffix(".py")]))
            where[module] = index
    # A package (its `__init__`) belongs with its modules.
    for module, path in MODULES.items():
        if path.name == "__init__.py" and module not in where:
            inside = [where[m] for m in where if m.startswith(module + ".")]
            if inside:
                where[module] = min(inside)
    return where


def _cycles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(GRAPH[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return groups


def test_the_graph_is_read() -> None:
    # The walk sees real imports, so the checks below cannot pass on an empty graph.
    assert "agent.loop" in GRAPH["api"] or any(m.startswith("agent.") for m in GRAPH["api"])
    assert "tools.base" in GRAPH["tools.files.edit"]


def test_every_module_is_in_a_layer() -> None:
    where = _layer_of()
    missing = sorted(m for m in MODULES if m and m not in where and m != "__main__")
    assert not missing, f"modules docs/architecture.md does not place in a layer: {missing}"


def test_no_import_cycle_between_concerns() -> None:
    tangles = [g for g in _cycles() if frozenset(g) not in ALLOWED_CYCLES]
    assert not tangles, f"import cycles (break them or allow-list with a reason): {tangles}"


def test_no_layer_imports_a_later_one() -> None:
    where = _layer_of()
    names = [name for name, _ in _layers()]
    upward = [
        (module, target, f"{names[where[module]]} -> {names[where[target]]}")
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if module in where and target in where and where[target] > where[module]
        and (module, target) not in ALLOWED_UPWARD
    ]
    assert not upward, f"imports of a later layer: {upward}"


def test_every_allowance_is_still_needed() -> None:
    # An allow-list entry whose import is gone would hide the next one that comes back.
    cycles = {frozenset(group) for group in _cycles()}
    assert set(ALLOWED_CYCLES) <= cycles, set(ALLOWED_CYCLES) - cycles
    stale = [pair for pair in ALLOWED_UPWARD if pair[1] not in GRAPH[pair[0]]]
    assert not stale, f"allowed imports that no longer exist: {stale}"


def test_kernel_session_builds_no_widget() -> None:
    # `KernelSession` is what commands and widgets work through; a widget it built would import
    # it back (the approval card is the magics' to show, handed in as `show_pending`).
    widgets = sorted(m for m in GRAPH["frontends.notebook.kernel"] if m.startswith("frontends.notebook.widgets"))
    assert not widgets, f"notebook/kernel.py imports widgets: {widgets}"


TOOL_PACKAGES = ("tools.kernel", "tools.notebook", "tools.files", "tools.check")


def test_a_tool_subsystem_is_reached_through_its_package() -> None:
    # Each subsystem of `tools/` has one public module, its package: the rest of the code
    # imports that, never a module inside it (tests may).
    inside = [
        (module, target)
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        for package in TOOL_PACKAGES
        if target.startswith(package + ".") and not (module == package or module.startswith(package + "."))
    ]
    assert not inside, f"imports past a tools package's public module: {inside}"


def test_one_module_starts_kernels_through_jupyter_client() -> None:
    # Code run to check or replay starts its kernel only through `ScratchKernel` (guarded, in a
    # scratch copy, always shut down); a second driver would start kernels without that guard.
    # The MCP server only connects to the user's running kernel (a client, never a manager).
    starters = sorted(name for name, path in MODULES.items() if any(
        target.startswith(("jupyter_client.manager", "jupyter_client.multikernelmanager"))
        or target in ("jupyter_client.KernelManager", "jupyter_client.start_new_kernel")
        for target in _outside_imports(path)
    ))
    assert starters == ["scratch.kernel"], starters
    clients = sorted(name for name, path in MODULES.items() if any(
        target.startswith("jupyter_client") for target in _outside_imports(path)
    ))
    assert clients == ["frontends.mcp.attach", "frontends.mcp.link", "scratch.kernel"], clients


def _outside_imports(path: Path) -> set[str]:
    """Every module `path` imports, inside the package or not, at any depth, and each name a
    `from` import takes (`jupyter_client.KernelManager`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


MAX_LINES = 400

# Modules still over `MAX_LINES`, each with why (temporary: an entry goes when its module is split).
OVER_MAX_LINES: dict[str, str] = {}


def _lines(name: str) -> int:
    return len(MODULES[name].read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_400_lines() -> None:
    # A module that grows past this holds more than one job: split it by what it holds.
    long = sorted((name, n) for name in MODULES if name not in OVER_MAX_LINES and (n := _lines(name)) > MAX_LINES)
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_every_module_over_400_lines_is_still_over() -> None:
    # An exception whose module was split would let it grow back unseen.
    split = sorted(name for name in OVER_MAX_LINES if _lines(name) <= MAX_LINES)
    assert not split, f"modules no longer over {MAX_LINES} lines (drop their exception): {split}"


def test_the_mcp_links_kernel_end_is_a_module_the_server_may_reach() -> None:
    # The MCP server process imports no notebook module: the line it sends the kernel names
    # `mcp_link.KERNEL_END`, an import this graph cannot see. So that module must exist, define
    # what the line calls, read the link's messages from `mcp_link` as the server does, and lie
    # in a layer the server may reach.
    from larik_jupyter import mcp_link

    end = mcp_link.KERNEL_END.removeprefix("larik_jupyter.")
    assert end in MODULES, f"mcp_link.KERNEL_END names no module: {mcp_link.KERNEL_END}"
    tree = ast.parse(MODULES[end].read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert set(mcp_link.KERNEL_FUNCTIONS) <= defined, set(mcp_link.KERNEL_FUNCTIONS) - defined
    assert "mcp_link" in GRAPH[end] and "mcp_link" in GRAPH["frontends.mcp.link"]
    where = _layer_of()
    assert where[end] <= where["frontends.mcp.link"]
    server = set().union(*(GRAPH[m] for m in MODULES if m.startswith("frontends.mcp") and m != end))
    assert not [m for m in server if m.startswith("frontends.notebook") or m == end], (
        "the MCP server process imports the notebook front end or the kernel end"
    )
