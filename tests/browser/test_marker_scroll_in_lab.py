"""Clicking a cell's "edited by Larik" marker opens its prompt in the sidebar and leaves the
notebook where the person is reading (issue 53, point 11): an old `/tree` output far above
selects the prompt's row inside its own list, it does not pull the page up to it.
Screenshot: artifacts/marker_click_stays.png."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page, expect

from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import ARTIFACTS
from tests.session_helpers import make_session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

# Whether the /tree output shows in the notebook's window now.
TREE_IN_SIGHT = """() => {
  const tree = document.querySelector('.larik-tree');
  const pane = window.jupyterapp.shell.currentWidget.content.node.getBoundingClientRect();
  const box = tree.getBoundingClientRect();
  return box.bottom > pane.top && box.top < pane.bottom;
}"""


def test_the_marker_opens_the_prompt_without_scrolling_to_an_old_tree(lab_page: Page, lab_server: LabServer) -> None:
    session = make_session(Path(os.path.realpath(lab_server.root)), 2)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
                nbformat.v4.new_code_cell("%larik /tree", id="tree")]
    nb.cells += [nbformat.v4.new_markdown_cell(f"## Notes {n}\n\n" + "A line of notes.\n\n" * 4) for n in range(25)]
    edited = nbformat.v4.new_code_cell("total = 3", id="edited")
    edited.metadata["larik"] = {"session": session.stem, "prompt": 2, "tool_use_id": "toolu_x"}
    nb.cells.append(edited)
    nbformat.write(nb, lab_server.root / "marker.ipynb")
    open_notebook(lab_page, lab_server, "marker.ipynb")
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 1)
    wait_idle_count(lab_page, "tree")
    lab_page.locator(".larik-tree .larik-row").first.wait_for()
    lab_page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget.content;"
                      " nb.activeCellIndex = nb.widgets.length - 1; return nb.scrollToItem(nb.widgets.length - 1, 'center'); }")
    marker = lab_page.locator(".jp-larik-marker", has_text="edited by Larik · prompt 2")
    marker.wait_for()
    lab_page.wait_for_function(f"() => !({TREE_IN_SIGHT})()")
    marker.click()
    # The sidebar shows the prompt; the tree far above selected its row without pulling the page.
    expect(lab_page.locator("#larik-sessions .jp-larik-prompt.jp-larik-focus")).to_have_count(1, timeout=30_000)
    expect(lab_page.locator(".larik-tree .larik-selected")).to_have_count(1)
    assert not lab_page.evaluate(TREE_IN_SIGHT)
    assert marker.is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    lab_page.screenshot(path=str(ARTIFACTS / "marker_click_stays.png"))
