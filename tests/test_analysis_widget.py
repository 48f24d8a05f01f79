"""`%larik /notebook` and the fork tree's "Open as notebook" and "compare with…", through the
magic and the widget's click API (no browser), on a session whose python calls ran in the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from agent_helpers import done, scripted, tool
from IPython.core.error import UsageError

from larik_jupyter.frontends.notebook.widgets.tree import ForkTreeWidget
from tests.widget_helpers import click, larik, shell_with_magics


def _two_branches(project: Path, tmp_path: Path) -> tuple[Any, Any, str, str]:
    model = scripted(
        tmp_path,
        [tool("python", code="x = 6 * 7\nprint('x is', x)")], done("x is set."),
        [tool("python", code="print('double', x * 2)")], done("Doubled."),
    )
    shell, magics = shell_with_magics(project, model)
    larik(shell, "set x")
    larik(shell, "double it")
    first = magics.agent.session_id
    magics.agent.rewind(2)
    magics.agent.switch_model(scripted(tmp_path, [tool("python", code="print('triple', x * 3)")], done("Tripled.")))
    larik(shell, "triple it")
    return shell, magics, first, magics.agent.session_id


def test_magic_writes_the_branch_and_refuses_an_existing_file(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = _two_branches(project, tmp_path)
    larik(shell, "/notebook out.ipynb --at 1")
    nb = nbformat.read(project / "out.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in code] == ["x = 6 * 7\nprint('x is', x)"]
    assert code[0].outputs[0]["text"] == "x is 42\n"
    assert code[0].metadata["larik_branch"]["session"] == second  # the copied prefix is this branch's
    before = (project / "out.ipynb").read_bytes()
    with pytest.raises(UsageError, match="already exists"):
        larik(shell, "/notebook out.ipynb")
    assert (project / "out.ipynb").read_bytes() == before


def test_tree_opens_a_branch_as_notebook_and_compares_two_branches(project: Path, tmp_path: Path) -> None:
    shell, magics, first, second = _two_branches(project, tmp_path)
    widget = ForkTreeWidget(magics.kernel)
    sent: list[dict[str, Any]] = []
    widget.send = sent.append  # type: ignore[method-assign]  # the comm transport, not the widget
    click(widget, type="notebook", session=first, prompt=2)
    path = project / f"{first}.ipynb"
    assert sent == [{"type": "open_notebook", "path": str(path)}] and not widget.error
    sources = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert sources == ["x = 6 * 7\nprint('x is', x)", "print('double', x * 2)"]
    click(widget, type="notebook", session=first, prompt=5)
    assert widget.error == f"Session {first} has 2 prompts; --at takes a prompt number from 1 to 2, not 5."

    click(widget, type="compare", session=first, other=second)
    assert not widget.error
    text = widget.comparison
    assert "fork point: after prompt 1" in text
    (row,) = [line for line in text.splitlines() if "double 84" in line]
    assert row.startswith("≠") is False and "triple 126" in row
    assert any(line.startswith("≠ [prompt 2]") for line in text.splitlines())
    click(widget, type="compare", session=first, other=first)
    assert widget.error == "Pick two different sessions to compare."
