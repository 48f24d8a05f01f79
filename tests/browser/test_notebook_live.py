"""A real JupyterLab runs `%larik` turns: streaming, approval mid-turn, Stop mid-stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.process_helpers import wait_until

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


WORDS = " ".join(f"word{i}" for i in range(60))


def write_notebook(root: Path, name: str, script: dict[str, Any], prompt: str) -> None:
    (root / "script.json").write_text(json.dumps(script))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext larik_jupyter"),
        nbformat.v4.new_code_cell(f"%larik --model scripted:script.json {prompt}"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / name)


def open_and_run(page: Page, lab: LabServer, name: str) -> None:
    page.evaluate("async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", lab.path(name))
    page.wait_for_selector(".jp-Notebook")
    lab.wait_for_idle_kernel()
    # Not awaited: the command's promise settles only when every cell has finished.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


def body_has(page: Page, text: str, timeout: float = 60_000) -> None:
    try:
        page.wait_for_function("t => document.body.innerText.includes(t)", arg=text, timeout=timeout)
    except PlaywrightTimeout:
        tail = page.evaluate("document.querySelector('.jp-Notebook')?.innerText ?? ''")[-3000:]
        raise AssertionError(f"{text!r} never appeared; the notebook ends with:\n{tail}") from None


CELLS_RAN = """n => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  let ran = 0;
  for (let i = 0; i < cells.length; i++) {
    if (cells.get(i).type === 'code' && cells.get(i).executionCount) ran++;
  }
  return ran >= n && panel.sessionContext.session?.kernel?.status === 'idle';
}"""

CELL_STATES = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = panel.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type === 'code') out.push(i + ':' + cell.executionCount + ':' + cell.sharedModel.getSource().slice(0, 30));
  }
  out.push('kernel=' + panel.sessionContext.session?.kernel?.status);
  return out;
}"""

CELL_ERRORS = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const errors = [];
  for (let i = 0; i < cells.length; i++) {
    const outputs = cells.get(i).outputs;
    for (let j = 0; outputs && j < outputs.length; j++) {
      const out = outputs.get(j);
      if (out.type === 'error') errors.push(i + ': ' + out.toJSON().ename);
    }
  }
  return errors;
}"""


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_transcript_streams_and_allow_lets_the_turn_continue(lab_page: Page, lab_server: LabServer) -> None:
    script = {
        "responses": [
            {"content": [{"type": "text", "text": WORDS},
                         {"type": "tool_use", "name": "write",
                          "input": {"path": "made.txt", "content": "approved\n"}}],
             "delay": 0.06},
            {"content": [{"type": "text", "text": "All finished."}]},
        ]
    }
    write_notebook(lab_server.root, "live.ipynb", script, "make a file")
    open_and_run(lab_page, lab_server, "live.ipynb")
    body_has(lab_page, "word5 ")
    streaming = lab_page.evaluate("document.body.innerText.includes('word59')")
    assert not streaming, "the whole reply appeared at once instead of streaming"
    shot(lab_page, "notebook_streaming")
    allow = lab_page.get_by_role("button", name="Allow once")
    allow.wait_for(timeout=60_000)
    assert not (lab_server.root / "made.txt").exists()
    shot(lab_page, "notebook_approval")
    allow.click()
    body_has(lab_page, "All finished.")
    wait_until((lab_server.root / "made.txt").exists, "the approved write of made.txt", 60)
    assert (lab_server.root / "made.txt").read_text() == "approved\n"
    shot(lab_page, "notebook_allowed")


def test_stop_mid_stream_leaves_an_interrupted_turn_and_an_idle_kernel(
    lab_page: Page, lab_server: LabServer
) -> None:
    long_text = " ".join(f"token{i}" for i in range(400))
    script = {"responses": [{"content": [{"type": "text", "text": long_text}], "delay": 0.05}]}
    write_notebook(lab_server.root, "stop.ipynb", script, "talk a lot")
    open_and_run(lab_page, lab_server, "stop.ipynb")
    body_has(lab_page, "token10 ")
    shot(lab_page, "notebook_before_stop")
    lab_page.locator("button.larik-stop").click()
    body_has(lab_page, "Interrupted")
    session = lab_server.wait_for_idle_kernel()
    assert session["kernel"]["execution_state"] == "idle"
    assert not lab_page.evaluate("document.body.innerText.includes('token399')")
    (info,) = list_sessions(lab_server.root)
    messages = [e.message for e in load_entries(info.path).entries if e.message is not None]
    assert messages[-1].role == "assistant" and messages[-1].interrupted
    assert "token10" in messages[-1].text()
    shot(lab_page, "notebook_stopped")


def test_jupyter_interrupt_button_stops_the_turn_cleanly(lab_page: Page, lab_server: LabServer) -> None:
    long_text = " ".join(f"token{i}" for i in range(400))
    script = {"responses": [{"content": [{"type": "text", "text": long_text}], "delay": 0.05}]}
    write_notebook(lab_server.root, "interrupt.ipynb", script, "talk a lot")
    open_and_run(lab_page, lab_server, "interrupt.ipynb")
    body_has(lab_page, "token10 ")
    lab_page.evaluate("() => { window.jupyterapp.commands.execute('notebook:interrupt-kernel'); }")
    body_has(lab_page, "Interrupted")
    lab_server.wait_for_idle_kernel()
    assert not lab_page.evaluate("document.body.innerText.includes('Traceback')")
    (info,) = list_sessions(lab_server.root)
    messages = [e.message for e in load_entries(info.path).entries if e.message is not None]
    assert messages[-1].role == "assistant" and messages[-1].interrupted
    shot(lab_page, "notebook_kernel_interrupt")


def test_quickstart_runs_in_jupyterlab_with_approvals(lab_page: Page, lab_server: LabServer) -> None:
    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    (lab_server.root / "quickstart.ipynb").write_bytes((notebooks / "quickstart.ipynb").read_bytes())
    open_and_run(lab_page, lab_server, "quickstart.ipynb")
    body_has(lab_page, "[scripted demo]")
    for step in range(3):  # write, edit, bash: each asks once
        button = lab_page.locator("button:has-text('Allow once'):not([disabled])").first
        button.wait_for(timeout=60_000)
        if step == 0:
            shot(lab_page, "quickstart_approval")
        button.click()
    code_cells = sum(1 for c in nbformat.read(notebooks / "quickstart.ipynb", 4).cells if c.cell_type == "code")
    try:
        lab_page.wait_for_function(CELLS_RAN, arg=code_cells, timeout=120_000)
    except PlaywrightTimeout:
        state = lab_page.evaluate(CELL_STATES)
        raise AssertionError(f"not every cell ran: {state}") from None
    assert lab_page.evaluate(CELL_ERRORS) == []
    # /rewind 1 put the first prompt into a new, unexecuted %%larik cell below it.
    states = lab_page.evaluate(CELL_STATES)
    assert any(":null:%%larik\nWrite larik_demo.txt" in state for state in states), states
    shot(lab_page, "quickstart_done")
    sessions = list_sessions(lab_server.root)
    original = [s for s in sessions if not s.fork_of][0]
    messages = [e.message for e in load_entries(original.path).entries if e.message is not None]
    results = [b for m in messages for b in m.tool_results()]
    assert results and not any(r.is_error for r in results[:3])  # the three allowed calls ran
    assert len(sessions) == 3  # the original, its fork, and the rewind branch of the fork
