"""The README's "A first session" works offline as written (issue 53, point 7): its lines, read
from the README itself, run headless with no API key, each in a cell of its own in a new notebook
beside `churn.csv`, and each does what the README's text says. `-o NAME` that binds no value
says so in one line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from tests.agent_helpers import personal
from tests.test_notebooks import NOTEBOOKS, REPO, outputs_text


def first_session() -> list[str]:
    """The lines of the README's "A first session" block."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## A first session", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "the README's first session is a python block"
    return block[1].strip().splitlines()


@pytest.mark.timeout(300)
def test_the_readmes_first_session_runs_offline_and_each_line_does_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LARIK_MODEL"):
        monkeypatch.delenv(key, raising=False)
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("churn.csv", "churn-analysis.script.json"):
        shutil.copy(NOTEBOOKS / name, folder / name)
    # The person clicks Allow on the agent's Python; headless, an allow rule stands in for it.
    personal({"permissions": {"allow": ["python"]}})
    lines = first_session()
    checks = ["type(drivers.value).__name__, drivers.value.shape", "sorted(k for k in globals() if k.startswith('by_'))"]
    made_false = ["%larik -o nothing what drives churn here?", "%larik what is the weather?"]
    nb = new_notebook(cells=[new_code_cell(line) for line in lines + checks + made_false])
    nb.cells[-1].metadata["tags"] = ["raises-exception"]  # a prompt the script has no turn for
    path = folder / "first.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))  # as Jupyter's server tells a kernel its notebook
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(folder)}}).execute()
    out = {cell.source: outputs_text(cell) + "".join(o.get("evalue", "") for o in cell.outputs) for cell in nb.cells}
    errors = [o for c in nb.cells[:-1] for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []

    # "The agent looks at `df`, runs Python in your kernel and answers": the shipped script's
    # turn for this question, not an unrelated demo.
    ask = out["%larik what drives churn here?"]
    assert "inspect_variables" in ask and "overall churn rate: 0.31" in ask and "month-to-month" in ask
    assert "31% of these customers churned" in ask and "larik_demo.txt" not in ask
    # "what it did to your variables"
    assert "by_calls: created Series 7 · by_contract: created Series 3" in ask
    # "/check runs the notebook from the top in a scratch kernel to find hidden state"
    check = out["%larik /check"]
    assert "first.ipynb" in check and "No problems found" in check, check
    # "/undo puts back the files, cells and variables the last turn changed"
    undo = out["%larik /undo"]
    assert "Undid prompt 1" in undo and "removed: by_calls, by_contract" in undo, undo
    assert out[checks[1]].strip() == "[]"
    # "-o drivers makes the turn's result a kernel value (drivers.value is the table the agent built)"
    assert out[checks[0]].strip() == "('DataFrame', (3, 2))"
    assert "handed back no value" not in out[lines[-1]]
    # Made false: a turn that hands back nothing says so in one line; a prompt the script does
    # not answer says which it does.
    nothing = out[made_false[0]]
    assert "`nothing` holds this turn's outcome, but the agent handed back no value" in nothing
    assert "has no turn for the prompt 'what is the weather?'" in out[made_false[1]]
    assert "'churn rate by contract'" in out[made_false[1]]


@pytest.mark.parametrize(("button", "rows"), [("allow", 144), ("deny", 200)])
def test_the_churn_notebooks_protect_reply_is_right_for_either_button(
    button: str, rows: int, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped churn notebook's protect cell: whichever button the reader clicks, the
    scripted reply says what became of `df` (issue 53, point 7)."""
    import pandas as pd

    from larik_jupyter import Agent
    from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
    from larik_jupyter.tools.host import KernelHost

    async def click(request: PermissionRequest) -> PermissionAnswer:
        return PermissionAnswer(button)  # type: ignore[arg-type]

    ns = {"df": pd.read_csv(NOTEBOOKS / "churn.csv"), "pd": pd}
    model = f"scripted:{NOTEBOOKS / 'churn-analysis.script.json'}"
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), approver=click, protect=True)
    try:
        reply = agent.run("drop the customers who never called support").text
    finally:
        agent.close()
    assert len(ns["df"]) == rows
    said = {"allow": "If you allowed it, `df` lost the customers who never called support",
            "deny": "if you denied it, or nobody could answer, `df` keeps its 200 rows"}
    assert said[button] in reply  # the reply covers what this button did
