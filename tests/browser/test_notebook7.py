"""Notebook 7's own shell: the "Larik sessions" sidebar follows the open notebook's folder, and a
turn's cell edits land in the open page through the bridge as in JupyterLab."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Browser, expect

from tests.browser.conftest import ARTIFACTS
from tests.browser.test_bridge_in_lab import SOURCES, edit, notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has
from tests.session_helpers import make_session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def test_notebook7_sidebar_lists_the_open_notebooks_folder(
    notebook7_server: LabServer, lab_browser: Browser
) -> None:
    root = Path(os.path.realpath(notebook7_server.root))
    sub = root / "analysis"
    sub.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), sub / "explore.ipynb")
    at_root = make_session(root, 1).stem
    here = make_session(sub, 2).stem

    context = lab_browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(notebook7_server.url + "notebooks/analysis/explore.ipynb")
        page.wait_for_function("!!window.jupyterapp", timeout=60_000)
        page.evaluate("window.jupyterapp.restored.then(() => true)")
        page.evaluate("window.jupyterapp.commands.execute('larik:show-sessions')")
        sidebar = page.locator("#larik-sessions")
        expect(sidebar).to_be_visible()
        expect(sidebar.locator(".jp-larik-cwd")).to_have_text("/analysis", timeout=20_000)
        expect(sidebar.locator(f'.jp-larik-node[data-session-id="{here}"]')).to_be_visible()
        expect(sidebar.locator(f'.jp-larik-node[data-session-id="{at_root}"]')).to_have_count(0)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "notebook7_sidebar.png"))
    finally:
        context.close()


def test_notebook7_a_turn_reads_and_edits_cells_of_the_open_page_one_request_per_edit(
    notebook7_server: LabServer, lab_browser: Browser
) -> None:
    root = notebook7_server.root
    script = {"responses": [
        {"content": [
            {"type": "tool_use", "name": "notebook_read", "input": {}},
            edit(cell_id="target", new_source="x = 2"),
            edit(edit_mode="insert", cell_id="target", new_source="print('inserted', x)"),
        ]},
        {"content": [{"type": "text", "text": "Edited in Notebook 7."}]},
    ]}
    (root / "script.json").write_text(json.dumps(script))
    trips = "from larik_jupyter.frontends.notebook import extension\nprint(extension._magics.bridge.requests)"
    original = notebook(root, "edit.ipynb", "%larik --yes --model scripted:script.json edit cells",
                        [nbformat.v4.new_code_cell(trips, id="trips")])
    context = lab_browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(notebook7_server.url + "notebooks/edit.ipynb")
        page.wait_for_function("!!window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel", timeout=60_000)
        page.wait_for_function("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'", timeout=60_000)
        run_cell(page, 0)
        wait_idle_count(page, "load")
        run_cell(page, 4)  # the prompt
        body_has(page, "Edited in Notebook 7.")
        run_cell(page, 4)  # the trips cell now, moved down one by the insert
        wait_idle_count(page, "trips")
        sources = page.evaluate(SOURCES)
        assert sources[1] == "target|x = 2" and sources[2].endswith("|print('inserted', x)")
        # The read, then one request for each edit of a cell it read.
        counted = page.evaluate(
            "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells"
            ".find(c => c.getId() === 'trips').outputs.map(o => o.text).join('')"
        )
        assert int(counted) == 3
        assert page.locator(".jp-Dialog").count() == 0
        assert (root / "edit.ipynb").read_bytes() == original  # live edits: the file waits for a save
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "notebook7_bridge_edits.png"))
    finally:
        context.close()
