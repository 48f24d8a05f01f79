"""An undo panel shown before a later turn keeps what it showed and says it is out of date, with
Refresh instead of its Undo buttons, light and dark, in a real JupyterLab (issue 39, point 9);
with every turn undone, the panel and the sidebar say nothing is left to undo.
Screenshots: artifacts/undo_panel_stale_<theme>.png."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from playwright.sync_api import Page, expect

from tests.agent_helpers import done, scripted, tool
from tests.browser.test_notebook_live import ARTIFACTS
from tests.browser.test_turn_view import theme
from tests.browser.test_widgets import open_and_run

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer


def test_an_earlier_panel_says_it_is_out_of_date_and_refreshes(
    lab_page: Page, lab_server: LabServer, tmp_path: Path
) -> None:
    model = scripted(
        tmp_path,
        [tool("write", path="a.txt", content="a\n")], done("Wrote a."),
        [tool("write", path="b.txt", content="b\n")], done("Wrote b."),
    )
    open_and_run(lab_server, lab_page, "stale.ipynb", [
        "%load_ext larik_jupyter",
        f"%larik --model {model} --yes write a",
        "%larik /checkpoints",
        "%larik --yes write b",
    ])
    panel = lab_page.locator(".larik-undo").first
    stale = panel.locator(".larik-stale")
    expect(stale).to_contain_text("Out of date: since this list was shown, 1 turn added.", timeout=60_000)
    expect(panel.locator(".larik-turn")).to_have_count(1)  # what it showed: prompt 1 only
    expect(panel.locator(".larik-undo-button, .larik-undo-to-button")).to_have_count(0)
    ARTIFACTS.mkdir(exist_ok=True)
    for shown in ("JupyterLab Light", "JupyterLab Dark"):
        theme(lab_page, shown)
        panel.scroll_into_view_if_needed()
        panel.screenshot(path=str(ARTIFACTS / f"undo_panel_stale_{shown.split()[-1].lower()}.png"))
    theme(lab_page, "JupyterLab Light")

    stale.get_by_role("button", name="Refresh").click()
    expect(panel.locator(".larik-stale")).to_have_count(0)
    expect(panel.locator(".larik-turn")).to_have_count(2)
    expect(panel.locator(".larik-undo-button")).to_have_count(1)
    panel.screenshot(path=str(ARTIFACTS / "undo_panel_refreshed_light.png"))

    # Undo everything: the panel and the sidebar say nothing is left to undo.
    panel.locator(".larik-undo-button").click()
    expect(panel.locator(".larik-turn")).to_have_count(1)
    panel.locator(".larik-undo-button").click()
    expect(panel.locator(".larik-empty")).to_contain_text("Nothing left to undo in session ")
    said = panel.locator(".larik-empty").inner_text()
    assert not (lab_server.root / "a.txt").exists() and not (lab_server.root / "b.txt").exists()
    lab_page.click('li[data-id="larik-sessions"]')
    lab_page.locator(".jp-larik-node > .jp-larik-row").first.click()
    # The same sentence: both say it from the undo report.
    expect(lab_page.locator("#larik-sessions .jp-larik-empty")).to_have_text(said, timeout=30_000)
