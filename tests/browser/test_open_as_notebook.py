""""Open as notebook" in a real JupyterLab: the sidebar's button and the `openPath` hook the fork
tree widget calls, each opening the new notebook in a tab (Playwright and Debian's chromium)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page, expect

from tests.session_helpers import python_session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

OPEN_TAB_SOURCES = (
    "name => { const w = window.jupyterapp.shell.currentWidget;"
    " return !!(w && w.context && w.context.path === name && w.content.model"
    " && w.content.model.sharedModel.cells.some(c => c.getSource() === 'print(x * 21)')); }"
)


def test_sidebar_and_hook_open_the_branch_as_a_notebook(lab_server: LabServer, lab_page: Page) -> None:
    root = Path(os.path.realpath(lab_server.root))
    path = python_session(root, [("x = 2\nprint(x)", "2"), ("print(x * 21)", "42")])
    page = lab_page
    page.click('li[data-id="larik-sessions"]')
    page.click(f'.jp-larik-node[data-session-id="{path.stem}"] > .jp-larik-row')
    button = page.locator('.jp-larik-action[data-command="larik:open-as-notebook"]')
    expect(button).to_have_text("Open as notebook")
    button.click()
    page.wait_for_function(OPEN_TAB_SOURCES, arg=lab_server.path(f"{path.stem}.ipynb"), timeout=30_000)
    nb = nbformat.read(root / f"{path.stem}.ipynb", as_version=4)
    assert [c.source for c in nb.cells if c.cell_type == "code"] == ["x = 2\nprint(x)", "print(x * 21)"]

    # What the fork tree widget calls with the path the kernel wrote.
    copy = root / "copy.ipynb"
    copy.write_bytes((root / f"{path.stem}.ipynb").read_bytes())
    assert page.evaluate("p => window.larikJupyter.openPath(p)", str(copy)) is True
    page.wait_for_function(OPEN_TAB_SOURCES, arg=lab_server.path("copy.ipynb"), timeout=30_000)
    assert page.evaluate("p => window.larikJupyter.openPath(p)", "/etc/hostname") is False
