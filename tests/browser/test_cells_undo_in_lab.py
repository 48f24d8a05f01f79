"""Undo of cells in a real JupyterLab: a scripted turn inserts, edits and deletes cells of a
notebook open in the page, the undo panel shows those cells' diffs, `/undo` puts the document
back, and saving it writes exactly the bytes the file had before the turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
import pytest
from playwright.sync_api import Page

from tests.browser.test_bridge_in_lab import (
    edit,
    open_notebook,
    result_texts,
    run_cell,
    wait_idle_count,
)
from tests.browser.test_notebook_live import body_has, shot
from tests.process_helpers import wait_until

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


def open_current(page: Page, lab: LabServer, name: str) -> None:
    """Open `name` as the current tab and wait until its kernel is idle (another tab may be open)."""
    name = lab.path(name)
    page.evaluate("async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", name)
    page.wait_for_function(
        """name => { const w = window.jupyterapp.shell.currentWidget;
                     return w?.context?.path === name && w.sessionContext.session?.kernel?.status === 'idle'; }""",
        arg=name, timeout=60_000,
    )


def saved_as(path: Path, original: bytes) -> None:
    """Wait for the page's save to write `original`'s bytes to `path`; else show how they differ."""
    try:
        wait_until(lambda: path.read_bytes() == original, f"the save to write {path.name}'s original bytes", 60)
    except AssertionError:
        assert path.read_text() == original.decode()
        raise


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


def run_the_turn(lab_page: Page, lab_server: LabServer, script: dict[str, Any]) -> tuple[bytes, list[str]]:
    """Open work.ipynb and save it through the page (the original is the file as JupyterLab
    writes it), then run the scripted turn from drive.ipynb; the original bytes and the page's
    cells before the turn."""
    root = lab_server.root
    (root / "script.json").write_text(json.dumps(script))
    work_notebook(root)
    driver_notebook(root)
    open_notebook(lab_page, lab_server, "work.ipynb")
    assert lab_page.evaluate(SAVE, lab_server.path("work.ipynb")) is False
    original = (root / "work.ipynb").read_bytes()
    before = lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb"))
    open_current(lab_page, lab_server, "drive.ipynb")
    for index, cell_id in ((0, "load"), (1, "prompt")):
        run_cell(lab_page, index)
        wait_idle_count(lab_page, cell_id)
    body_has(lab_page, "Work edited.")
    return original, before


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
    original, before = run_the_turn(lab_page, lab_server, script)
    edited = lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb"))
    assert edited[0] == "title|# Work\n\nSome *notes*." and edited[1].endswith("|import math")
    assert edited[2:] == ["calc|x = 1\ny = 20", "tail|z = math.pi"]
    assert (root / "work.ipynb").read_bytes() == original  # live edits: the file waits for a save

    run_cell(lab_page, 2)  # the undo panel lists the cells with their diffs
    wait_idle_count(lab_page, "panel")
    body_has(lab_page, "work.ipynb cell 2 (calc) · edited")
    body_has(lab_page, "work.ipynb cell 3 (ran) · deleted")
    panel = lab_page.locator(".larik-undo").first.inner_text()
    assert "+y = 20" in panel and "-print('ran')" in panel and "+import math" in panel
    shot(lab_page, "cells_undo_panel")

    if how == "magic":
        run_cell(lab_page, 3)
        wait_idle_count(lab_page, "undo")
    else:  # the click is handled on the kernel's main thread, which must stay free for the reply
        lab_page.locator(".larik-undo-button").first.click()
    body_has(lab_page, "restored 4 cells of work.ipynb in the open notebook")
    assert lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb")) == before
    assert lab_page.locator(".jp-Dialog").count() == 0
    shot(lab_page, "cells_undone")

    assert lab_page.evaluate(SAVE, lab_server.path("work.ipynb")) is False
    saved_as(root / "work.ipynb", original)


OUTPUT_OF = """id => {
  const cell = window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells.find(c => c.getId() === id);
  return cell.outputs.map(o => o.text ?? '').join('');
}"""


def test_an_edit_of_a_cell_already_read_is_one_request_and_a_cell_changed_since_is_kept_and_undone(
    lab_page: Page, lab_server: LabServer
) -> None:
    root = lab_server.root
    turns = {
        "read": [{"type": "tool_use", "name": "notebook_read", "input": {"path": "work.ipynb"}}],
        "first": [edit(path="work.ipynb", cell_id="tail", new_source="z = 0")],
        "second": [
            edit(path="work.ipynb", cell_id="calc", old_string="y = 2", new_string="y = 20"),
            edit(path="work.ipynb", cell_id="title", new_source="# Gone"),
        ],
    }
    for name, content in turns.items():
        done = {"content": [{"type": "text", "text": f"Turn {name} done."}]}
        (root / f"{name}.json").write_text(json.dumps({"responses": [{"content": content}, done]}))
    work_notebook(root)
    trips = "from larik_jupyter.frontends.notebook import extension\nprint(extension._magics.bridge.requests)"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load")]
    for name in turns:
        nb.cells.append(nbformat.v4.new_code_cell(f"%larik --yes --model scripted:{name}.json {name}", id=name))
        nb.cells.append(nbformat.v4.new_code_cell(trips, id=f"trips-{name}"))
    nb.cells.append(nbformat.v4.new_code_cell("%larik /undo", id="undo"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "drive.ipynb")
    open_notebook(lab_page, lab_server, "work.ipynb")
    open_current(lab_page, lab_server, "drive.ipynb")

    def run(index: int, cell_id: str) -> int:
        """Run the cell, and the next one, which prints how many bridge requests were made."""
        for i, cid in ((index, cell_id), (index + 1, f"trips-{cell_id}")):
            run_cell(lab_page, i)
            wait_idle_count(lab_page, cid)
        body_has(lab_page, f"Turn {cell_id} done.")
        return int(lab_page.evaluate(OUTPUT_OF, f"trips-{cell_id}"))

    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    read = run(1, "read")
    assert run(3, "first") - read == 1  # tail, unchanged since the read: the edit alone
    # The user types in a cell the agent read and deletes another: the kernel's copy is out of date.
    lab_page.evaluate(
        """path => { const panel = Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path);
                   const model = panel.content.model.sharedModel;
                   model.cells.find(c => c.getId() === 'calc').setSource('x = 1\\ny = 2\\n# mine');
                   model.deleteCell(model.cells.findIndex(c => c.getId() === 'title')); }""",
        lab_server.path("work.ipynb"),
    )
    before = int(lab_page.evaluate(OUTPUT_OF, "trips-first"))
    # calc: the edit refused, then the edit worked out again from the cell as the user left it;
    # title: gone from the order that refusal brought back, so read, and reported not landed.
    assert run(5, "second") - before == 3
    assert lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb")) == ["calc|x = 1\ny = 20\n# mine", "ran|print('ran')", "tail|z = 0"]
    gone = result_texts(root)[-1]
    assert gone.startswith("Not landed:") and "has no cell" in gone and "title" in gone

    run_cell(lab_page, 7)
    wait_idle_count(lab_page, "undo")
    body_has(lab_page, "restored 1 cell of work.ipynb in the open notebook")
    # Undo puts back what the user had typed before the turn, not the agent's out-of-date copy,
    # where it stood then, and leaves the cell the user deleted deleted.
    assert lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb")) == ["calc|x = 1\ny = 2\n# mine", "ran|print('ran')", "tail|z = 0"]


def test_undo_of_an_insert_a_delete_and_a_rewrite_of_cell_0_restores_the_order(
    lab_page: Page, lab_server: LabServer
) -> None:
    """Insert after cell 0, delete cell 2, rewrite cell 0: undo puts every cell back where it
    stood, in the document and, once saved, in the file (the page once put cell 2 last)."""
    root = lab_server.root
    script = {"responses": [
        {"content": [edit(path="work.ipynb", edit_mode="insert", cell_id="title", new_source="import math")]},
        {"content": [edit(path="work.ipynb", cell_id="ran", edit_mode="delete")]},
        {"content": [edit(path="work.ipynb", cell_id="title", new_source="# Reworked")]},
        {"content": [{"type": "text", "text": "Work edited."}]},
    ]}
    original, before = run_the_turn(lab_page, lab_server, script)
    edited = [s.split("|", 1)[1] for s in lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb"))]
    assert edited == ["# Reworked", "import math", "x = 1\ny = 2", "z = x + y"]
    run_cell(lab_page, 3)
    wait_idle_count(lab_page, "undo")
    body_has(lab_page, "restored 3 cells of work.ipynb in the open notebook")
    assert lab_page.evaluate(SOURCES_OF, lab_server.path("work.ipynb")) == before
    assert lab_page.evaluate(SAVE, lab_server.path("work.ipynb")) is False
    saved_as(root / "work.ipynb", original)
