"""An outside agent's approval card in the open notebook (issue 51, point 5): it names the client,
and once the call ends (answered, or stopped: the client gone, a timeout) its lines leave the
cell, which shows the outputs the notebook holds again. The page is the bridge's panel fake."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.agent.permissions import PermissionRequest
from larik_jupyter.frontends.mcp.kernel_end import PageApprover
from larik_jupyter.frontends.notebook.bridge import Bridge
from tests.agent_helpers import scripted
from tests.process_helpers import await_until
from tests.test_notebook_bridge import connect
from tests.widget_helpers import shell_with_magics

VIEW = "application/vnd.jupyter.widget-view+json"
OUTPUT = {"output_type": "stream", "name": "stdout", "text": "42\n"}
REQUEST = PermissionRequest(
    id="call-1", tool="python", input={"code": "df.drop(columns=['x'], inplace=True)"},
    summary="python: df.drop(...)", detail="df.drop(columns=['x'], inplace=True)",
    question="Run this code in the kernel?",
)


def _shown(panel: Any) -> list[list[dict[str, Any]]]:
    """The outputs each `show_outputs` the page got showed in cell c1."""
    return [r["outputs"] for r in panel.sent if r["op"] == "show_outputs" and r["cell_id"] == "c1"]


@pytest.mark.parametrize("end", ["answered", "client gone"])
def test_the_card_names_the_client_and_leaves_the_cell_when_the_call_ends(
    end: str, project: Path, tmp_path: Path
) -> None:
    from ipywidgets.widgets.widget import _instances

    _, magics = shell_with_magics(project, scripted(tmp_path, []))
    cells = [{"id": "c1", "cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [OUTPUT], "execution_count": 1}]
    bridge = Bridge()
    notebook = {"metadata": {}, "nbformat": 4, "nbformat_minor": 5, "cells": cells}
    page = {"type": "read", "notebook": notebook, "hashes": {}, "order": ["c1"], "order_hash": ""}
    panel = connect(bridge, project, "nb.ipynb", lambda r: page if r["op"] == "get" else None)
    magics.bridge = bridge
    approver = PageApprover(magics.kernel, project / "nb.ipynb", "claude-code")

    async def scenario() -> tuple[list[dict[str, Any]], str, str | None]:
        task = asyncio.ensure_future(approver.ask(REQUEST))
        await await_until(lambda: bool(_shown(panel)), "the card in cell c1")
        with_card = _shown(panel)[-1]
        card = _instances[with_card[-1]["data"][VIEW]["model_id"]]
        question = card.request.question
        if end == "answered":
            card.allow_button.click()
            answer = await task
            decision = answer.decision if answer is not None else None
        else:  # the client went away: its call is stopped, the ask with it
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            decision = None
        await await_until(lambda: len(_shown(panel)) == 2, "the cell shown again after the call ended")
        return with_card, question, decision

    with_card, question, decision = asyncio.run(scenario())
    # Made false: while the call waited, the card was in the cell, under its output, naming the client.
    assert with_card[0] == OUTPUT and VIEW in with_card[-1]["data"]
    assert question == "The outside agent `claude-code` (over MCP) asks: Run this code in the kernel?"
    assert decision == ("allow" if end == "answered" else None)
    # Ended: the cell shows what the notebook holds, no line of the card left.
    assert _shown(panel)[-1] == [OUTPUT]
