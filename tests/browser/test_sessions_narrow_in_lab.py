"""`%larik /sessions` with the Larik sidebar open (issue 53, point 11): the notebook is narrower,
and each row's buttons stay in sight, inside the output, not scrolled off its right edge.
Screenshot: artifacts/sessions_with_sidebar.png."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page

from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import ARTIFACTS
from tests.session_helpers import make_session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

# Each row's buttons against the output's visible box (what the person sees without scrolling).
BUTTONS_IN_SIGHT = """() => {
  const out = document.querySelector('.larik-sessions').closest('.jp-OutputArea-output');
  const shown = out.getBoundingClientRect();
  const buttons = Array.from(document.querySelectorAll('.larik-sessions .larik-row-actions button'));
  return {count: buttons.length, seen: buttons.filter(b => {
    const r = b.getBoundingClientRect();
    return r.left >= shown.left && r.right <= shown.right + 0.5 && r.width > 0;
  }).length, wider: out.scrollWidth > out.clientWidth};
}"""


def test_the_sessions_buttons_stay_in_sight_with_the_sidebar_open(lab_page: Page, lab_server: LabServer) -> None:
    root = Path(os.path.realpath(lab_server.root))
    for _ in range(2):
        make_session(root, 2)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
                nbformat.v4.new_code_cell("%larik /sessions", id="sessions")]
    nbformat.write(nb, lab_server.root / "narrow.ipynb")
    lab_page.set_viewport_size({"width": 1024, "height": 768})  # a laptop's screen
    open_notebook(lab_page, lab_server, "narrow.ipynb")
    lab_page.click('li[data-id="larik-sessions"]')  # the sidebar takes its share of the width
    run_cell(lab_page, 0)
    wait_idle_count(lab_page, "load")
    run_cell(lab_page, 1)
    wait_idle_count(lab_page, "sessions")
    lab_page.locator(".larik-sessions .larik-resume").first.wait_for()
    found = lab_page.evaluate(BUTTONS_IN_SIGHT)
    assert found["count"] == 8 and found["seen"] == found["count"], found
    ARTIFACTS.mkdir(exist_ok=True)
    lab_page.screenshot(path=str(ARTIFACTS / "sessions_with_sidebar.png"))
