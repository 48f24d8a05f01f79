"""Without a browser (nbclient) the notebook tools fall back to the file: notebook_edit writes
it through nbformat and notebook_run runs the cell in the kernel and writes its outputs there."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries


def results(root: Path) -> list[str]:
    (info,) = list_sessions(root)
    texts = []
    for entry in load_entries(info.path).entries:
        for block in entry.message.tool_results() if entry.message is not None else []:
            texts.append(block.content if isinstance(block.content, str) else str(block.content))
    return texts


def run_turns(root: Path, script: dict, *cells: str) -> nbformat.NotebookNode:
    """Run `%load_ext` and `cells` in a fresh kernel through nbclient (no browser, so no
    bridge), with `script` as the scripted model's script.json; the executed notebook."""
    (root / "script.json").write_text(json.dumps(script))
    driver = nbformat.v4.new_notebook()
    driver.cells = [nbformat.v4.new_code_cell(source) for source in ("%load_ext larik_jupyter", *cells)]
    NotebookClient(driver, kernel_name="python3", timeout=120,
                   resources={"metadata": {"path": str(root)}}).execute()
    return driver


def test_edit_and_run_go_to_the_file_without_a_bridge(tmp_path: Path) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("y = 1", id="calc")]
    nbformat.write(work, tmp_path / "work.ipynb")
    script = {
        "responses": [
            {"content": [
                {"type": "tool_use", "name": "notebook_edit",
                 "input": {"path": "work.ipynb", "cell_id": "calc", "new_source": "y = 6 * 7\nprint('y is', y)\ny"}},
                {"type": "tool_use", "name": "notebook_run", "input": {"path": "work.ipynb", "cell_id": "calc"}},
                {"type": "tool_use", "name": "notebook_run",
                 "input": {"path": "work.ipynb", "cell_id": "calc", "timeout": 4000}},
            ]},
            {"content": [{"type": "text", "text": "Done."}]},
        ]
    }
    run_turns(tmp_path, script, "%larik --yes --model scripted:script.json edit and run")
    saved = nbformat.read(tmp_path / "work.ipynb", 4)
    nbformat.validate(saved)
    (cell,) = saved.cells
    assert cell.source == "y = 6 * 7\nprint('y is', y)\ny"
    assert [o.output_type for o in cell.outputs] == ["stream", "execute_result"]
    assert cell.outputs[0].text == "y is 42\n"
    assert cell.outputs[1].data["text/plain"] == "42"
    assert cell.execution_count is not None
    assert cell.metadata["larik"]["prompt"] == 1
    edited, ran, refused = results(tmp_path)
    assert "Replaced the source of cell calc" in edited
    assert ran.startswith("Ran cell calc of work.ipynb") and "y is 42" in ran
    assert "timeout must be between 1 and 3600" in refused


def test_undo_in_a_cell_of_its_own_restores_the_closed_notebooks_bytes(tmp_path: Path) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_markdown_cell("# Work", id="head"), nbformat.v4.new_code_cell("y = 1", id="calc"),
                  nbformat.v4.new_code_cell("print(y)", id="show")]
    nbformat.write(work, tmp_path / "work.ipynb")
    before = (tmp_path / "work.ipynb").read_bytes()
    script = {"responses": [
        {"content": [
            {"type": "tool_use", "name": "notebook_edit",
             "input": {"path": "work.ipynb", "edit_mode": "insert", "cell_id": "head", "new_source": "import math"}},
            {"type": "tool_use", "name": "notebook_edit",
             "input": {"path": "work.ipynb", "cell_id": "calc", "new_source": "y = 2"}},
            {"type": "tool_use", "name": "notebook_edit",
             "input": {"path": "work.ipynb", "cell_id": "show", "edit_mode": "delete"}},
        ]},
        {"content": [{"type": "text", "text": "Done."}]},
    ]}
    driver = run_turns(
        tmp_path, script,
        "%larik --yes --model scripted:script.json edit",
        # The turn did change the file (nbclient: no bridge), else this cell fails the run.
        "import pathlib\nassert b'import math' in pathlib.Path('work.ipynb').read_bytes()",
        "%larik /undo",
    )
    undo_text = json.dumps(driver.cells[3].outputs)
    assert "Undid prompt 1" in undo_text and "work.ipynb" in undo_text
    assert (tmp_path / "work.ipynb").read_bytes() == before


def test_cells_the_agent_runs_take_counts_of_their_own(tmp_path: Path) -> None:
    """The %larik cell (the count the kernel's reply gives it, which JupyterLab shows), each cell
    notebook_run ran inside its turn and the person's next cell all have counts of their own, and
    In[n] is the input of the cell shown as [n]."""
    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("y = 1", id="calc"), nbformat.v4.new_code_cell("z = 2", id="more")]
    nbformat.write(work, tmp_path / "work.ipynb")
    (tmp_path / "script.json").write_text(json.dumps({"responses": [
        {"content": [
            {"type": "tool_use", "name": "notebook_run", "input": {"path": "work.ipynb", "cell_id": "calc"}},
            {"type": "tool_use", "name": "notebook_run", "input": {"path": "work.ipynb", "cell_id": "more"}},
        ]},
        {"content": [{"type": "text", "text": "Done."}]},
    ]}))
    larik = "%larik --yes --model scripted:script.json run both"
    check = "import json; print(json.dumps({n: In[n] for n in range(len(In))}))"
    printed: list[str] = []

    def hook(msg: dict) -> None:
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])

    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        counts = [client.execute_interactive(code, timeout=120, output_hook=hook)["content"]["execution_count"]
                  for code in ("%load_ext larik_jupyter", larik, check)]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    ran = [cell.execution_count for cell in nbformat.read(tmp_path / "work.ipynb", 4).cells]
    assert ran == [3, 4]
    assert counts[1] not in ran and counts[1] == 5
    assert counts[2] == counts[1] + 1
    inputs = {int(n): source for n, source in json.loads(printed[-1]).items()}
    assert inputs[3] == "y = 1" and inputs[4] == "z = 2"
    assert inputs[counts[1]] == inputs[2] and "run both" in inputs[2]  # the %larik cell's input, as IPython parsed it
    assert inputs[counts[2]] == check
