"""In a real kernel under nbclient: /undo puts the kernel's variables back, and says so after a
restart; /rewind N --files brings the files back to before prompt N."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from larik_jupyter.session.catalog import resolve
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.agent_helpers import done, personal, scripted, tool
from tests.process_helpers import wait_until
from tests.session_helpers import released
from tests.test_notebooks import outputs_text

CHANGE = 'df.drop(columns=["a"], inplace=True); data.append(4); x = 5'
SETUP = (
    "import warnings\nwarnings.simplefilter('ignore')\nimport numpy as np\nimport pandas as pd\n"
    "df = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})\ndata = [1, 2, 3]\nbig = np.zeros(2 * 1024 * 1024 // 8)"
)
SHOW = "print(json.dumps({'columns': list(df.columns), 'data': data, 'x': 'x' in globals(), 'big': float(big[0])}))"


def client(project: Path, cells: list[str]) -> NotebookClient:
    nb = new_notebook(cells=[new_code_cell(source) for source in cells])
    return NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(project)}}
    )


def run_cells(nbc: NotebookClient, start: int = 0, stop: int | None = None) -> list[str]:
    """Execute cells `start` to `stop` (default: the end); the outputs of every cell so far."""
    for index in range(start, len(nbc.nb.cells) if stop is None else stop):
        nbc.execute_cell(nbc.nb.cells[index], index)
    return [outputs_text(cell) for cell in nbc.nb.cells]


def project_files(project: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in project.iterdir() if p.is_file()}


def shown(text: str) -> dict[str, Any]:
    return json.loads(text.strip().splitlines()[-1])


@pytest.mark.timeout(240)
def test_undo_in_a_kernel_restores_variables_and_leaves_the_over_budget_one(project: Path, tmp_path: Path) -> None:
    personal({"kernel_snapshot_budget_mb": 1})
    (project / "notes.txt").write_text("before\n")
    model = scripted(
        tmp_path,
        [tool("write", path="notes.txt", content="after\n"),
         tool("python", code="big.fill(7.0)\n" + CHANGE)],
        done(),
    )
    nbc = client(project, [
        "%load_ext larik_jupyter", SETUP + "\nimport json",
        f"%larik --model {model} --yes change the data", SHOW, "%larik /undo", SHOW,
    ])
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    assert shown(texts[3]) == {"columns": ["b"], "data": [1, 2, 3, 4], "x": True, "big": 7.0}
    assert "restored notes.txt" in texts[4]
    assert (
        "restored variables: df, data; removed: x; could not restore: big (2.0 MB, over the 1 MB budget)"
        in texts[4]
    )
    assert shown(texts[5]) == {"columns": ["a", "b"], "data": [1, 2, 3], "x": False, "big": 7.0}
    assert (project / "notes.txt").read_text() == "before\n"


@pytest.mark.timeout(240)
def test_after_a_kernel_restart_undo_restores_files_and_says_variables_are_gone(project: Path, tmp_path: Path) -> None:
    (project / "notes.txt").write_text("before\n")
    model = scripted(
        tmp_path,
        [tool("write", path="notes.txt", content="after\n"), tool("python", code=CHANGE)],
        done(),
    )
    nbc = client(project, [
        "%load_ext larik_jupyter", SETUP, f"%larik --model {model} --yes change both",
        "%load_ext larik_jupyter", "%larik /resume --last", "%larik /undo",
    ])
    with nbc.setup_kernel():
        for index in range(3):
            nbc.execute_cell(nbc.nb.cells[index], index)
        assert nbc.km is not None and nbc.kc is not None
        run_sync(nbc.km.restart_kernel)()
        run_sync(nbc.kc.wait_for_ready)(timeout=60)
        wait_until(lambda: released(project), "the restarted kernel's old process to release its session")
        texts = run_cells(nbc, start=3)
    undo = texts[5]
    assert "restored notes.txt" in undo and (project / "notes.txt").read_text() == "before\n"
    assert "variables gone with the kernel" in undo and "df, data, x" in undo


@pytest.mark.timeout(240)
def test_rewind_with_files_in_a_kernel_and_without_them(project: Path, tmp_path: Path) -> None:
    model = scripted(
        tmp_path,
        [tool("write", path="a.txt", content="one\n")], done(),
        [tool("edit", path="a.txt", old_string="one", new_string="two"),
         tool("write", path="b.txt", content="b\n")], done(),
        [tool("edit", path="b.txt", old_string="b", new_string="bb")], done(),
    )
    magics = "get_ipython().magics_manager.registry['LarikMagics']"
    nbc = client(project, [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes first", "%larik --yes second", "%larik --yes third",
        f"source = {magics}.agent.session_id\nprint(source)",
        "%larik /rewind 2",
        "get_ipython().run_line_magic('larik', '/resume ' + source)",
        "%larik /rewind 2 --files",
        f"print({magics}.agent.session_id)",
    ])
    with nbc.setup_kernel():
        run_cells(nbc, stop=5)
        source = resolve(outputs_text(nbc.nb.cells[4]).strip(), project)
        recorded, on_disk = source.read_bytes(), project_files(project)
        assert on_disk == {"a.txt": "two\n", "b.txt": "bb\n"}
        run_cells(nbc, start=5, stop=7)  # /rewind 2 without --files, then back to the source
        assert project_files(project) == on_disk and source.read_bytes() == recorded
        texts = run_cells(nbc, start=7)
    assert "Undid prompt 3." in texts[7] and "Undid prompt 2." in texts[7]
    assert project_files(project) == {"a.txt": "one\n"}
    assert source.read_bytes() == recorded
    branch = resolve(outputs_text(nbc.nb.cells[8]).strip(), project)
    prompts = [m for m in replay(load_entries(branch).entries).all if m.is_prompt()]
    assert [m.prompt_text() for m in prompts] == ["first"]  # the branch ends just before prompt 2
