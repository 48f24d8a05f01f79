"""docs/architecture.md's layer rule holds: a package imports only the layers above it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "larik_jupyter"


def _layers() -> list[str]:
    """The layers in the table's order (top first): the package each row names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return re.findall(r"^\| (\w+) \| ", text, flags=re.MULTILINE)[1:]


def _imported(path: Path) -> set[str]:
    """The `larik_jupyter` subpackages or modules `path` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        names.update(m.split(".")[1] for m in modules if m.startswith("larik_jupyter."))
    return names


def test_checkpoint_and_nbjson_import_no_lower_layer() -> None:
    layers = _layers()
    assert layers.index("nbjson") < layers.index("checkpoint") < layers.index("tools")
    for package in ("nbjson", "checkpoint"):
        below = set(layers[layers.index(package) + 1 :])
        for path in sorted((PACKAGE / package).glob("*.py")):
            wrong = _imported(path) & below
            assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}, a lower layer"
