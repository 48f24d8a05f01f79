"""An edit is worked out once, for its approval, and the run makes that change: it is worked out
again only when what it was worked out from (the file's text, the notebook's cells) changed
between the approval and the run, and then the result says so when the change came out
different (issue 54 point 3)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from larik_jupyter import Agent
from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.tools.files import EditTool
from larik_jupyter.tools.planned import Planned
from tests.agent_helpers import make_env, results_of, scripted, text, tool

CHANGED = "changed after the approval: this change differs from the one approved"


def _notebook(path: Path, source: str) -> None:
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "calc", "metadata": {},
                   "outputs": [], "source": source}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }))


def _cell_source(path: Path) -> str:
    source = json.loads(path.read_text())["cells"][0]["source"]
    return source if isinstance(source, str) else "".join(source)


def _approve_after(meanwhile: Callable[[], None]) -> tuple[list[PermissionRequest], Any]:
    """An approver that lets each call run, doing `meanwhile` (the user at work) before it answers."""
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        meanwhile()
        return PermissionAnswer("allow")

    return asked, approver


def _run(
    project: Path, tmp_path: Path, call: dict[str, Any], meanwhile: Callable[[], None]
) -> tuple[PermissionRequest, str, str]:
    """What the approval showed, and the result's text and diff, of a turn making `call`."""
    asked, approver = _approve_after(meanwhile)
    agent = Agent(project, model=scripted(tmp_path, [call], [text("ok")]), approver=approver)
    agent.run("edit it")
    (result,) = results_of(agent)
    agent.close()
    assert not result.is_error, result.text()
    return asked[0], result.text(), result.diff or ""


def test_the_change_approved_is_the_change_made(project: Path, tmp_path: Path) -> None:
    (project / "calc.py").write_text("a = 1\nb = 2\n")
    call = tool("edit", path="calc.py", old_string="a = 1", new_string="a = 10")
    request, said, diff = _run(project, tmp_path, call, lambda: None)
    assert (project / "calc.py").read_text() == "a = 10\nb = 2\n"
    assert request.detail == diff and CHANGED not in said


def test_a_file_changed_between_approval_and_run_is_planned_again_and_the_result_says_so(
    project: Path, tmp_path: Path
) -> None:
    (project / "calc.py").write_text("a = 1\nb = 2\n")
    call = tool("edit", path="calc.py", old_string="a = 1", new_string="a = 10")
    request, said, diff = _run(project, tmp_path, call, lambda: (project / "calc.py").write_text("a = 1\nb = 3\n"))
    # The user's change is kept, the edit made on top of it, and the result shows the new diff.
    assert (project / "calc.py").read_text() == "a = 10\nb = 3\n"
    assert " b = 2" in request.detail and " b = 3" in diff
    assert said.startswith(f"Worked out again since calc.py {CHANGED}.")


def test_a_cell_changed_between_approval_and_run_is_planned_again_and_the_result_says_so(
    project: Path, tmp_path: Path
) -> None:
    notebook = project / "work.ipynb"
    _notebook(notebook, "x = 1\ny = 2")
    call = tool("notebook_edit", path="work.ipynb", cell_id="calc", new_source="x = 10\ny = 2")
    request, said, _ = _run(project, tmp_path, call, lambda: _notebook(notebook, "x = 1\ny = 3"))
    assert "-y = 3" not in request.detail
    assert said.startswith(f"Worked out again since the cell {CHANGED}.") and "-y = 3" in said
    assert _cell_source(notebook) == "x = 10\ny = 2"


def test_an_unchanged_cell_takes_the_edit_its_approval_showed(project: Path, tmp_path: Path) -> None:
    notebook = project / "work.ipynb"
    _notebook(notebook, "x = 1\ny = 2")
    call = tool("notebook_edit", path="work.ipynb", cell_id="calc", new_source="x = 10\ny = 2")
    request, said, _ = _run(project, tmp_path, call, lambda: None)
    assert CHANGED not in said and "+x = 10" in request.detail and request.detail.split("\n", 1)[1] in said
    assert _cell_source(notebook) == "x = 10\ny = 2"


def test_the_run_makes_the_carried_change_while_its_basis_holds(project: Path) -> None:
    """The run does not work the change out again: a carried change whose basis is the file's
    text as it is is made as carried; the same change carried from other text is not."""
    (project / "calc.py").write_text("a = 1\n")
    env = make_env(project)
    args = {"path": "calc.py", "old_string": "a = 1", "new_string": "a = 2"}
    planned = EditTool().plan(env, args)
    carried: Planned[Any] = dataclasses.replace(planned, change=("a = 3\n", "Edited calc.py as carried."))
    result = EditTool().run(dataclasses.replace(env, call=dataclasses.replace(env.call, planned=carried)), args)
    assert result.content.startswith("Edited calc.py as carried.") and (project / "calc.py").read_text() == "a = 3\n"

    (project / "calc.py").write_text("a = 1\n\n")
    stale = dataclasses.replace(carried, basis="a = 1\n")
    result = EditTool().run(dataclasses.replace(env, call=dataclasses.replace(env.call, planned=stale)), args)
    assert (project / "calc.py").read_text() == "a = 2\n\n" and CHANGED in result.content
