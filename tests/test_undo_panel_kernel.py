"""The undo panel and /undo in a real kernel under nbclient (issue 39, point 9): a variable a
`notebook_run` cell made is removed by undo, which says so; after a kernel restart a turn whose
only changes were variables says they went with the kernel and offers no Undo, while the turn
below it keeps its Undo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from larik_jupyter.agent.undo_list import WENT_WITH_THE_KERNEL
from tests.agent_helpers import done, scripted, tool
from tests.process_helpers import wait_until
from tests.session_helpers import released
from tests.test_notebooks import outputs_text

UNDO_PANEL = "UndoPanel"


def panel_states(nb: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """The undo panels' synced state as nbclient stored it, in the order they were made."""
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"].values()
    return [s["state"] for s in states if "panel" in s["state"] and "retry" in s["state"]]


@pytest.mark.timeout(240)
def test_a_notebook_run_variable_is_undone_and_a_restart_leaves_no_undo_for_lost_variables(
    project: Path, tmp_path: Path
) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [nbformat.v4.new_code_cell("made = 42\nprint('ran')", id="calc")]
    nbformat.write(work, project / "work.ipynb")
    (project / "notes.txt").write_text("before\n")
    model = scripted(
        tmp_path,
        [tool("notebook_run", path="work.ipynb", cell_id="calc")], done("Ran it."),
        [tool("write", path="notes.txt", content="after\n")], done("Wrote."),
        [tool("python", code="x = 5")], done("Set x."),
    )
    nb = new_notebook(cells=[new_code_cell(source) for source in [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes run calc",
        "print('made' in globals())",
        "%larik /undo",
        "print('made' in globals())",
        "%larik --yes write notes",
        "%larik --yes set x",
        "%load_ext larik_jupyter",
        "%larik /resume --last",
        "%larik /checkpoints",
    ]])
    nbc = NotebookClient(
        nb, kernel_name="python3", timeout=120, store_widget_state=True,
        resources={"metadata": {"path": str(project)}},
    )
    with nbc.setup_kernel():
        for index in range(7):
            nbc.execute_cell(nb.cells[index], index)
        assert nbc.km is not None and nbc.kc is not None
        run_sync(nbc.km.restart_kernel)()
        run_sync(nbc.kc.wait_for_ready)(timeout=60)
        wait_until(lambda: released(project), "the restarted kernel's old process to release its session")
        for index in range(7, len(nb.cells)):
            nbc.execute_cell(nb.cells[index], index)
        nbc.set_widgets_metadata()
    texts = [outputs_text(cell) for cell in nb.cells]
    assert texts[2].strip() == "True"
    assert "removed: made" in texts[3]  # undo names the variable it took away
    assert texts[4].strip() == "False"

    panel = texts[9]
    assert WENT_WITH_THE_KERNEL in panel  # the variables-only turn, after the restart
    state = panel_states(nb)[-1]["panel"]
    lost, files = state["turns"]
    assert lost["gone"] and not lost["undoable"] and lost["note"] == WENT_WITH_THE_KERNEL
    assert [v["text"] for v in lost["variables"]] == ["x: created int: gone with the kernel (it restarted since that turn)"]
    # The turn below keeps its Undo, which passes over the lost turn (left listed as not undoable).
    assert files["undoable"] and not files["gone"] and files["why"] is None
    assert files["undo"] == {"type": "undo"}
