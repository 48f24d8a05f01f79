"""The turn a person reads, in a real JupyterLab against a local Anthropic-protocol server, light
then dark: tool calls in words, approvals in the future tense with the cell's coloured diff, the
decision on its call's row and no button left behind, a figure under its call, the cost line as
money (never typeset as a formula). Screenshots: artifacts/turn_view_<theme>_*.png."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page

from larik_jupyter.testing import ScriptedHTTPServer
from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_cells_undo_in_lab import open_current
from tests.browser.test_notebook_live import body_has, shot

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

KEY = "sk-ant-turn-view"
USAGE = {"input_tokens": 1000, "output_tokens": 100}
PLOT = "import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2))\nplt.plot([1, 3, 2])\nprint('drawn')"

# The prompt cell's outputs: the transcript's text, how many images it holds, and the outputs
# after it (approval area, controls, anything displayed apart from the transcript).
PROMPT_OUTPUTS = """() => {
  const cell = Array.from(document.querySelectorAll('.jp-Cell')).find(c => c.innerText.includes('%larik --model'));
  const outputs = Array.from(cell.querySelectorAll('.jp-OutputArea-output'));
  return {
    transcript: outputs[0].innerText,
    images: outputs[0].querySelectorAll('img').length,
    rowThenImage: !!outputs[0].querySelector('details + p img, details + img'),
    laterImages: outputs.slice(1).reduce((n, o) => n + o.querySelectorAll('img').length, 0),
    buttons: Array.from(cell.querySelectorAll('.larik-approval button, .larik-approval input')).length,
    widgets: cell.querySelectorAll('.jupyter-widgets').length,
    disconnected: cell.querySelectorAll('.jupyter-widgets-disconnected').length,
    cost: outputs[0].querySelector('sub.mathjax_ignore')?.innerText ?? null,
    formulas: cell.querySelectorAll('mjx-container, .MathJax').length,
  };
}"""


def theme(page: Page, name: str) -> None:
    page.evaluate("name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", name)
    light = "true" if name == "JupyterLab Light" else "false"
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'")
    page.wait_for_function("!document.querySelector('#jupyterlab-splash')")  # the change's splash is gone


def assert_diff_coloured(page: Page) -> None:
    """The approval's added line is green and its removed line red, in the theme shown."""
    colours = page.evaluate(
        """() => ['.larik-diff-add', '.larik-diff-del'].map(s => getComputedStyle(
             document.querySelector('.larik-approval ' + s)).color.match(/[0-9.]+/g).map(Number))"""
    )
    (ar, ag, _), (dr, dg, _) = (c[:3] for c in colours)
    assert ag > ar and dr > dg, colours


def notebooks(root: Path, base_url: str) -> None:
    work = nbformat.v4.new_notebook()
    work.cells = [
        nbformat.v4.new_markdown_cell("# Sales", id="title"),
        nbformat.v4.new_code_cell("x = 1\ny = 2", id="calc"),
        nbformat.v4.new_code_cell("z = x + y", id="tail"),
    ]
    nbformat.write(work, root / "work.ipynb")
    setup = f"import os\nos.environ['ANTHROPIC_API_KEY'] = {KEY!r}\nos.environ['ANTHROPIC_BASE_URL'] = {base_url!r}"
    drive = nbformat.v4.new_notebook()
    drive.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell(setup, id="setup"),
        nbformat.v4.new_code_cell("%larik --model anthropic:claude-sonnet-4-6 rework work.ipynb", id="prompt"),
        nbformat.v4.new_code_cell("%larik /model anthropic:claude-opus-4-1", id="switch"),
        nbformat.v4.new_code_cell("%larik /checkpoints", id="panel"),
    ]
    drive.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(drive, root / "drive.ipynb")


