"""`/check` attributes state by who made it (issue 53, point 3): a variable the agent's call made
is named with its prompt, and a cell the agent edited is named as such; the twins (the user
made the variable, a cell the agent never touched) read as before."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from larik_jupyter import Agent, KernelHost
from tests.agent_helpers import done, scripted, tool


def _notebook(path: Path, *, edited: bool) -> None:
    cell = new_code_cell("print(epoch * 2)", execution_count=3)
    if edited:
        cell.metadata["larik"] = {"session": "s", "prompt": 2, "tool_use_id": "toolu_x"}
    nb = new_notebook(cells=[new_code_cell("import math", execution_count=1), cell])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.mark.parametrize("by_agent", [True, False])
def test_check_names_the_agents_variable_with_its_prompt(project: Path, tmp_path: Path, by_agent: bool) -> None:
    _notebook(project / "work.ipynb", edited=False)
    namespace: dict[str, object] = {} if by_agent else {"epoch": 4}
    code = "epoch = 4" if by_agent else "print(epoch)"
    agent = Agent(project, model=scripted(tmp_path, [tool("python", code="print('warm up')")], done(),
                                          [tool("python", code=code)], done()),
                  yes=True, host=KernelHost(namespace))
    agent.run("warm up")
    agent.run("set the epoch" if by_agent else "show the epoch")
    assert namespace["epoch"] == 4
    report = agent.check("work.ipynb", timeout=120)
    agent.close()
    text = report.text()
    assert [h.name for h in report.hidden] == ["epoch"]
    assert "2 cells run" in text and "2 problems found." in text  # counted in words, not "problem(s)"
    made = "made by the agent in prompt 2, in no cell: run `/notebook` or add the cell"
    assert (made in text) is by_agent
    assert ("defined by a deleted or edited cell, or by hand" in text) is not by_agent


@pytest.mark.parametrize("edited", [True, False])
def test_check_names_a_cell_the_agent_edited(project: Path, tmp_path: Path, edited: bool) -> None:
    _notebook(project / "work.ipynb", edited=edited)
    agent = Agent(project, model=scripted(tmp_path, done()), yes=True, host=KernelHost({"epoch": 4}))
    report = agent.check("work.ipynb", timeout=120)
    agent.close()
    (hidden,) = report.hidden
    assert ("edited by the agent in prompt 2" in hidden.cells[0].label) is edited
    assert ("cell 2 (" in report.text()) and ("edited by the agent in prompt 2" in report.text()) is edited


def test_people_read_a_long_cell_id_short_and_the_model_whole(project: Path, tmp_path: Path) -> None:
    uuid = "4f9a2c7d-1b2e-4c3d-9e8f-0123456789ab"  # as JupyterLab names cells
    nb = new_notebook(cells=[new_code_cell("print(missing)", execution_count=1, id=uuid)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, project / "work.ipynb")
    model = scripted(tmp_path, [tool("notebook_check", path="work.ipynb", timeout=120)], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    shown = agent.check("work.ipynb", timeout=120).text()  # what /check shows the person
    agent.run("check it")
    sent = agent.loop.session.state.all[-2].tool_results()[0].text()  # what the model got
    agent.close()
    assert "cell 1 (4f9a2c7d…): NameError" in shown and uuid not in shown
    assert f"cell 1 ({uuid}): NameError" in sent
