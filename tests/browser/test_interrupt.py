"""The first hour in a real JupyterLab: a question reaches the agent, and Jupyter's interrupt
(or Stop) ends a turn, cancelling its pending approvals. What is stopped would otherwise never end
(an approval nobody answers, a busy loop) or end much later (a 60 s sleep): each test compares with
that natural end, with a margin a loaded machine cannot eat; how fast it ends is bench/'s."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import nbformat
import pytest
from playwright.sync_api import Page, expect

from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.browser.test_bridge_in_lab import open_notebook, run_cell
from tests.browser.test_notebook_live import (
    CELL_ERRORS,
    CELLS_RAN,
    body_has,
    open_and_run,
    shot,
    write_notebook,
)
from tests.process_helpers import processes_running, unique_sleeps, wait_until

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

# Interrupt (as the toolbar button does) and time until the kernel is idle again.
INTERRUPT_AND_TIME = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  const t0 = performance.now();
  await window.jupyterapp.commands.execute('notebook:interrupt-kernel');
  while (panel.sessionContext.session.kernel.status !== 'idle') {
    await new Promise(r => setTimeout(r, 10));
  }
  return (performance.now() - t0) / 1000;
}"""

ENABLED_APPROVAL_BUTTONS = "button:has-text('Allow once'):not([disabled]), button:has-text('Deny'):not([disabled])"


def last_messages(lab_server: LabServer) -> list[object]:
    (info,) = list_sessions(lab_server.root)
    return [e.message for e in load_entries(info.path).entries if e.message is not None]


def test_a_question_ending_in_a_question_mark_reaches_the_agent(
    lab_page: Page, lab_server: LabServer
) -> None:
    script = {"responses": [{"content": [{"type": "text", "text": "It holds three regions."}]}]}
    write_notebook(lab_server.root, "question.ipynb", script, "what does sales contain?")
    open_and_run(lab_page, lab_server, "question.ipynb")
    body_has(lab_page, "It holds three regions.")
    assert not lab_page.evaluate("document.body.innerText.includes('not found')")
    (prompt, _reply) = last_messages(lab_server)
    assert prompt.prompt_text() == "what does sales contain?"  # type: ignore[attr-defined]
    shot(lab_page, "question_mark_prompt")


def test_interrupt_while_waiting_for_an_approval(lab_page: Page, lab_server: LabServer) -> None:
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "write", "input": {"path": "a.txt", "content": "x"}}]},
        {"content": [{"type": "text", "text": "never"}]},
    ]}
    write_notebook(lab_server.root, "ask.ipynb", script, "make a file")
    open_and_run(lab_page, lab_server, "ask.ipynb")
    lab_page.get_by_role("button", name="Allow once").wait_for(timeout=60_000)
    took = lab_page.evaluate(INTERRUPT_AND_TIME)
    assert took <= 30, f"the turn ended {took:.2f} s after the interrupt (unanswered, it never ends)"
    body_has(lab_page, "cancelled, the turn ended before an answer")
    expect(lab_page.locator(ENABLED_APPROVAL_BUTTONS)).to_have_count(0, timeout=10_000)  # the card goes with the turn
    assert not (lab_server.root / "a.txt").exists()
    (result,) = last_messages(lab_server)[-1].tool_results()  # type: ignore[attr-defined]
    assert result.is_error and "Interrupted" in result.content
    shot(lab_page, "interrupt_during_approval")


def test_interrupt_during_a_shell_command_kills_it(lab_page: Page, lab_server: LabServer) -> None:
    command = next(unique_sleeps(60))
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "bash", "input": {"command": command}}]},
        {"content": [{"type": "text", "text": "never"}]},
    ]}
    write_notebook(lab_server.root, "bash.ipynb", script, "--yes wait")
    open_and_run(lab_page, lab_server, "bash.ipynb")
    wait_until(lambda: processes_running(command), f"`{command}` to start", 60)
    started = time.monotonic()
    took = lab_page.evaluate(INTERRUPT_AND_TIME)
    assert took <= 30, f"the turn ended {took:.2f} s after the interrupt (the command sleeps 60 s)"
    # The group gets SIGTERM as the turn ends; the process table may show it a moment longer.
    wait_until(lambda: not processes_running(command),
               f"`{command}` to be gone within 30 s of the interrupt (it sleeps 60 s)", 30 - (time.monotonic() - started))
    body_has(lab_page, "Interrupted")
    shot(lab_page, "interrupt_during_bash")


def test_stop_cancels_pending_approvals(lab_page: Page, lab_server: LabServer) -> None:
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "write", "input": {"path": "b.txt", "content": "x"}}]},
        {"content": [{"type": "text", "text": "never"}]},
    ]}
    write_notebook(lab_server.root, "stop_ask.ipynb", script, "make a file")
    open_and_run(lab_page, lab_server, "stop_ask.ipynb")
    lab_page.get_by_role("button", name="Allow once").wait_for(timeout=60_000)
    lab_page.locator("button.larik-stop").click()
    body_has(lab_page, "cancelled, the turn ended before an answer")
    lab_server.wait_for_idle_kernel()
    # The card goes with the turn, nothing of it left behind (the view redraws as the turn ends).
    expect(lab_page.locator("button:has-text('Allow once'), .larik-approval input")).to_have_count(0, timeout=10_000)
    assert not (lab_server.root / "b.txt").exists()  # the turn is over, its kernel idle: no write came
    shot(lab_page, "stop_cancels_approval")


