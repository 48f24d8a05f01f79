"""docs/reference/ is what scripts/gen_reference.py makes of the code now."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "scripts" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_reference", module)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def test_the_reference_pages_are_current() -> None:
    assert gen.stale() == [], "run `python scripts/gen_reference.py` and commit docs/reference/"


def test_a_page_that_differs_from_the_code_is_named_stale(tmp_path: Path) -> None:
    for name, text in gen.pages().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert gen.stale(tmp_path) == []
    config = tmp_path / "config.md"
    config.write_text(config.read_text().replace("| `max_steps` | integer (> 0) | `40`", "| `max_steps` | integer (> 0) | `50`"))
    (tmp_path / "cli.md").unlink()
    assert gen.stale(tmp_path) == ["config.md", "cli.md"]


def test_the_pages_do_not_depend_on_the_terminal_or_the_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = gen.pages()
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.chdir(tmp_path)
    assert gen.pages() == first


def test_the_pages_hold_every_command_key_tool_and_subcommand() -> None:
    from larik_jupyter.config.model import Config
    from larik_jupyter.frontends.cli import build_parser
    from larik_jupyter.frontends.notebook.commands import COMMANDS
    from larik_jupyter.tools.registry import BUILTIN_TOOLS

    pages = gen.pages()
    assert all(f"### {name}\n\n`%larik /{name}" in pages["commands.md"] for name in COMMANDS)
    assert all(f"| `{key}` |" in pages["config.md"] for key in Config.model_fields)
    assert all(f"\n## {tool.name}\n" in pages["tools.md"] for tool in BUILTIN_TOOLS)
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    subcommands = sub.choices
    assert all(f"\n## {name}\n" in pages["cli.md"] for name in subcommands)
