"""The "Larik sessions" sidebar in Notebook 7's own shell: it follows the open notebook's folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Browser, expect

from tests.browser.conftest import ARTIFACTS
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
