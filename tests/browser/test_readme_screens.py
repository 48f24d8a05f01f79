"""The README's screenshots, taken in a real JupyterLab so they show what the code shows today:
docs/images/turn.png (a turn on churn.csv: a python call with what it did to the user's
variables, then an approval of a cell edit with its coloured diff) and docs/images/sidebar.png
(the Larik sessions sidebar: the fork tree of the folder's sessions, a branch's transcript,
beside the notebook with the cell the agent edited marked). The model is a local
Anthropic-protocol server playing a script; everything else is the real extension, kernel and
page. Each picture's content is checked before it is written."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from playwright.sync_api import Page, expect

from larik_jupyter.testing import ScriptedHTTPServer
from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has
from tests.browser.test_turn_view import assert_diff_coloured

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "docs" / "images"
KEY_ENV = "LARIK_README_SCREENS_KEY"
KEY = "sk-ant-readme-screens"
USAGE = {"input_tokens": 2400, "output_tokens": 180}
BANDS = (
    "df['tenure_band'] = pd.cut(df['tenure_months'], [0, 12, 24, 48, 72],\n"
    "                           labels=['0-12', '13-24', '25-48', '49-72'])\n"
    "by_band = df.groupby('tenure_band', observed=True)['churned'].mean().round(3)\n"
    "by_contract = df.groupby('contract')['churned'].mean().round(3)\n"
    "print(by_contract.to_string()); print(by_band.to_string())"
)
RATES = "rates = (df.groupby('contract')['churned']\n           .agg(churn_rate='mean', customers='size')\n           .sort_values('churn_rate', ascending=False))\nrates"
SCRIPT = {"responses": [
    {"content": [{"type": "text", "text": "I'll compare churn across contracts and tenure bands."},
                 {"type": "tool_use", "name": "python", "input": {"code": BANDS}}], "usage": USAGE},
    {"content": [{"type": "text", "text": "Month-to-month contracts churn at 0.418, two-year ones at 0.154. "
                  "I'll make the cell below keep that table."},
                 {"type": "tool_use", "name": "notebook_edit",
                  "input": {"path": "churn.ipynb", "cell_id": "rates", "new_source": RATES}}], "usage": USAGE},
    {"content": [{"type": "text", "text": "The contract drives churn most, then tenure: customers in their first "
                  "year churn far more often than those past two years."}], "usage": USAGE},
    {"content": [{"type": "text", "text": "Churn falls with every tenure band."}], "usage": USAGE},
    {"content": [{"type": "text", "text": "Churn rises with each support call."}], "usage": USAGE},
]}


@pytest.fixture
def model_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The key the kernel reads (through `api_key_env`), set before JupyterLab starts."""
    monkeypatch.setenv(KEY_ENV, KEY)
    yield


def churn_notebook(root: Path) -> None:
    shutil.copy(REPO / "notebooks" / "churn.csv", root / "churn.csv")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# What drives churn?", id="title"),
        nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
        nbformat.v4.new_code_cell("import pandas as pd\ndf = pd.read_csv('churn.csv')\ndf.shape", id="data"),
        nbformat.v4.new_code_cell("%larik what drives churn here?", id="prompt"),
        nbformat.v4.new_code_cell("df.groupby('contract').churned.mean()", id="rates"),
        nbformat.v4.new_code_cell("%larik how does churn change with tenure?", id="tenure"),
        nbformat.v4.new_code_cell("%larik /fork", id="fork"),
        nbformat.v4.new_code_cell("%larik and with support calls?", id="calls"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "churn.ipynb")


