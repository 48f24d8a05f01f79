"""Approval cards ask a full question, light and dark, in a real JupyterLab: a cell edit names
the cell by position, a `python` call says what its code may do to which of the user's
variables; the live row names the cell as /history does (by position, its id on hover, never
cut). Screenshots: artifacts/approval_texts_<theme>_<tool>.png."""

from __future__ import annotations

from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page

from larik_jupyter.testing import ScriptedHTTPServer
from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_cells_undo_in_lab import open_current
from tests.browser.test_notebook_live import ARTIFACTS, body_has
from tests.browser.test_turn_view import theme

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

KEY = "sk-ant-approval-texts"
CODE = "df.drop(columns=['a'], inplace=True)\nclean = df.dropna()"
EDIT_ASKS = "Replace the source of cell 2 (summary-table) of work.ipynb?"
PYTHON_ASKS = "Run this Python in your kernel? It may change df (in place: drop) and create clean."


def notebooks(lab_server: LabServer, base_url: str) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [
        nbformat.v4.new_markdown_cell("# Sales", id="title"),
        nbformat.v4.new_code_cell("total = 1", id="summary-table"),
    ]
    nbformat.write(work, lab_server.root / "work.ipynb")
    setup = (
        f"import os\nos.environ['ANTHROPIC_API_KEY'] = {KEY!r}\nos.environ['ANTHROPIC_BASE_URL'] = {base_url!r}\n"
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': [3, None]})"
    )
    drive = nbformat.v4.new_notebook()
    drive.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell(setup, id="setup"),
        nbformat.v4.new_code_cell("%larik --model anthropic:claude-sonnet-4-6 tidy df", id="prompt"),
    ]
    drive.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(drive, lab_server.root / "drive.ipynb")


def card_in_both_themes(page: Page, question: str, name: str) -> None:
    """The card asking `question` holds it in bold, above its detail, light then dark; each
    screenshotted."""
    body_has(page, question)
    card = page.locator(".larik-approval", has_text=question)
    assert card.locator("b").first.inner_text() == question
    ARTIFACTS.mkdir(exist_ok=True)
    for shown in ("JupyterLab Light", "JupyterLab Dark"):
        theme(page, shown)
        card.scroll_into_view_if_needed()
        card.screenshot(path=str(ARTIFACTS / f"approval_texts_{shown.split()[-1].lower()}_{name}.png"))
    theme(page, "JupyterLab Light")
    card.get_by_role("button", name="Allow once").click()


def test_approvals_ask_full_questions_and_rows_name_cells_by_position(lab_page: Page, lab_server: LabServer) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5}
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "notebook_edit",
                      "input": {"path": "work.ipynb", "cell_id": "summary-table", "new_source": "total = 2"}}],
         "usage": usage},
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": CODE}}], "usage": usage},
        {"content": [{"type": "text", "text": "Tidied."}], "usage": usage},
    ]}
    with ScriptedHTTPServer(script, api_key=KEY) as wire:
        notebooks(lab_server, wire.anthropic_base_url)
        open_notebook(lab_page, lab_server, "work.ipynb")
        open_current(lab_page, lab_server, "drive.ipynb")
        for index, cell_id in ((0, "load"), (1, "setup")):
            run_cell(lab_page, index)
            wait_idle_count(lab_page, cell_id)
        run_cell(lab_page, 2)
        card_in_both_themes(lab_page, EDIT_ASKS, "cell_edit")
        card_in_both_themes(lab_page, PYTHON_ASKS, "python")
        body_has(lab_page, "Tidied.")
        wait_idle_count(lab_page, "prompt")
    rows = lab_page.evaluate(
        """() => Object.fromEntries(Array.from(document.querySelectorAll('.jp-OutputArea-output summary code'))
                 .map(c => [c.innerText, c.title]))"""
    )
    assert rows.get('notebook_edit: replace cell 2 of work.ipynb ("total = 2")') == "cell id summary-table", rows
    assert "python: df.drop(columns=['a'], inplace=True)…" in rows, rows
    assert not any("summary-" in text for text in rows), rows  # the id is on hover, never cut in the row
