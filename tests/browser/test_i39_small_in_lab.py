"""The smaller items of issue 39 as a person sees them in a real JupyterLab: the status bar says a
turn waits for them, a `%%larik` prompt is not coloured as Python, an expanded call parts its
code from its output, `/help` stays inside the page, the sessions browser keeps its badge off
the buttons, `/tree` hangs a `/rewind 1` branch where it forked, and the sidebar search finds
any line of a prompt. Screenshots: artifacts/i39_small_*.png."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page

from larik_jupyter.session.branch import rewind
from larik_jupyter.session.store import acquire_lock
from larik_jupyter.testing import ScriptedHTTPServer
from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has, shot
from tests.browser.test_turn_view import theme
from tests.session_helpers import make_session

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

KEY = "sk-ant-i39-small"
PROMPT = "%%larik --model anthropic:claude-sonnet-4-6\nsum the numbers and plot revenue by region\nif it is not too slow"
CODE = "for n in range(3):\n    print('row', n)"

# Syntax tokens (CodeMirror's highlight classes) in the editor of the cell whose source starts so.
TOKENS = """start => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets.find(
    c => c.model.sharedModel.getSource().startsWith(start));
  return Array.from(cell.node.querySelectorAll('.cm-content span')).filter(s => s.className).length;
}"""

# The output of the cell whose source starts so: wider than it shows?
OVERFLOW = """start => {
  const cell = window.jupyterapp.shell.currentWidget.content.widgets.find(
    c => c.model.sharedModel.getSource().startsWith(start));
  const out = cell.node.querySelector('.jp-OutputArea-output');
  const inner = Array.from(out.querySelectorAll('*')).some(e => e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0);
  return {inner, out: out.scrollWidth - out.clientWidth};
}"""

SESSIONS_ROW = """() => {
  const row = document.querySelector('.larik-sessions tr:has(.larik-badge-held)');
  const box = e => e.getBoundingClientRect();
  const badge = box(row.querySelector('.larik-badge-held'));
  const buttons = Array.from(row.querySelectorAll('.larik-row-actions button')).map(box);
  const cell = box(row.querySelector('.larik-row-actions'));
  const shown = box(row.closest('.jp-OutputArea-output'));
  return {
    overlaps: buttons.some(b => b.left < badge.right && badge.left < b.right && b.top < badge.bottom && badge.top < b.bottom),
    // each button whole, inside its cell and inside the output (none cut off at the edge)
    inside: buttons.every(b => b.left >= cell.left && b.right <= cell.right + 0.5 && b.right <= shown.right),
  };
}"""

TREE_ROWS = """() => Array.from(document.querySelectorAll('.larik-tree .larik-row')).map(r => ({
  text: r.innerText, pad: parseInt(r.style.paddingLeft), kind: r.className }))"""


def notebook(root: os.PathLike[str], base_url: str) -> None:
    setup = f"import os\nos.environ['ANTHROPIC_API_KEY'] = {KEY!r}\nos.environ['ANTHROPIC_BASE_URL'] = {base_url!r}"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell(setup, id="setup"),
        nbformat.v4.new_code_cell(PROMPT, id="prompt"),
        nbformat.v4.new_code_cell("%larik /help", id="help"),
        nbformat.v4.new_code_cell("%larik /sessions", id="sessions"),
        nbformat.v4.new_code_cell("%larik /tree", id="tree"),
        nbformat.v4.new_code_cell(CODE, id="plain"),
        nbformat.v4.new_code_cell("%larik write the totals to a file", id="stopped"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, os.path.join(root, "small.ipynb"))


def test_the_small_things_a_person_sees(lab_page: Page, lab_server: LabServer) -> None:
    root = lab_server.root
    # Sessions from before: one held open by another process (this test), and on it a branch
    # from before its prompt 3, and on that branch a rewind before prompt 1.
    source = make_session(root, 3)
    lock = acquire_lock(source)
    branch, _ = rewind(source, 3)
    start, _ = rewind(branch, 1)
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": "total = 6 * 7\nprint(total)"}}],
         "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"content": [{"type": "text", "text": "The total is 42."}], "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"content": [{"type": "tool_use", "name": "write", "input": {"path": "totals.txt", "content": "42"}}],
         "usage": {"input_tokens": 1000, "output_tokens": 100}},
        {"content": [{"type": "text", "text": "never"}]},
    ]}
    try:
        with ScriptedHTTPServer(script, api_key=KEY) as wire:
            notebook(root, wire.anthropic_base_url)
            open_notebook(lab_page, lab_server, "small.ipynb")
            for index, cell_id in ((0, "load"), (1, "setup")):
                run_cell(lab_page, index)
                wait_idle_count(lab_page, cell_id)

            # The prompt cell reads as words; the Python cell below is still coloured.
            lab_page.wait_for_function(f"() => ({TOKENS})('for n') > 0")
            assert lab_page.evaluate(TOKENS, "%%larik") == 0
            shot(lab_page, "i39_small_prompt_plain_text")

            # While the turn waits for an approval the status bar says so, whatever the kernel says.
            status = lab_page.locator(".jp-larik-turn-status")
            assert not status.is_visible()
            run_cell(lab_page, 2)
            lab_page.locator(".larik-approval button").first.wait_for()
            lab_page.wait_for_function(
                "document.querySelector('.jp-larik-turn-status')?.innerText === 'Larik: waiting for your approval'"
            )
            assert status.is_visible()
            shot(lab_page, "i39_small_status_waiting_light")
            theme(lab_page, "JupyterLab Dark")
            shot(lab_page, "i39_small_status_waiting_dark")
            theme(lab_page, "JupyterLab Light")
            lab_page.get_by_role("button", name="Allow once").click()
            body_has(lab_page, "The total is 42.")
            wait_idle_count(lab_page, "prompt")
            lab_page.wait_for_function("!document.querySelector('.jp-larik-turn-status')?.offsetParent")

            # The expanded call: its code, then its output, each under its caption.
            call = lab_page.locator(".jp-OutputArea-output details", has=lab_page.locator("summary", has_text="python: total")).first
            call.locator("summary").click()
            captions = call.locator("sub").all_inner_texts()
            assert captions[:2] == ["Code", "Output"], captions
            assert call.locator("pre").count() == 2
            call.scroll_into_view_if_needed()
            shot(lab_page, "i39_small_call_expanded")

            # /help wraps inside the output instead of running off its right edge.
            run_cell(lab_page, 3)
            wait_idle_count(lab_page, "help")
            lab_page.locator("table.larik-help").wait_for()
            assert lab_page.evaluate(OVERFLOW, "%larik /help") == {"inner": False, "out": 0}
            lab_page.locator("table.larik-help").scroll_into_view_if_needed()
            shot(lab_page, "i39_small_help")

            # The sessions browser: the "open in a kernel" badge stays off the buttons, which
            # all show whole.
            run_cell(lab_page, 4)
            wait_idle_count(lab_page, "sessions")
            lab_page.locator(".larik-sessions .larik-badge-held").wait_for()
            assert lab_page.evaluate(SESSIONS_ROW) == {"overlaps": False, "inside": True}
            # The cost in the table is the one the sidebar shows for the same session.
            table_cost = lab_page.locator(
                f'.larik-sessions tr[data-session-id="{source.stem}"] .larik-col-cost'
            ).inner_text()
            lab_page.locator(".larik-sessions").scroll_into_view_if_needed()
            shot(lab_page, "i39_small_sessions")

            # /tree: the rewind before prompt 1 of the branch is an alternative to the source's
            # prompt 1, at the prompts' depth and before them, naming the branch it came from.
            run_cell(lab_page, 5)
            wait_idle_count(lab_page, "tree")
            lab_page.locator(".larik-tree .larik-row").first.wait_for()
            rows = lab_page.evaluate(TREE_ROWS)
            texts = [r["text"] for r in rows]
            at_start = next(i for i, t in enumerate(texts) if start.stem in t)
            first_prompt = next(i for i, r in enumerate(rows) if "prompt 1" in r["text"] and "larik-row-prompt" in r["kind"])
            top = next(i for i, t in enumerate(texts) if source.stem in t)
            assert top < at_start < first_prompt, texts
            assert rows[at_start]["pad"] == rows[first_prompt]["pad"], rows
            assert f"branched at the start of {branch.stem}" in texts[at_start]
            lab_page.locator(".larik-tree").scroll_into_view_if_needed()
            shot(lab_page, "i39_small_tree")
            # Its search, too, finds a prompt by a later line (the row shows the first).
            lab_page.fill(".larik-tree .larik-search", "too slow")
            lab_page.wait_for_function(
                "document.querySelectorAll('.larik-tree .larik-row-prompt').length === 1"
            )
            found = lab_page.locator(".larik-tree .larik-row-prompt")
            assert "sum the numbers and plot revenue by region" in found.inner_text()
            assert "if it is not too slow" in (found.get_attribute("title") or "")
            lab_page.fill(".larik-tree .larik-search", "")

            # The sidebar search finds a prompt by its second line, and shows that line.
            lab_page.click('li[data-id="larik-sessions"]')
            lab_page.fill(".jp-larik-search", "TOO SLOW")
            match = lab_page.locator(".jp-larik-match").first
            match.wait_for()
            assert match.inner_text() == "prompt 1: if it is not too slow"
            assert match.locator("mark").inner_text() == "too slow"
            shot(lab_page, "i39_small_sidebar_search")
            lab_page.fill(".jp-larik-search", "")
            held_row = lab_page.locator(f'.jp-larik-node[data-session-id="{source.stem}"] > .jp-larik-row')
            held_row.wait_for()
            assert held_row.locator(".jp-larik-cost").inner_text() == f"· {table_cost}"

            # Stopped while its approval waits: the turn's end says so above the token footer,
            # and no card stays below it.
            run_cell(lab_page, 7)
            cell = lab_page.locator(".jp-CodeCell", has=lab_page.locator(".cm-content", has_text="write the totals"))
            cell.locator(".larik-approval button").first.wait_for()
            cell.locator("button.larik-stop").click()
            wait_idle_count(lab_page, "stopped")
            body_has(lab_page, "cancelled, the turn ended before an answer")
            outputs = cell.locator(".jp-OutputArea-output").all_inner_texts()
            shown = "\n".join(outputs)
            assert shown.index("cancelled, the turn ended before an answer") < shown.index("this turn 1,000 in"), outputs
            assert cell.locator(".larik-approval").count() == 0
            assert not status.is_visible()
            cell.scroll_into_view_if_needed()
            shot(lab_page, "i39_small_stopped_while_asking")
    finally:
        os.close(lock)
