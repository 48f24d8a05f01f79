"""The agent sees the notebook it lives in: a headless notebook (nbclient, a real kernel) whose
cell raised, then `%%larik ... fix the error above` reading and editing that cell, then /undo."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook, new_output

from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from tests.agent_helpers import done, scripted, tool


def cell_texts(path: Path) -> list[str]:
    return [json.dumps(c, indent=1, sort_keys=True) for c in json.loads(path.read_text())["cells"]]


def run_cell(client: NotebookClient, nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    nb.cells.append(new_code_cell(source))
    return client.execute_cell(nb.cells[-1], len(nb.cells) - 1)


def outputs_text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for out in cell.outputs:
        parts.append(out.get("text", "") + json.dumps(out.get("data", {})) + out.get("evalue", ""))
    return "\n".join(parts)


@pytest.mark.timeout(180)
def test_fix_the_error_above_edits_only_that_cell_and_undo_restores_it(
    project: Path, larik_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    model = scripted(
        project.parent,
        [tool("notebook_read")],
        [tool("notebook_edit", cell_id="boom", old_string="1/0", new_string="1/1")],
        done("Fixed: the cell divided by zero."),
    )
    path = project / "analysis.ipynb"
    boom = new_code_cell("x = 1\n1/0", id="boom", execution_count=2)
    boom.outputs = [new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                               traceback=["ZeroDivisionError: division by zero"])]
    nb = new_notebook(cells=[
        new_code_cell("%load_ext larik_jupyter", id="load", execution_count=1),
        boom,
        new_code_cell(f"%%larik --model {model} --yes\nfix the error above", id="ask"),
    ])
    nbformat.write(nb, str(path))
    original = path.read_bytes()
    before = cell_texts(path)
    # What Jupyter's server tells a kernel it starts for a notebook.
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))

    running = nbformat.read(str(path), as_version=4)
    client = NotebookClient(running, kernel_name="python3", timeout=120, allow_errors=True,
                            resources={"metadata": {"path": str(project)}})
    with client.setup_kernel():
        for index, cell in enumerate(running.cells):
            client.execute_cell(cell, index)
        assert running.cells[1].outputs[0].ename == "ZeroDivisionError"
        turn = outputs_text(running.cells[2])
        assert "reload it from disk" in turn

        edited = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
        nbformat.validate(edited)
        after = cell_texts(path)
        assert after[0] == before[0] and after[2] == before[2]
        cell = edited.cells[1]
        assert cell.source == "x = 1\n1/1" and cell.outputs == [] and cell.execution_count is None

        undo = run_cell(client, running, "%larik /undo")
        assert "analysis.ipynb" in outputs_text(undo)
        assert path.read_bytes() == original

    sessions = list((larik_dirs["data"] / "sessions").glob("*/*.jsonl"))
    assert len(sessions) == 1
    messages = replay(load_entries(sessions[0]).entries).all
    prompt = messages[0]
    assert prompt.is_prompt() and prompt.prompt_text() == "fix the error above"
    blocks = [b.text for b in prompt.content if b.type == "text"]
    assert blocks[-1] == "fix the error above"
    context = blocks[0]
    assert context.startswith("<notebook-context>")
    assert "Notebook: analysis.ipynb (this kernel's notebook, from JPY_SESSION_NAME)" in context
    # nbclient sends no cell ids (JupyterLab does), so the error is named by execution count.
    assert "[2]: x = 1 ⏎ 1/0  → raised ZeroDivisionError" in context
    assert "Last error, raised by cell [2] after the previous prompt" in context
    assert "ZeroDivisionError: division by zero" in context and "\x1b[" not in context
    # notebook_read defaulted to the kernel's notebook and showed the cell by its id.
    read = messages[2].tool_results()[0]
    assert "--- cell 2 · id boom · code" in str(read.content)
