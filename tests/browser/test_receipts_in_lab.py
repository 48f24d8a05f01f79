"""A receipt line under its call, in a real JupyterLab against a local Anthropic-protocol server,
light then dark: the join's line reads in words under the python call's row, in the notebook and
in the sessions sidebar. Screenshots: artifacts/receipts_<theme>.png, receipts_sidebar_<theme>.png."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from playwright.sync_api import Page, expect

from larik_jupyter import Agent
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, scripted, tool
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_bridge_in_lab import open_notebook, run_cell, wait_idle_count
from tests.browser.test_notebook_live import body_has, shot
from tests.browser.test_turn_view import theme

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

KEY = "sk-ant-receipts"
USAGE = {"input_tokens": 100, "output_tokens": 10}
FRAMES = (
    "import pandas as pd\norders = pd.DataFrame({'customer_id': [1, 2, 3, 9], 'total': [10, 200, 30, 400]})\n"
    "customers = pd.DataFrame({'customer_id': [1, 2, 2, 3], 'name': list('abcd'), 'age': [30, 41, 41, 52]})"
)
JOIN = "joined = orders.merge(customers, on='customer_id', how='left')"
LINE = ("Receipt · joined = orders ⋈ customers on customer_id: 4 → 5 rows (+1: 1 customer_id value twice in "
        "customers, e.g. 2); 1 order matched no customer; name gained 1 missing value; age gained 1 missing value; "
        "age int64 → float64")


def test_the_receipt_line_reads_under_its_call_light_and_dark(lab_page: Page, lab_server: LabServer) -> None:
    script = {"responses": [
        {"content": [{"type": "tool_use", "name": "python", "input": {"code": JOIN}}], "usage": USAGE},
        {"content": [{"type": "text", "text": "Joined: one customer id is repeated, so check the fan-out."}],
         "usage": USAGE},
    ]}
    with ScriptedHTTPServer(script, api_key=KEY) as wire:
        setup = (f"import os\nos.environ['ANTHROPIC_API_KEY'] = {KEY!r}\n"
                 f"os.environ['ANTHROPIC_BASE_URL'] = {wire.anthropic_base_url!r}")
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext larik_jupyter", id="load"),
            nbformat.v4.new_code_cell(setup + "\n" + FRAMES, id="setup"),
            nbformat.v4.new_code_cell("%larik --yes --model anthropic:claude-sonnet-4-6 join orders to customers",
                                      id="prompt"),
        ]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, lab_server.root / "receipts.ipynb")
        open_notebook(lab_page, lab_server, "receipts.ipynb")
        for index, cell_id in ((0, "load"), (1, "setup")):
            run_cell(lab_page, index)
            wait_idle_count(lab_page, cell_id)
        run_cell(lab_page, 2)
        body_has(lab_page, "check the fan-out")
        wait_idle_count(lab_page, "prompt")
    receipt = lab_page.locator(".jp-OutputArea-output .larik-receipt")
    assert receipt.count() == 1
    assert receipt.inner_text() == LINE
    assert receipt.is_visible()
    # Under the call's row, after it: the row's details come first in the transcript.
    assert lab_page.evaluate(
        """() => { const r = document.querySelector('.larik-receipt');
                   const d = Array.from(document.querySelectorAll('.jp-OutputArea-output details'));
                   return d.some(x => x.compareDocumentPosition(r) & Node.DOCUMENT_POSITION_FOLLOWING); }"""
    )
    shot(lab_page, "receipts_light")
    theme(lab_page, "JupyterLab Dark")
    assert receipt.is_visible()
    shot(lab_page, "receipts_dark")
    theme(lab_page, "JupyterLab Light")


def test_the_sidebar_shows_the_receipt_under_its_call(lab_server: LabServer, lab_page: Page, tmp_path: Path) -> None:
    root = Path(os.path.realpath(lab_server.root))
    ns: dict[str, object] = {}
    exec(FRAMES, ns)
    agent = Agent(root, model=scripted(tmp_path, [tool("python", code=JOIN)], done("Joined.")), yes=True,
                  host=KernelHost({k: v for k, v in ns.items() if k in ("orders", "customers")}))
    try:
        agent.run("join orders to customers")
    finally:
        agent.close()
    lab_page.click('li[data-id="larik-sessions"]')
    lab_page.click(f'.jp-larik-node[data-session-id="{agent.session_id}"] > .jp-larik-row')
    line = lab_page.locator(".jp-larik-transcript .jp-larik-receipt")
    expect(line).to_have_count(1)
    expect(line).to_have_text(LINE)
    expect(line).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    lab_page.locator("#larik-sessions").screenshot(path=str(ARTIFACTS / "receipts_sidebar_light.png"))
    theme(lab_page, "JupyterLab Dark")
    expect(line).to_be_visible()
    lab_page.locator("#larik-sessions").screenshot(path=str(ARTIFACTS / "receipts_sidebar_dark.png"))
    theme(lab_page, "JupyterLab Light")