@pytest.mark.own_lab  # its kernel must see the key's variable when it starts
def test_the_readme_screenshots(model_key: None, lab_page: Page, lab_server: LabServer, larik_dirs: dict[str, Path]) -> None:
    page = lab_page
    with ScriptedHTTPServer(SCRIPT, api_key=KEY) as wire:
        larik_dirs["config"].mkdir(parents=True, exist_ok=True)
        (larik_dirs["config"] / "config.json").write_text(json.dumps({
            "model": "anthropic:claude-sonnet-4-6",
            "providers": {"anthropic": {"base_url": wire.anthropic_base_url, "api_key_env": KEY_ENV}},
        }))
        churn_notebook(lab_server.root)
        open_notebook(page, lab_server, "churn.ipynb")
        for index, cell_id in ((1, "load"), (2, "data")):
            run_cell(page, index)
            wait_idle_count(page, cell_id)
        run_cell(page, 3)

        body_has(page, "Run this Python in your kernel? It may change df (an item set) and create by_band and by_contract.")
        page.get_by_role("button", name="Allow once").click()
        body_has(page, "Replace the source of cell 5 (rates) of churn.ipynb?")
        prompt = page.locator(".jp-Cell", has=page.locator(".larik-approval"))
        text = prompt.inner_text()
        # What the picture claims: the variable report under the python call, and the cell's diff.
        assert "df: DataFrame 200×6 → 200×7, changed in place" in text, text
        assert "by_band: created Series 4" in text and "by_contract: created Series 3" in text, text
        card = page.locator(".larik-approval").first
        assert card.locator(".larik-diff-del").first.inner_text() == "-df.groupby('contract').churned.mean()"
        assert card.locator(".larik-diff-add").first.inner_text() == "+rates = (df.groupby('contract')['churned']"
        assert_diff_coloured(page)
        IMAGES.mkdir(parents=True, exist_ok=True)
        page.locator(".jp-Notebook .jp-Cell").nth(2).evaluate("c => c.scrollIntoView({block: 'start'})")
        page.screenshot(path=str(IMAGES / "turn.png"), clip=_around(page, ["data", "prompt", "rates"]))
        card.get_by_role("button", name="Allow once").click()
        body_has(page, "customers in their first year churn far more often")
        wait_idle_count(page, "prompt")
        for index, cell_id in ((5, "tenure"), (6, "fork"), (7, "calls")):
            run_cell(page, index)
            wait_idle_count(page, cell_id)

    page.click('li[data-id="larik-sessions"]')
    sidebar = page.locator("#larik-sessions")
    expect(sidebar.locator(".jp-larik-node")).to_have_count(2, timeout=30_000)
    branch = sidebar.locator(".jp-larik-node .jp-larik-node > .jp-larik-row").first
    expect(branch).to_contain_text("branched after prompt 2")
    branch.click()
    expect(sidebar).to_contain_text("and with support calls?", timeout=20_000)
    shown = sidebar.inner_text()
    assert "what drives churn here?\n" in shown and "· 2 prompts" in shown, shown
    expect(sidebar.locator(".jp-larik-transcript")).to_contain_text("what drives churn here?", timeout=20_000)
    page.locator(".jp-Notebook .jp-Cell").nth(3).evaluate("c => c.scrollIntoView({block: 'start'})")
    expect(page.locator(".jp-Notebook")).to_contain_text("edited by Larik · prompt 1")
    page.screenshot(path=str(IMAGES / "sidebar.png"))


def _around(page: Page, cell_ids: list[str]) -> dict[str, float]:
    """The smallest rectangle on screen holding the cells with these ids."""
    boxes = page.evaluate(
        """ids => { const panel = window.jupyterapp.shell.currentWidget;
                    return panel.content.widgets.filter(w => ids.includes(w.model.id)).map(w => {
                      const r = w.node.getBoundingClientRect();
                      return {x: r.left, y: r.top, right: r.right, bottom: Math.min(r.bottom, window.innerHeight)}; }); }""",
        cell_ids,
    )
    x, y = min(b["x"] for b in boxes), min(b["y"] for b in boxes)
    return {"x": x, "y": y, "width": max(b["right"] for b in boxes) - x, "height": max(b["bottom"] for b in boxes) - y}
