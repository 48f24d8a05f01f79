"""The sidebar's egress line under each prompt, in a real JupyterLab: what the prompt's requests
sent and what they withheld, from the session's egress ledger."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from playwright.sync_api import Page, expect

from larik_jupyter import Agent
from larik_jupyter.egress.ledger import ledger_path, read_ledger
from larik_jupyter.egress.report import by_turn
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, scripted, tool
from tests.browser.conftest import ARTIFACTS

if TYPE_CHECKING:
    from tests.browser.conftest import LabServer

EMAIL = "cust.canary.6610@ex.com"


def _run(root: Path, model: str, prompt: str, never: bool) -> Agent:
    agent = Agent(root, model=model, yes=True, host=KernelHost({"cust": pd.DataFrame({"email": [EMAIL, "b.other9@ex.com"]})}))
    try:
        if never:
            agent.egress.set("cust", "never")
        agent.run(prompt)
    finally:
        agent.close()
    return agent


def _sent_bytes(agent: Agent) -> int:
    (turn,) = by_turn(read_ledger(ledger_path(agent.session_path)))
    return turn.bytes


def test_the_sidebar_says_what_a_prompts_requests_sent_and_withheld(
    lab_server: LabServer, lab_page: Page, tmp_path: Path
) -> None:
    root = Path(os.path.realpath(lab_server.root))
    # `/egress cust never`, then a turn whose code prints the frame: its result is withheld.
    held = _run(root, scripted(tmp_path, [tool("python", code="print(cust)")], done("Looked.")), "look at cust", True)
    # Made false: the same turn with no rule withholds nothing.
    clean = _run(root, scripted(tmp_path, [tool("python", code="print(cust)")], done("Looked.")), "look again", False)
    page = lab_page

    page.click('li[data-id="larik-sessions"]')
    page.click(f'.jp-larik-node[data-session-id="{held.session_id}"] > .jp-larik-row')
    line = page.locator(".jp-larik-transcript .jp-larik-egress")
    expect(line).to_have_count(1)
    expect(line).to_have_text(f"Sent 2 requests, {_sent_bytes(held):,} bytes · withheld cust (never) ×1")
    expect(line).to_be_visible()
    # Under its prompt; what was withheld marked as a warning: dark on light orange.
    assert line.evaluate("node => node.parentElement.dataset.prompt") == "1"
    held = line.locator(".jp-larik-egress-withheld")
    expect(held).to_have_text("withheld cust (never) ×1")
    assert held.evaluate("node => getComputedStyle(node).backgroundColor") == "rgb(255, 224, 178)"
    assert held.evaluate("node => getComputedStyle(node).color") == "rgb(33, 33, 33)"
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#larik-sessions").screenshot(path=str(ARTIFACTS / "egress_line_withheld.png"))

    page.click(f'.jp-larik-node[data-session-id="{clean.session_id}"] > .jp-larik-row')
    line = page.locator(".jp-larik-transcript .jp-larik-egress")
    expect(line).to_have_text(f"Sent 2 requests, {_sent_bytes(clean):,} bytes")
    expect(line.locator(".jp-larik-egress-withheld")).to_have_count(0)
