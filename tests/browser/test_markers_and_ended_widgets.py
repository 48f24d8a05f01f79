"""In a real JupyterLab: the "edited by Larik" markers come back after a page reload, from the
cells' saved `larik` metadata, in the same place on a markdown and a code cell; and the undo
panel and the fork tree shown before a kernel restart say they belong to an ended kernel and run
their command again in the new one. Screenshots: artifacts/markers_*.png, ended_*.png."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page

from tests.browser.test_bridge_in_lab import edit, open_notebook, run_cell, wait_idle_count
from tests.browser.test_cells_undo_in_lab import open_current
from tests.browser.test_notebook_live import body_has, shot

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

# Each marked cell of the current notebook: its id, the marker's text, and where the marker sits
# relative to its cell (first child? offsets from the cell's top-left corner).
MARKERS = """() => Array.from(window.jupyterapp.shell.currentWidget.content.widgets)
  .filter(w => w.node.querySelector(':scope > .jp-larik-marker'))
  .map(w => { const m = w.node.querySelector(':scope > .jp-larik-marker');
              const c = w.node.getBoundingClientRect(), r = m.getBoundingClientRect();
              return {id: w.model.id, type: w.model.type, text: m.innerText, first: w.node.firstElementChild === m,
                      top: Math.round(r.top - c.top), left: Math.round(r.left - c.left)}; })"""

DRIVE = ["load", "setup", "cells", "other", "undo", "tree"]


def notebooks(lab: LabServer) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [
        nbformat.v4.new_markdown_cell("# Sales", id="title"),
        nbformat.v4.new_code_cell("x = 1", id="calc"),
        nbformat.v4.new_code_cell("y = 2", id="other"),
    ]
    work.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(work, lab.root / "work.ipynb")
    script = {"responses": [
        {"content": [edit(path="work.ipynb", cell_id="title", new_source="# Sales by region"),
                     edit(path="work.ipynb", cell_id="calc", new_source="x = 10")]},
        {"content": [{"type": "text", "text": "Cells changed."}]},
        {"content": [edit(path="work.ipynb", cell_id="other", new_source="y = 3")]},
        {"content": [{"type": "text", "text": "Other changed."}]},
    ]}  # fmt: skip
    (lab.root / "script.json").write_text(json.dumps(script))
    setup = (
        "import os\nos.environ['LARIK_MODEL'] = 'scripted:script.json'\n"
        "get_ipython().magics_manager.registry['LarikMagics'].yes = True"
    )
    drive = nbformat.v4.new_notebook()
    sources = ["%load_ext larik_jupyter", setup, "%larik retitle and rework work.ipynb", "%larik change the other cell",
               "%larik /undo", "%larik /tree"]  # fmt: skip
    drive.cells = [nbformat.v4.new_code_cell(s, id=i) for i, s in zip(DRIVE, sources, strict=True)]
    drive.metadata["kernelspec"] = work.metadata["kernelspec"]
    nbformat.write(drive, lab.root / "drive.ipynb")


def current_kernel_idle(page: Page) -> None:
    page.wait_for_function(
        "window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'", timeout=60_000
    )


def assert_markers_alike(page: Page) -> None:
    marked = page.evaluate(MARKERS)
    assert [(m["id"], m["type"], m["text"]) for m in marked] == [
        ("title", "markdown", "edited by Larik · prompt 1"),
        ("calc", "code", "edited by Larik · prompt 1"),
    ]
    markdown, code = marked
    assert markdown["first"] and code["first"]  # above the cell's content, in both kinds of cell
    assert (markdown["top"], markdown["left"]) == (code["top"], code["left"])


def test_markers_come_back_after_a_reload_and_old_panels_say_their_kernel_ended(
    lab_page: Page, lab_server: LabServer
) -> None:
    notebooks(lab_server)
    open_notebook(lab_page, lab_server, "work.ipynb")
    open_current(lab_page, lab_server, "drive.ipynb")
    for index, cell_id in enumerate(DRIVE):
        run_cell(lab_page, index)
        wait_idle_count(lab_page, cell_id)
    body_has(lab_page, "Undid prompt 2")
    sources = lab_page.evaluate(
        """path => Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.context?.path === path)
                 .content.model.sharedModel.cells.map(c => c.getSource())""",
        lab_server.path("work.ipynb"),
    )
    assert sources == ["# Sales by region", "x = 10", "y = 2"]

    # "Jump to cells" of the undone prompt, from the tree: said once, in place (no toast too).
    lab_page.locator(".larik-tree .larik-row-prompt[data-prompt='2']").click()
    lab_page.locator(".larik-tree button.larik-jump").click()
    status = lab_page.locator(".larik-tree .larik-status")
    status.wait_for()
    lab_page.wait_for_function("document.querySelector('.larik-tree .larik-status').innerText.includes('undone')")
    assert status.inner_text().count("undone") == 1
    assert re.search(r"Prompt 2 of \S+ changed cells, and those changes were undone\.$", status.inner_text())
    lab_page.wait_for_timeout(1000)
    assert lab_page.locator(".Toastify__toast").count() == 0

    # The undo panel and the tree of the old kernel: after a restart they say so and offer to
    # run their command again, instead of buttons that only log "Cannot send".
    lab_page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    current_kernel_idle(lab_page)
    lab_page.wait_for_function("document.querySelectorAll('.larik-ended').length === 2", timeout=30_000)
    ended = lab_page.evaluate(
        """() => Array.from(document.querySelectorAll('.larik-ended')).map(e => ({
             text: e.innerText,
             enabled: Array.from(e.parentElement.querySelectorAll('button')).filter(b => !b.disabled).map(b => b.innerText)}))"""
    )
    for banner, command in zip(ended, ["%larik /checkpoints", "%larik /tree"], strict=True):
        assert "This belongs to a kernel that has ended (restarted or shut down)" in banner["text"]
        assert banner["enabled"] == [f"Run {command} again"], banner  # every other control is off
    shot(lab_page, "ended_undo_panel_and_tree_light")
    run_cell(lab_page, 0)  # the new kernel loads the extension, as a user would
    wait_idle_count(lab_page, "load")
    lab_page.get_by_role("button", name="Run %larik /tree again").click()
    lab_page.wait_for_function(
        """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
                 .map(c => c.getSource()).filter(s => s === '%larik /tree').length === 2""",
        timeout=30_000,
    )
    lab_page.wait_for_function("document.querySelectorAll('.larik-tree').length >= 2", timeout=30_000)
    body_has(lab_page, "retitle and rework work.ipynb")  # the new tree, from the new kernel
    shot(lab_page, "ended_tree_ran_again_light")

    # The markers: saved with the cells' `larik` metadata, back after the page reloads, in
    # the same place on the markdown cell as on the code cell.
    open_current(lab_page, lab_server, "work.ipynb")
    assert_markers_alike(lab_page)
    lab_page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    lab_page.wait_for_function(
        "!window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000
    )
    saved = nbformat.read(lab_server.root / "work.ipynb", as_version=4)
    assert [c.metadata.get("larik", {}).get("prompt") for c in saved.cells] == [1, 1, None]

    lab_page.on("dialog", lambda dialog: dialog.accept())
    lab_page.reload()
    lab_page.wait_for_function("!!window.jupyterapp", timeout=60_000)
    lab_page.evaluate("window.jupyterapp.restored.then(() => true)")
    open_current(lab_page, lab_server, "work.ipynb")
    lab_page.wait_for_function(
        "window.jupyterapp.shell.currentWidget.content.node.querySelectorAll('.jp-larik-marker').length === 2",
        timeout=30_000,
    )
    assert_markers_alike(lab_page)
    shot(lab_page, "markers_after_reload_light")
    lab_page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    lab_page.wait_for_function("document.body.dataset.jpThemeLight === 'false'")
    assert_markers_alike(lab_page)
    shot(lab_page, "markers_after_reload_dark")
