"""Undo of cells in a real JupyterLab: a scripted turn inserts, edits and deletes cells of a
notebook open in the page, the undo panel shows those cells' diffs, `/undo` puts the document
back, and saving it writes exactly the bytes the file had before the turn."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from playwright.sync_api import Page

from tests.browser.test_bridge_in_lab import edit, open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has, shot

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

# The cells of the document open as `path`, as the page holds them.
SOURCES_OF = """path => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  return panel.content.model.sharedModel.cells.map(c => c.getId() + '|' + c.getSource());
}"""

SAVE = """async path => {
  const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
  await panel.context.save();
  return panel.context.model.dirty;
}"""


def open_current(page: Page, name: str) -> None:
    """Open `name` as the current tab and wait until its kernel is idle (another tab may be open)."""
    page.evaluate(f"window.jupyterapp.commands.execute('docmanager:open', {{path: '{name}'}})")
    page.wait_for_function(
        """name => { const w = window.jupyterapp.shell.currentWidget;
                     return w?.context?.path === name && w.sessionContext.session?.kernel?.status === 'idle'; }""",
        arg=name, timeout=60_000,
    )


def work_notebook(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    ran = nbformat.v4.new_code_cell("print('ran')", id="ran", execution_count=4)
    ran.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Work\n\nSome *notes*.", id="title"),
        nbformat.v4.new_code_cell("x = 1\ny = 2", id="calc"),
        ran,
        nbformat.v4.new_code_cell("z = x + y", id="tail"),
    ]
    nbformat.write(nb, root / "work.ipynb")


def driver_notebook(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell("%larik --yes --model scripted:script.json edit work.ipynb", id="prompt"),
        nbformat.v4.new_code_cell("%larik /checkpoints", id="panel"),
        nbformat.v4.new_code_cell("%larik /undo", id="undo"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "drive.ipynb")


@pytest.mark.parametrize("how", ["magic", "panel button"])
def test_undo_restores_the_open_documents_cells_and_saving_writes_the_original_bytes(
    lab_page: Page, lab_server: LabServer, how: str
) -> None:
    root = lab_server.root
    script = {"responses": [
        {"content": [
            edit(path="work.ipynb", edit_mode="insert", cell_id="title", new_source="import math"),
            edit(path="work.ipynb", cell_id="calc", old_string="y = 2", new_string="y = 20"),
            edit(path="work.ipynb", cell_id="ran", edit_mode="delete"),
            edit(path="work.ipynb", cell_id="tail", new_source="z = math.pi"),
        ]},
        {"content": [{"type": "text", "text": "Work edited."}]},
    ]}
    (root / "script.json").write_text(json.dumps(script))
    work_notebook(root)
    driver_notebook(root)
    # The original is the file as JupyterLab writes it: opened and saved through the page.
    open_notebook(lab_page, lab_server, "work.ipynb")
    assert lab_page.evaluate(SAVE, "work.ipynb") is False
    original = (root / "work.ipynb").read_bytes()
    before = lab_page.evaluate(SOURCES_OF, "work.ipynb")

    open_current(lab_page, "drive.ipynb")
    for index, cell_id in ((0, "load"), (1, "prompt")):
        run_cell(lab_page, index)
        wait_idle_count(lab_page, cell_id)
    body_has(lab_page, "Work edited.")
    edited = lab_page.evaluate(SOURCES_OF, "work.ipynb")
    assert edited[0] == "title|# Work\n\nSome *notes*." and edited[1].endswith("|import math")
    assert edited[2:] == ["calc|x = 1\ny = 20", "tail|z = math.pi"]
    assert (root / "work.ipynb").read_bytes() == original  # live edits: the file waits for a save

    run_cell(lab_page, 2)  # the undo panel lists the cells with their diffs
    wait_idle_count(lab_page, "panel")
    body_has(lab_page, "work.ipynb · cell calc · edited")
    body_has(lab_page, "work.ipynb · cell ran · deleted")
    panel = lab_page.locator(".larik-undo").first.inner_text()
    assert "+y = 20" in panel and "-print('ran')" in panel and "+import math" in panel
    shot(lab_page, "cells_undo_panel")

    if how == "magic":
        run_cell(lab_page, 3)
        wait_idle_count(lab_page, "undo")
    else:  # the click is handled on the kernel's main thread, which must stay free for the reply
        lab_page.locator(".larik-undo-button").first.click()
    body_has(lab_page, "restored 4 cells of work.ipynb in the open notebook")
    assert lab_page.evaluate(SOURCES_OF, "work.ipynb") == before
    assert lab_page.locator(".jp-Dialog").count() == 0
    shot(lab_page, "cells_undone")

    assert lab_page.evaluate(SAVE, "work.ipynb") is False
    deadline = time.monotonic() + 10
    while (root / "work.ipynb").read_bytes() != original and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (root / "work.ipynb").read_bytes() == original
