"""The quickstart in a real JupyterLab, light and dark: every output, each approval and the
sidebar screenshotted into tests/browser/artifacts/quickstart_<theme>_*.png, their visible
text checked, and the fork tree's current row and the sidebar's selected row readable (text
on background contrast of at least 4.5, WCAG AA; a diff line's colour at least 3)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.test_notebook_live import (
    ARTIFACTS,
    CELL_ERRORS,
    CELL_STATES,
    CELLS_RAN,
    body_has,
    open_and_run,
)

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"

# The colour an element's text and background really show: each computed colour (whatever
# syntax the browser computes, color-mix included) is normalised through a canvas, and a
# translucent background is laid over its ancestors' until an opaque one.
SHOWN_COLOURS = """el => {
  const ctx = document.createElement('canvas').getContext('2d');
  const rgba = css => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#000';
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3]));
  const layers = [];
  for (let node = el; node; node = node.parentElement) {
    const layer = rgba(getComputedStyle(node).backgroundColor);
    if (layer[3] > 0) layers.push(layer);
    if (layer[3] === 1) break;
  }
  let background = [255, 255, 255];
  for (const layer of layers.reverse()) background = over(layer, background);
  const text = over(rgba(getComputedStyle(el).color), background);
  return { text, background };
}"""


def _luminance(rgb: list[float]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: list[float], b: list[float]) -> float:
    """The WCAG contrast ratio of two sRGB colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _cell(page: Page, source_start: str) -> int:
    index: int = page.evaluate(
        """start => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
             .findIndex(c => c.cell_type === 'code' && c.getSource().startsWith(start))""",
        source_start,
    )
    assert index >= 0, f"no code cell starts with {source_start!r}"
    return index


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_quickstart_screens(lab_page: Page, lab_server: LabServer, theme: str) -> None:
    page = lab_page
    if theme == "dark":
        page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
        page.wait_for_function("document.body.dataset.jpThemeLight === 'false'")
    (lab_server.root / "quickstart.ipynb").write_bytes(NOTEBOOK.read_bytes())
    open_and_run(page, lab_server, "quickstart.ipynb")
    body_has(page, "[scripted demo]")
    ARTIFACTS.mkdir(exist_ok=True)
    asks = {"write": "Create larik_demo.txt with this content?", "edit": "Make this edit to larik_demo.txt?",
            "bash": "Run this shell command?"}
    for tool, question in asks.items():  # the first prompt's calls each ask once, in full
        button = page.locator("button:has-text('Allow once'):not([disabled])").first
        button.wait_for(timeout=60_000)
        # An answered card goes away (its decision moves to its call's row): the card asking now
        # is the one holding the enabled button (a screenshot scrolls it into view).
        card = page.locator(".larik-approval", has=button)
        expect(card).to_contain_text(question)
        cell = page.locator(".jp-Cell", has=card)
        cell.screenshot(path=str(ARTIFACTS / f"quickstart_{theme}_asks_{tool}.png"))
        button.click()
    code_cells = sum(1 for c in nbformat.read(NOTEBOOK, 4).cells if c.cell_type == "code")
    try:
        page.wait_for_function(CELLS_RAN, arg=code_cells, timeout=120_000)
    except PlaywrightTimeout:
        raise AssertionError(f"not every cell ran: {page.evaluate(CELL_STATES)}") from None
    assert page.evaluate(CELL_ERRORS) == []

    cells = page.locator(".jp-Notebook .jp-Cell")
    shown: dict[int, str] = {}
    for index in range(cells.count()):
        output = cells.nth(index).locator(".jp-OutputArea").first
        if not output.count() or not output.inner_text().strip():
            continue
        output.scroll_into_view_if_needed()
        output.screenshot(path=str(ARTIFACTS / f"quickstart_{theme}_{index:02d}.png"))
        shown[index] = output.inner_text()
    assert len(shown) >= 8, sorted(shown)

    first = shown[_cell(page, "%larik Write")]
    assert "[scripted demo]" in first and "larik_demo.txt" in first and "Allow once" not in first
    # The kernel is by now on the rewind branch: the earlier panel keeps what it showed and says
    # it is out of date.
    assert "Out of date: this list shows session " in shown[_cell(page, "%larik /checkpoints")]
    undone = shown[_cell(page, "%larik /undo")]
    assert "Undid prompt 2" in undone and "restored larik_demo.txt" in undone
    assert "Write larik_demo.txt" in shown[_cell(page, "import larik_jupyter")]  # the turns, as data
    tree = shown[_cell(page, "%larik /tree")]
    assert "branched after prompt" in tree and "current" in tree and "message" not in tree
    assert "/rewind" in shown[_cell(page, "%larik /help")]

    row = page.locator(".larik-tree .larik-row.larik-current").first
    row.scroll_into_view_if_needed()
    colours = page.evaluate(SHOWN_COLOURS, row.locator(".larik-id").element_handle())
    ratio = contrast(colours["text"], colours["background"])
    assert ratio >= 4.5, f"the current tree row's text is hard to read on {theme}: {colours}, ratio {ratio:.2f}"
    page.screenshot(path=str(ARTIFACTS / f"quickstart_{theme}_page.png"))

    # The sidebar on the same theme: the selected session's row and its undoable turn's diff.
    page.click('li[data-id="larik-sessions"]')
    sidebar = page.locator("#larik-sessions")
    root_row = sidebar.locator(".jp-larik-tree > .jp-larik-node > .jp-larik-row").first
    root_row.click()
    expect(root_row.locator(".jp-larik-meta")).to_contain_text("2 prompts")
    turn = sidebar.locator(".jp-larik-turn").first
    expect(turn.locator("summary")).to_have_text("Prompt 1: larik_demo.txt", timeout=20_000)
    turn.locator("summary").click()
    added = turn.locator(".larik-diff-add").first
    expect(added).to_be_visible()
    sidebar.screenshot(path=str(ARTIFACTS / f"quickstart_{theme}_sidebar.png"))
    for element, floor in ((root_row.locator(".jp-larik-prompt-text"), 4.5), (added, 3.0)):
        colours = page.evaluate(SHOWN_COLOURS, element.element_handle())
        ratio = contrast(colours["text"], colours["background"])
        assert ratio >= floor, f"sidebar text hard to read on {theme}: {colours}, ratio {ratio:.2f}"
