"""Reloading the page mid-turn: the cell shows the live turn again, its approval can still be
answered, and it ends with the final reply and footer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from playwright.sync_api import Page, expect

from tests.browser.test_notebook_live import body_has, open_and_run, shot, write_notebook

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def test_reload_while_waiting_for_an_approval_then_allow_shows_the_final_state(
    lab_page: Page, lab_server: LabServer
) -> None:
    script = {"responses": [
        {"content": [
            {"type": "text", "text": "Writing the file first."},
            {"type": "tool_use", "name": "write", "input": {"path": "a.txt", "content": "hello\n"}},
        ]},
        {"content": [{"type": "text", "text": "The file a.txt now says hello."}]},
    ]}  # fmt: skip
    write_notebook(lab_server.root, "reload.ipynb", script, "make a file")
    open_and_run(lab_page, lab_server, "reload.ipynb")
    lab_page.get_by_role("button", name="Allow once").wait_for(timeout=60_000)

    lab_page.on("dialog", lambda dialog: dialog.accept())  # "leave the page with unsaved changes?"
    lab_page.reload()
    lab_page.wait_for_function("!!window.jupyterapp", timeout=60_000)
    lab_page.evaluate("window.jupyterapp.restored.then(() => true)")
    lab_page.evaluate("async path => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }", lab_server.path("reload.ipynb"))

    # The reloaded page shows the running turn: what was said so far and a working approval.
    body_has(lab_page, "Writing the file first.")
    body_has(lab_page, "Create a.txt with this content?")
    shot(lab_page, "reload_mid_turn_waiting")
    lab_page.get_by_role("button", name="Allow once").click()

    body_has(lab_page, "The file a.txt now says hello.")
    body_has(lab_page, "this turn")  # the footer
    assert (lab_server.root / "a.txt").read_text() == "hello\n"
    assert not lab_page.evaluate("document.body.innerText.includes('Create a.txt with this content?')")
    body_has(lab_page, "write: a.txt · allowed once")  # answered in the reloaded page; the decision on its row
    expect(lab_page.locator("button:has-text('Stop'):visible")).to_have_count(0)
    shot(lab_page, "reload_mid_turn_final")


