"""A receipt is shown where the person looks: one line under the call in the live view and the
terminal log, `/history`, the export, the branch notebook (a comment above the cell), and
`%larik /receipts` lists them newest first with the prompt and the variable."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import nbformat
import pandas as pd
from IPython.utils.capture import capture_output

from larik_jupyter import Agent, KernelHost, PermissionAnswer, PermissionRequest
from larik_jupyter.agent.textlog import TextLog
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.session.export import render_markdown
from larik_jupyter.session.reader import load_entries
from tests.agent_helpers import done, scripted, tool
from tests.widget_helpers import larik, shell_with_magics

JOIN = "joined = orders.merge(customers, on='customer_id', how='left')"
LINE = ("joined = orders ⋈ customers on customer_id: 4 → 5 rows (+1: 1 customer_id value twice in customers, "
        "e.g. 2); 1 order matched no customer; name gained 1 missing value")
FILTER = "big = joined[joined.total > 100]"


def markdown_of(outputs: list[Any]) -> str:
    return "\n".join(o.data.get("text/markdown", "") for o in outputs)


def test_every_view_shows_the_receipt_under_its_call(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [tool("python", code=JOIN)], done(), [tool("python", code=FILTER)], done())
    shell, magics = shell_with_magics(project, model)
    shell.user_ns["orders"] = pd.DataFrame({"customer_id": [1, 2, 3, 9], "total": [10, 200, 30, 400]})
    shell.user_ns["customers"] = pd.DataFrame({"customer_id": [1, 2, 2, 3], "name": list("abcd")})
    log = io.StringIO()
    with capture_output() as live:
        larik(shell, "join orders to customers")
    agent = magics.agent
    assert agent is not None
    agent.subscribe(TextLog(log))
    with capture_output():
        larik(shell, "keep the big orders")
    assert f"**Receipt** · {LINE}" in markdown_of(live.outputs)
    assert "receipt: big = joined filtered: 5 → 3 rows (2 dropped)" in log.getvalue()
    with capture_output() as history:
        larik(shell, "/history")
    assert f"**Receipt** · {LINE}" in markdown_of(history.outputs)
    with capture_output() as listed:
        larik(shell, "/receipts")
    table = markdown_of(listed.outputs).splitlines()
    assert table[2:] == [
        "| 2 | big | joined filtered: 5 → 3 rows (2 dropped) |",
        f"| 1 | joined | {LINE.removeprefix('joined = ')} |",
    ]
    exported = render_markdown(agent.session_path, load_entries(agent.session_path).entries,
                               redactor=redactor_for(None))
    assert f"*Receipt:* {LINE}" in exported
    stored = [json.loads(line) for line in agent.session_path.read_text(encoding="utf-8").splitlines()]
    results = [b for e in stored for b in e.get("message", {}).get("content", []) if b["type"] == "tool_result"]
    assert results[0]["receipts"][0]["fan_out"] == 1 and results[0]["receipts"][0]["variable"] == "joined"
    notebook = nbformat.read(agent.to_notebook(), as_version=4)
    [cell] = [c for c in notebook.cells if c.cell_type == "code" and JOIN in c.source]
    assert cell.source == f"# receipt: {LINE}\n{JOIN}"
    agent.close()


def _join_agent(project: Path, tmp_path: Path, **options: Any) -> tuple[Agent, dict[str, Any]]:
    ns: dict[str, Any] = {
        "orders": pd.DataFrame({"customer_id": [1, 2, 3, 9], "total": [10, 200, 30, 400]}),
        "customers": pd.DataFrame({"customer_id": [1, 2, 2, 3], "name": list("abcd")}),
    }
    model = scripted(tmp_path, [tool("python", code=JOIN)], done("Joined."))
    return Agent(project, model=model, host=KernelHost(ns), protect=True, **options), ns


def test_protect_mode_asks_before_keeping_a_join_that_fans_out(project: Path, tmp_path: Path) -> None:
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("deny")

    agent, ns = _join_agent(project, tmp_path, approver=approver, yes=True)
    outcome = agent.run("join them")
    result = agent.loop.session.state.all[-2].tool_results()[0]
    agent.close()
    [request] = asked
    assert request.ask == "keep" and request.question.startswith("Keep joined? This join fanned out")
    assert "joined" not in ns and result.is_error and "did not keep joined" in result.text()
    assert outcome.error is None and outcome.text == "Joined."


def test_headless_protect_mode_keeps_the_result_and_ends_the_turn_with_the_receipt(project: Path, tmp_path: Path) -> None:
    agent, ns = _join_agent(project, tmp_path, yes=True)
    outcome = agent.run("join them")
    messages = agent.loop.session.state.all
    agent.close()
    assert len(ns["joined"]) == 5  # kept
    assert outcome.error == f"Protect mode: this join fanned out: {LINE}. The result is kept; check it before building on it."
    assert messages[-1].tool_results() and outcome.text != "Joined."  # the model was not called again
