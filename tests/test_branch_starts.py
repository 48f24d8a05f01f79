"""What a branch stood on (issue 39): a prompt records the cells the user ran before it, so the
branch notebook and replay start from the user's cells the agent's code relies on (marked as
the user's), and a call that raised is kept with its error expected; `/check` names a value
set by a skipped `%larik -o` cell as such, and the shipped notebooks pass their own check."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from agent_helpers import done, scripted, tool
from nbclient import NotebookClient
from test_notebook_check import write_notebook
from test_notebook_kernel_undo import client, run_cells

from larik_jupyter.session.catalog import latest
from larik_jupyter.tools.host import KernelHost

USER_CELLS = [
    "import pandas as pd",
    "raw = pd.DataFrame({'x': [1.0, None, 3.0], 'y': [4, 5, 6]})",
    "unrelated = open('only-here.txt').read() if False else 'not needed'",
    "scale = 10",
]
CLEAN = "clean = raw.dropna()\nprint(len(clean), 'rows')"
FAILS = "x = 5\n1 / 0"
LATER = "print(x * scale, clean['y'].sum())"


@pytest.mark.timeout(300)
def test_the_branch_notebook_of_a_kernel_session_runs_in_a_fresh_kernel_elsewhere(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [tool("python", code=CLEAN)], [tool("python", code=FAILS)], [tool("python", code=LATER)], done())
    nbc = client(project, ["%load_ext larik_jupyter", *USER_CELLS, f"%larik --model {model} --yes tidy it up"])
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    assert "ZeroDivisionError" in texts[-1] and "50 10" in texts[-1]
    session = latest(project)
    assert session is not None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    made = subprocess.run([sys.executable, "-m", "larik_jupyter", "notebook", session.id, str(elsewhere / "branch.ipynb")],
                          cwd=project, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    nb = nbformat.read(elsewhere / "branch.ipynb", as_version=4)
    user = [c.source for c in nb.cells if c.get("metadata", {}).get("larik_branch", {}).get("user_cell")]
    assert user == [USER_CELLS[0], USER_CELLS[1], USER_CELLS[3]]  # not the cell nothing reads
    failing = [c for c in nb.cells if c.cell_type == "code" and c.source == FAILS]
    assert failing and failing[0].metadata.get("tags") == ["raises-exception"]
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(elsewhere)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" and c.source == LATER for o in c.outputs)
    assert printed == "50 10\n"
    # Replay from the same start: the user's cells run first, the failing call fails as recorded.
    replayed = subprocess.run([sys.executable, "-m", "larik_jupyter", "replay", session.id],
                              cwd=project, capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "6 same, 0 changed, 0 failed" in replayed.stdout, replayed.stdout
    assert replayed.stdout.count("user cell") == 3


def test_check_names_what_a_skipped_larik_o_cell_sets_and_runs_the_rest(project: Path) -> None:
    from larik_jupyter.tools.check.tool import run_check
    from tests.agent_helpers import make_env

    write_notebook(project / "flow.ipynb", [
        ("%%larik -o out\nsummarise the data", 1, []),
        ("answer = out.text", 2, []),
        ("print(answer.upper())", 3, []),
        ("y = 2", 4, []),
    ])
    live = {"out": object(), "answer": "done", "y": 2}
    report = run_check(make_env(project, host=KernelHost(live)), "flow.ipynb", timeout=120)
    assert report.problems == 0, report.text()
    why = {s.cell.label.split(" (")[0]: re.sub(r" \(\w+\)", "", s.why) for s in report.skipped}
    assert why["cell 3"] == "uses `out`, set by the %larik -o prompt in cell 2, which the check does not run"
    assert why["cell 4"] == "uses `answer`, which needs `out`, set by the %larik -o prompt in cell 2, which the check does not run"
    # Without the -o, the same cells are what they are: a name only the live kernel has.
    write_notebook(project / "flow.ipynb", [("%%larik\nsummarise the data", 1, []), ("answer = out.text", 2, [])])
    report = run_check(make_env(project, host=KernelHost(live)), "flow.ipynb", timeout=120)
    assert [h.name for h in report.hidden] == ["out"] and report.failures


@pytest.mark.parametrize("name", ["quickstart.ipynb", "data-exploration.ipynb"])
def test_the_shipped_notebooks_pass_their_own_check(name: str) -> None:
    from larik_jupyter.tools.check.tool import run_check
    from tests.agent_helpers import make_env

    notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    report = run_check(make_env(notebooks, host=KernelHost({})), name, timeout=300)
    assert report.problems == 0 and not report.stopped, report.text()