def test_a_turn_reads_in_words_asks_before_it_acts_and_keeps_outputs_with_their_calls(
    lab_page: Page, lab_server: LabServer
) -> None:
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "notebook_read", "input": {"path": "work.ipynb", "limit": 20}}],
         "usage": USAGE},
        {"content": [{"type": "tool_use", "name": "notebook_edit",
                      "input": {"path": "work.ipynb", "cell_id": "calc", "new_source": "x = 1\ny = 20"}}],
         "usage": USAGE},
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": PLOT}}], "usage": USAGE},
        {"content": [{"type": "text", "text": "All done."}], "usage": USAGE},
    ]}
    with ScriptedHTTPServer(script, api_key=KEY) as wire:
        notebooks(lab_server.root, wire.anthropic_base_url)
        open_notebook(lab_page, lab_server, "work.ipynb")
        open_current(lab_page, lab_server, "drive.ipynb")
        for index, cell_id in ((0, "load"), (1, "setup")):
            run_cell(lab_page, index)
            wait_idle_count(lab_page, cell_id)
        run_cell(lab_page, 2)

        # The approval asks in the future tense, names the cell as it stands, shows its diff in colour.
        body_has(lab_page, "Replace the source of cell 2 (calc) of work.ipynb?")
        card = lab_page.locator(".larik-approval").first
        assert card.locator(".larik-diff-add").inner_text() == "+y = 20"
        assert "No newline" not in card.inner_text()
        text = lab_page.evaluate(PROMPT_OUTPUTS)["transcript"]
        assert "notebook_read: cells 1–20 of work.ipynb" in text
        assert text.count("Replace the source") == 0 and "approval" not in text  # the card asks, once
        shot(lab_page, "turn_view_light_approval")
        assert_diff_coloured(lab_page)
        theme(lab_page, "JupyterLab Dark")
        assert_diff_coloured(lab_page)
        shot(lab_page, "turn_view_dark_approval")
        theme(lab_page, "JupyterLab Light")
        lab_page.get_by_role("button", name="Allow once").click()

        body_has(lab_page, "Run this Python in your kernel? It may ")
        lab_page.get_by_role("button", name="Allow once").click()
        body_has(lab_page, "All done.")
        wait_idle_count(lab_page, "prompt")
        seen = lab_page.evaluate(PROMPT_OUTPUTS)

    text = seen["transcript"]
    assert 'notebook_edit: replace cell 2 of work.ipynb ("x = 1…") · allowed once' in text
    assert "python: import matplotlib.pyplot as plt… · allowed once" in text
    hovers = lab_page.evaluate(
        """() => Object.fromEntries(Array.from(document.querySelectorAll('.jp-OutputArea-output summary code[title]'))
                 .map(c => [c.innerText, c.title]))"""
    )
    assert hovers == {'notebook_edit: replace cell 2 of work.ipynb ("x = 1…")': "cell id calc"}  # the id on hover
    assert seen["buttons"] == 0  # no approval button or reason box left behind
    assert seen["widgets"] == 0  # nor the approval area or Stop control, as blank widgets
    assert seen["images"] == 1 and seen["rowThenImage"] and seen["laterImages"] == 0  # the figure, under its call
    # Money as money: four priced requests of 1,000 in and 100 out tokens at $3/$15 per million.
    cost = seen["cost"]
    assert cost is not None and seen["formulas"] == 0
    # $0.018 as every view labels a cost of a cent or more: to the cent (llm/pricing.cost_label).
    assert re.fullmatch(r"this turn 4,000 in · 400 out tokens, \$0\.02 · session 4,400 tokens, \$0\.02", cost), cost
    shot(lab_page, "turn_view_light_done")

    theme(lab_page, "JupyterLab Dark")
    again = lab_page.evaluate(PROMPT_OUTPUTS)
    assert again["cost"] == cost and again["formulas"] == 0 and again["buttons"] == 0
    shot(lab_page, "turn_view_dark_done")

    run_cell(lab_page, 3)  # /model: the sidebar shows the session's model as it is now
    wait_idle_count(lab_page, "switch")
    # The sidebar: the session this kernel holds is marked, with its current model; a search
    # says which prompt matched; Export says where the file went.
    lab_page.click('li[data-id="larik-sessions"]')
    row = lab_page.locator(".jp-larik-node > .jp-larik-row").first
    row.locator(".jp-larik-held").wait_for(timeout=30_000)
    assert row.locator(".jp-larik-held").inner_text() == "open in a kernel"
    lab_page.wait_for_function(
        "document.querySelector('.jp-larik-node > .jp-larik-row .jp-larik-model')?.innerText.trim() === '· anthropic:claude-opus-4-1'",
        timeout=30_000,
    )
    lab_page.fill(".jp-larik-search", "REWORK")
    match = lab_page.locator(".jp-larik-match").first
    match.wait_for()
    assert match.inner_text() == "prompt 1: rework work.ipynb" and match.locator("mark").inner_text() == "rework"
    row.click()
    # The transcript names the tool calls in the notebook's words, cells by position, ids on hover.
    calls = lab_page.locator("#larik-sessions details.jp-larik-tool > summary")
    calls.nth(2).wait_for()
    assert calls.all_inner_texts() == [
        "notebook_read: cells 1–20 of work.ipynb",
        'notebook_edit: replace cell 2 of work.ipynb ("x = 1…")',
        "python: import matplotlib.pyplot as plt…",
    ]
    assert calls.nth(1).get_attribute("title") == "cell id calc"
    lab_page.click('.jp-larik-action[data-command="larik:export-session"]')
    body_has(lab_page, ".md to your browser's downloads folder.")
    shot(lab_page, "turn_view_dark_sidebar")
    lab_page.fill(".jp-larik-search", "")

    # A panel from before a kernel restart says it belongs to an ended kernel and runs its
    # command again below, in the new kernel, instead of buttons that only log "Cannot send".
    run_cell(lab_page, 4)
    wait_idle_count(lab_page, "panel")
    lab_page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab_page.wait_for_function(
        "window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'", timeout=60_000
    )
    body_has(lab_page, "This belongs to a kernel that has ended (restarted or shut down)")
    # The ended turn's cell shows no widget the restart marks as disconnected.
    assert lab_page.evaluate(PROMPT_OUTPUTS)["disconnected"] == 0
    assert lab_page.locator(".larik-undo-button").first.is_disabled()
    again = lab_page.get_by_role("button", name="Run %larik /checkpoints again")
    shot(lab_page, "turn_view_dark_ended_panel")
    open_current(lab_page, lab_server, "drive.ipynb")
    run_cell(lab_page, 0)  # the new kernel loads the extension, as a user would
    lab_page.wait_for_function(
        "window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'", timeout=60_000
    )
    again.click()
    lab_page.wait_for_function(
        """() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells
                 .map(c => c.getSource()).filter(s => s === '%larik /checkpoints').length === 2""",
        timeout=30_000,
    )
    body_has(lab_page, "No session is open in this kernel yet")  # it ran in the new kernel
    lab_page.locator(".jp-Notebook .jp-Cell").last.scroll_into_view_if_needed()
    shot(lab_page, "turn_view_dark_ran_again")
    saved = json.loads((lab_server.root / "work.ipynb").read_text())
    assert [c["id"] for c in saved["cells"]] == ["title", "calc", "tail"]
