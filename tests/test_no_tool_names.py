"""No tool is known by name outside its own module: whatever decides how a call is treated (its
permission rules, "always allow", its approval, the MCP list, protect mode, the views) asks the
tool (`tools/base.py` `Tool`), never compares the call's name with a string.

The scan reads every string literal of the package's source (`ast`) that equals a built-in
tool's name (and `skill`'s, `task`'s). The same word used for something else and data that names
tools are listed below, each with why; a literal anywhere else fails the test, naming its line."""

from __future__ import annotations

import ast
import inspect
from collections import Counter
from pathlib import Path

import larik_jupyter
from larik_jupyter.agent.subagents import TaskTool
from larik_jupyter.tools.registry import BUILTIN_TOOLS
from larik_jupyter.tools.skill import SkillTool

PACKAGE = Path(larik_jupyter.__file__).parent

# (module, word) → why that word is there; the count is how many literals the reason covers, so
# a new use of the word in the same module is still found.
ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    # The same word, not a tool.
    ("lsp/servers.py", "python"): (4, "the language id of .py files for language servers"),
    ("scratch/kernel.py", "python"): (1, "a kernel spec's language"),
    ("frontends/notebook/render.py", "python"): (1, "a Markdown code fence's language"),
    ("analysis/as_notebook.py", "python"): (2, "a new notebook's kernel spec and language"),
    ("bridge_protocol.py", "read"): (1, "the tag of the page's reply to a `get`: the cells read"),
    ("tools/files/process.py", "bash"): (1, "the shell program run by `bash -c`"),
    ("scratch/guard.py", "write"): (1, "the kind of file access the audit hook refuses"),
    ("tools/files/write.py", "write"): (1, "the tag in a temporary file's name"),
    ("frontends/cli/sessions.py", "ls"): (1, "the `larik-jupyter ls` command"),
    ("lsp/client.py", "diagnostics"): (1, "the LSP field `publishDiagnostics` carries"),
    ("egress/ledger.py", "answer"): (1, "the kind of a ledger line for an answer to an outside agent"),
    ("egress/report.py", "answer"): (1, "those answers, counted in words"),
    ("frontends/mcp/link.py", "answer"): (1, "the user expression the kernel's reply carries"),
    # Data: the offline demo model's own script names the calls it makes, as a model does.
    ("llm/scripted.py", "write"): (3, "the scripted demo's calls and its words for them"),
    ("llm/scripted.py", "edit"): (3, "the scripted demo's calls and its words for them"),
    ("llm/scripted.py", "bash"): (1, "the scripted demo's calls"),
}


def tool_names_outside_their_modules(package: Path) -> list[tuple[str, int, str]]:
    """Each string literal equal to a built-in tool's name outside that tool's module:
    (module path under the package, line, name)."""
    home = {cls.name: Path(inspect.getfile(cls)).resolve() for cls in (*BUILTIN_TOOLS, SkillTool, TaskTool)}
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in home and home[node.value] != path.resolve():
                    found.append((path.relative_to(package).as_posix(), node.lineno, node.value))
    return found


def _unexplained(found: list[tuple[str, int, str]]) -> list[str]:
    counts = Counter((module, name) for module, _, name in found)
    return [
        f"{module}:{line}: the tool name {name!r}; ask the tool (a trait or method of `Tool`) instead"
        for module, line, name in found
        if counts[module, name] > ALLOWED.get((module, name), (0, ""))[0]
    ]


def test_no_tool_name_in_the_core_outside_its_own_module() -> None:
    assert _unexplained(tool_names_outside_their_modules(PACKAGE)) == []


def test_every_allowance_is_still_needed() -> None:
    counts = Counter((module, name) for module, _, name in tool_names_outside_their_modules(PACKAGE))
    assert {key: counts[key] for key in ALLOWED if counts[key] != ALLOWED[key][0]} == {}


def test_a_tool_name_compared_in_the_core_is_found(tmp_path: Path) -> None:
    """The made-false twin: a module that switches on a tool's name, as `approval_question` did."""
    package = tmp_path / "larik_jupyter"
    (package / "agent").mkdir(parents=True)
    (package / "agent" / "gate.py").write_text('def ask(name: str) -> bool:\n    return name == "notebook_run"\n')
    assert _unexplained(tool_names_outside_their_modules(package)) == [
        "agent/gate.py:2: the tool name 'notebook_run'; ask the tool (a trait or method of `Tool`) instead"
    ]