BUSY_LOOP = "open('looping', 'w').close()\nwhile True:\n    pass"


@pytest.mark.parametrize("tool", ["python", "notebook_run"])
def test_stop_ends_a_busy_loop_the_agent_runs(lab_page: Page, lab_server: LabServer, tool: str) -> None:
    # ipykernel reads Stop's comm message only once the loop ends (never, here): the page also
    # interrupts the kernel, which stops the loop and ends the turn.
    call = {"cell_id": "spin"} if tool == "notebook_run" else {"code": BUSY_LOOP}
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": tool, "input": call}]},
        {"content": [{"type": "text", "text": "never"}]},
    ]}
    write_notebook(lab_server.root, "loop.ipynb", script, "--yes spin")
    if tool == "notebook_run":  # the open notebook's third cell, run by the agent only
        nb = nbformat.read(lab_server.root / "loop.ipynb", as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(BUSY_LOOP, id="spin"))
        nbformat.write(nb, lab_server.root / "loop.ipynb")
        open_notebook(lab_page, lab_server, "loop.ipynb")
        run_cell(lab_page, 0)
        lab_page.wait_for_function(CELLS_RAN, arg=1)
        run_cell(lab_page, 1)
    else:
        open_and_run(lab_page, lab_server, "loop.ipynb")
    wait_until((lab_server.root / "looping").exists, "the agent's loop to start (its file `looping`)", 60)
    lab_page.locator("button.larik-stop").click()
    # The loop never ends by itself: the turn ending at all is what Stop did.
    lab_page.wait_for_function(CELLS_RAN, arg=2, timeout=60_000)
    body_has(lab_page, "Interrupted.")
    assert lab_page.evaluate(CELL_ERRORS) == []
    assert lab_page.locator("button.larik-stop:visible").count() == 0
    (result,) = last_messages(lab_server)[-1].tool_results()  # type: ignore[attr-defined]
    # The python tool's code ends "[stopped: interrupted]"; a notebook_run cell's task is cancelled.
    assert result.is_error and "interrupted" in result.content.lower(), result.content
    # The kernel is free again: a plain cell runs.
    lab_page.evaluate("""() => {
      const panel = window.jupyterapp.shell.currentWidget;
      panel.content.activeCellIndex = 1;
      window.jupyterapp.commands.execute('notebook:insert-cell-below');
      panel.content.activeCell.model.sharedModel.setSource('print(6 * 7)');
      window.jupyterapp.commands.execute('notebook:run-cell');
    }""")
    lab_page.wait_for_function(CELLS_RAN, arg=3, timeout=30_000)
    body_has(lab_page, "42")
    shot(lab_page, f"stop_ends_a_busy_loop_in_{tool}")


COLOURS = """sel => Array.from(document.querySelectorAll(sel)).map(e => getComputedStyle(e).color)"""


def test_diffs_are_coloured_alike_in_the_approval_and_the_transcript(
    lab_page: Page, lab_server: LabServer
) -> None:
    (lab_server.root / "x.py").write_text("x = 1\n")
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "edit",
                      "input": {"path": "x.py", "old_string": "x = 1", "new_string": "x = 2"}}]},
        {"content": [{"type": "text", "text": "Edited."}]},
    ]}
    write_notebook(lab_server.root, "diff.ipynb", script, "edit x")
    open_and_run(lab_page, lab_server, "diff.ipynb")
    allow = lab_page.get_by_role("button", name="Allow once")
    allow.wait_for(timeout=60_000)
    asked_add, asked_del = lab_page.evaluate(COLOURS, ".larik-diff-add")[0], lab_page.evaluate(COLOURS, ".larik-diff-del")[0]
    shot(lab_page, "diff_in_approval")
    allow.click()
    body_has(lab_page, "Edited.")
    adds, dels = lab_page.evaluate(COLOURS, ".larik-diff-add"), lab_page.evaluate(COLOURS, ".larik-diff-del")
    assert asked_add != asked_del
    assert set(adds) == {asked_add} and set(dels) == {asked_del}  # the transcript's diff matches
    red, green, _blue = (int(v) for v in asked_add.removeprefix("rgb(").rstrip(")").split(",")[:3])
    assert green > red  # green for added lines
    shot(lab_page, "diff_in_transcript")
    lab_page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    lab_page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    dark_add = lab_page.evaluate(COLOURS, ".larik-diff-add")[0]
    red, green, blue = (int(v) for v in dark_add.removeprefix("rgb(").rstrip(")").split(",")[:3])
    assert green > red and (red + green + blue) / 3 > 100, dark_add  # light green on the dark page
    lab_page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=30_000)
    shot(lab_page, "diff_in_transcript_dark")
