"""Provenance navigation in a real JupyterLab: a cell's "edited by Larik" marker (or its context
menu) opens the prompt that changed it in the sidebar, and a prompt in the sidebar or the fork
tree jumps to the cells it changed."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page, expect

from tests.browser.test_bridge_in_lab import edit, open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has, shot

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

SELECTED = """() => { const nb = window.jupyterapp.shell.currentWidget.content;
  return nb.widgets.filter(w => nb.isSelectedOrActive(w)).map(w => w.model.id); }"""
ACTIVE = "() => window.jupyterapp.shell.currentWidget.content.activeCell.model.id"
FOCUSED = "#larik-sessions .jp-larik-prompt.jp-larik-focus"

CELLS = ["load", "setup", "a", "b", "c", "first", "second"]


def two_prompt_turns(page: Page, lab: LabServer, extra: list[str] | None = None) -> None:
    """Open a notebook whose prompt 1 edits cell a and prompt 2 cells b and c, and run it."""
    script = {
        "responses": [
            {"content": [edit(cell_id="a", new_source="a = 10")]},
            {"content": [{"type": "text", "text": "First done."}]},
            {"content": [edit(cell_id="b", new_source="b = 20"), edit(cell_id="c", new_source="c = 30")]},
            {"content": [{"type": "text", "text": "Second done."}]},
        ]
    }
    (lab.root / "script.json").write_text(json.dumps(script))
    setup = (
        "import os\nos.environ['LARIK_MODEL'] = 'scripted:script.json'\n"
        "get_ipython().magics_manager.registry['LarikMagics'].yes = True"
    )
    nb = nbformat.v4.new_notebook()
    sources = ["%load_ext larik_jupyter", setup, "a = 1", "b = 2", "c = 3",
               "%larik change a", "%larik change b and c", *(extra or [])]  # fmt: skip
    nb.cells = [nbformat.v4.new_code_cell(s, id=i) for i, s in zip([*CELLS, "extra"], sources, strict=False)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab.root / "nav.ipynb")
    open_notebook(page, lab, "nav.ipynb")
    for index, cell_id in enumerate(CELLS[:2]):
        run_cell(page, index)
        wait_idle_count(page, cell_id)
    run_cell(page, 5)
    body_has(page, "First done.")
    wait_idle_count(page, "first")
    run_cell(page, 6)
    body_has(page, "Second done.")
    wait_idle_count(page, "second")


def select_other_cell(page: Page) -> None:
    page.evaluate("() => { window.jupyterapp.shell.currentWidget.content.activeCellIndex = 0; }")


def test_marker_and_context_menu_open_the_prompt_and_the_sidebar_jumps_to_its_cells(
    lab_page: Page, lab_server: LabServer
) -> None:
    page = lab_page
    two_prompt_turns(page, lab_server)
    markers = page.locator(".jp-larik-marker")
    expect(markers).to_have_count(3)
    # Clicking cell b's marker opens the sidebar on the session, at prompt 2.
    page.locator(".jp-larik-marker", has_text="prompt 2").first.click()
    focused = page.locator(FOCUSED)
    expect(focused).to_have_count(1)
    expect(focused).to_have_attribute("data-prompt", "2")
    expect(focused).to_contain_text("change b and c")
    expect(focused).to_be_in_viewport()
    shot(page, "provenance_marker_opens_prompt")
    # Each prompt in the sidebar offers the cells it changed; jumping selects exactly those.
    prompts = page.locator("#larik-sessions .jp-larik-prompt")
    expect(prompts).to_have_count(2)
    jump_second = prompts.nth(1).get_by_role("button", name="Jump to cells")
    expect(prompts.nth(1).locator(".jp-larik-jump")).to_contain_text(f"2 cells in {lab_server.path('nav.ipynb')}")
    select_other_cell(page)
    jump_second.click()
    page.wait_for_function(f"({SELECTED})().join() === 'b,c'")
    assert page.evaluate(ACTIVE) == "b"
    prompts.nth(0).get_by_role("button", name="Jump to cells").click()
    page.wait_for_function(f"({SELECTED})().join() === 'a'")
    shot(page, "provenance_sidebar_jump")
    # The cell's context menu opens its prompt too (no marker needed: it reads the metadata).
    page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
             .find(c => c.getId() === 'a').setSource('a = 11')"""
    )
    expect(markers).to_have_count(2)
    select_other_cell(page)  # the menu acts on the cell it was opened on, active or not
    cell_a = page.locator(".jp-Notebook .jp-Cell").nth(2)
    cell_a.locator(".jp-InputArea").click(button="right")
    page.locator(".lm-Menu-item", has_text="Open prompt in Larik sidebar").click()
    expect(page.locator(FOCUSED)).to_have_attribute("data-prompt", "1")
    expect(page.locator(FOCUSED)).to_contain_text("change a")
    # A cell the agent never touched has neither command in its menu.
    page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-InputArea").click(button="right")
    expect(page.locator(".lm-Menu-item", has_text="Cut Cell").first).to_be_visible()
    expect(page.locator(".lm-Menu-item", has_text="Open prompt in Larik sidebar")).to_be_hidden()
    expect(page.locator(".lm-Menu-item", has_text="Jump to cells")).to_be_hidden()


def test_fork_tree_prompt_jumps_to_its_cells_and_follows_the_marker(
    lab_page: Page, lab_server: LabServer
) -> None:
    page = lab_page
    two_prompt_turns(page, lab_server, extra=["%larik /tree"])
    run_cell(page, 7)
    wait_idle_count(page, "extra")
    row = page.locator(".larik-tree .larik-row-prompt[data-prompt='2']")
    row.click()
    select_other_cell(page)
    page.locator(".larik-tree button.larik-jump").click()
    page.wait_for_function(f"({SELECTED})().join() === 'b,c'")
    expect(page.locator(".larik-tree .larik-status")).to_have_text("Selected the 2 cells prompt 2 changed.")
    # The marker of cell a selects prompt 1 in the tree (and opens it in the sidebar).
    page.locator(".jp-larik-marker", has_text="prompt 1").click()
    expect(page.locator(".larik-tree .larik-row-prompt.larik-selected")).to_have_attribute("data-prompt", "1")
    expect(page.locator(FOCUSED)).to_have_attribute("data-prompt", "1")
    shot(page, "provenance_tree_jump")

