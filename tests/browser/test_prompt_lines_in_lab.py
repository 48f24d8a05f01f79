"""A cell of `%larik` lines is a prompt in words: its editor shows it as plain text, not Python
(issue 53, point 11), as a `%%larik` cell's; a cell mixing Python and a `%larik` line stays Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page

from tests.browser.test_bridge_in_lab import open_notebook
from tests.browser.test_i39_small_in_lab import TOKENS
from tests.browser.test_notebook_live import ARTIFACTS

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def test_a_larik_line_is_not_highlighted_as_python(lab_page: Page, lab_server: LabServer) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [
        "%larik what drives churn here? if it is not too slow, plot it",
        "x = 1\n%larik what is x for if it is not 2",
        "for n in range(3):\n    print('row', n)",
    ]]
    nbformat.write(nb, lab_server.root / "lines.ipynb")
    open_notebook(lab_page, lab_server, "lines.ipynb")
    lab_page.wait_for_function(f"() => ({TOKENS})('for n') > 0")  # Python is highlighted here
    lab_page.wait_for_function(f"() => ({TOKENS})('x = 1') > 0")  # made false: a mixed cell stays Python
    assert lab_page.evaluate(TOKENS, "%larik what drives") == 0
    ARTIFACTS.mkdir(exist_ok=True)
    lab_page.locator(".jp-Notebook").screenshot(path=str(ARTIFACTS / "larik_line_plain_text.png"))
