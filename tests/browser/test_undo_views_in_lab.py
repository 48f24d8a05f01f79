"""The undo panel and the sidebar's "Undoable turns", side by side in a real JupyterLab, list
the same turns in the same states (issue 53, point 4): before a kernel restart every turn is
undoable; after it, the turn that changed only a variable is "not undoable" in both, with the same
note. Screenshots: artifacts/undo_views_side_by_side_{before,after}.png."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat
from playwright.sync_api import Locator, Page, expect

from tests.agent_helpers import done, scripted, tool
from tests.browser.test_bridge_in_lab import open_notebook, run_cell
from tests.browser.test_notebook_live import ARTIFACTS

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def panel_turns(panel: Locator) -> list[dict[str, Any]]:
    """Each turn the undo panel lists: its number, state, label and note."""
    return list(panel.evaluate("""el => Array.from(el.querySelectorAll('.larik-turn')).map(t => ({
        turn: Number(t.dataset.turn), state: t.dataset.state,
        label: t.querySelector('.larik-turn-head b').textContent,
        note: (t.querySelector('.larik-why') || {}).textContent || null }))"""))


def sidebar_turns(page: Page) -> list[dict[str, Any]]:
    """Each turn the sidebar's "Undoable turns" lists, read the same way."""
    return list(page.evaluate("""() => Array.from(document.querySelectorAll('#larik-sessions .jp-larik-turn')).map(t => ({
        turn: Number(t.dataset.turn), state: t.dataset.state,
        label: t.querySelector('summary').textContent.split(':')[0], summary: t.querySelector('summary').textContent,
        note: (t.querySelector('.jp-larik-turn-note') || {}).textContent || null }))"""))


def show_session(page: Page) -> None:
    """Open the sidebar on the folder's one session (again, to read it as it is now)."""
    if not page.locator("#larik-sessions").is_visible():
        page.click('li[data-id="larik-sessions"]')
    page.locator("#larik-sessions .jp-larik-node > .jp-larik-row").first.click()  # selecting reads it anew


def test_the_undo_panel_and_the_sidebar_list_the_same_turns(
    lab_page: Page, lab_server: LabServer, tmp_path: Path
) -> None:
    model = scripted(
        tmp_path,
        [tool("write", path="a.txt", content="a\n")], done("Wrote a."),
        [tool("python", code="x = 5")], done("Set x."),
        [tool("write", path="b.txt", content="b\n")], done("Wrote b."),
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes write a",
        "%larik --yes set x",
        "%larik --yes write b",
        "%larik /checkpoints",
        "%larik /resume --last\n%larik /checkpoints",
    ]]
    nbformat.write(nb, lab_server.root / "views.ipynb")
    open_notebook(lab_page, lab_server, "views.ipynb")
    for index in range(5):
        run_cell(lab_page, index)
    panel = lab_page.locator(".larik-undo").first
    expect(panel.locator(".larik-turn")).to_have_count(3, timeout=120_000)
    show_session(lab_page)
    expect(lab_page.locator("#larik-sessions .jp-larik-turn")).to_have_count(3, timeout=60_000)
    before = panel_turns(panel)
    assert [(t["label"], t["state"]) for t in before] == [
        ("Prompt 3", "undoable"), ("Prompt 2", "undoable"), ("Prompt 1", "undoable"),
    ]
    assert [(t["turn"], t["state"]) for t in sidebar_turns(lab_page)] == [(t["turn"], t["state"]) for t in before]
    ARTIFACTS.mkdir(exist_ok=True)
    panel.scroll_into_view_if_needed()
    lab_page.screenshot(path=str(ARTIFACTS / "undo_views_side_by_side_before.png"))

    # Restart the kernel: x went with it, so prompt 2 is not undoable, in both views alike.
    lab_page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab_server.wait_for_idle_kernel()
    run_cell(lab_page, 0)
    run_cell(lab_page, 5)
    after_panel = lab_page.locator(".larik-undo").last
    expect(after_panel.locator('.larik-turn[data-state="not undoable"]')).to_have_count(1, timeout=120_000)
    show_session(lab_page)
    expect(lab_page.locator('#larik-sessions .jp-larik-turn[data-state="not undoable"]')).to_have_count(1, timeout=60_000)
    after = panel_turns(after_panel)
    assert [(t["label"], t["state"]) for t in after] == [
        ("Prompt 3", "undoable"), ("Prompt 2", "not undoable"), ("Prompt 1", "undoable"),
    ]
    side = sidebar_turns(lab_page)
    assert [(t["turn"], t["state"]) for t in side] == [(t["turn"], t["state"]) for t in after]
    assert side[1]["note"] == after[1]["note"] and "went with the kernel" in side[1]["note"]
    assert side[1]["summary"] == "Prompt 2: variable x (not undoable)"  # said without opening it
    after_panel.scroll_into_view_if_needed()
    lab_page.screenshot(path=str(ARTIFACTS / "undo_views_side_by_side_after.png"))


def test_an_outside_agents_session_offers_undo_in_the_notebook(lab_page: Page, lab_server: LabServer) -> None:
    import os

    from larik_jupyter.session.store import Session
    from tests.session_helpers import add_turn, make_session

    root = Path(os.path.realpath(lab_server.root))
    with Session.create(root, "mcp", "test-client") as client:
        add_turn(client, "test-client: python", 0)
    own = make_session(root, 1)  # made false: a session of larik's own has no such button
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", id="first")]
    nbformat.write(nb, lab_server.root / "undo-client.ipynb")
    open_notebook(lab_page, lab_server, "undo-client.ipynb")
    lab_page.click('li[data-id="larik-sessions"]')
    undo = lab_page.locator('#larik-sessions .jp-larik-action[data-command="larik:undo-in-notebook"]')
    lab_page.click(f'#larik-sessions .jp-larik-node[data-session-id="{own.stem}"] > .jp-larik-row')
    expect(lab_page.locator('#larik-sessions .jp-larik-action[data-command="larik:export-session"]')).to_have_count(1)
    expect(undo).to_have_count(0)
    lab_page.click(f'#larik-sessions .jp-larik-node[data-session-id="{client.id}"] > .jp-larik-row')
    expect(undo).to_have_text("Undo its last call")
    undo.click()
    sources = lab_page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells.map(c => c.getSource())"
    )
    assert sources == ["x = 1", f"%larik /undo --session {client.id}"]
