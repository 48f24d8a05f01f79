"""The "withheld" line appears only on the turn that withheld (issue 53, point 6): a call's
result withheld in one turn and sent again as history by later requests is not said again,
in the turn's notice nor in the sidebar's per-prompt line; a new call that withholds is."""

from __future__ import annotations

from pathlib import Path

import pytest

from larik_jupyter import Agent
from larik_jupyter.agent.events import Notice
from larik_jupyter.frontends.server.views import egress_turns
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import done, scripted, tool
from tests.test_egress import _frame


def test_the_withheld_line_is_said_on_the_turn_that_withheld_only(project: Path, tmp_path: Path) -> None:
    model = scripted(
        tmp_path,
        [tool("python", code="cust.head()")], done("ok"),
        done("again"),  # turn 2 sends turn 1's result again, as history
        [tool("python", code="cust.tail()")], done("more"),  # made false: turn 3 withholds anew
    )
    agent = Agent(project, model=model, yes=True, host=KernelHost({"cust": _frame()}))
    said: list[list[str]] = []
    agent.subscribe(lambda e: said[-1].append(e.text) if isinstance(e, Notice) else None)
    try:
        agent.egress.set("cust", "stats")
        for prompt in ("look", "again", "more"):
            said.append([])
            agent.run(prompt)
    finally:
        agent.close()
    line = "Withheld from the model this turn: cust (stats)"
    assert [any(line in text for text in turn) for turn in said] == [True, False, True]
    # The sidebar's line per prompt, from the ledger, says the same.
    sidebar = {turn.prompt: turn.withheld for turn in egress_turns(agent.session_path)}
    assert bool(sidebar[1]) and not sidebar.get(2) and bool(sidebar[3]), sidebar


def test_the_ledger_names_calls_by_summary_and_the_person_sees_what_a_call_withheld(
    project: Path, tmp_path: Path
) -> None:
    from IPython.core.error import UsageError
    from IPython.utils.capture import capture_output

    from tests.test_egress import EMAIL
    from tests.widget_helpers import larik, shell_with_magics

    model = scripted(
        tmp_path,
        [tool("python", code="cust.head()")], done("ok"),
        [tool("python", code="print(21 * 2)")], done("42"),  # made false: nothing withheld from it
    )
    shell, _ = shell_with_magics(project, model)
    shell.user_ns["cust"] = _frame()
    larik(shell, "/egress cust stats")
    larik(shell, "--yes look")
    with capture_output() as ledger:
        larik(shell, "/egress")
    with capture_output() as first:
        larik(shell, "/egress --show 1")
    larik(shell, "--yes compute")
    with capture_output() as second:
        larik(shell, "/egress --show 2")

    def said(captured: object) -> str:
        return "\n".join(str(o.data.get("text/markdown", "")) for o in captured.outputs)  # type: ignore[attr-defined]

    # The ledger names the call by its summary and number, never by its internal id.
    assert "| result of call 1 (`python: cust.head()`) |" in said(ledger)
    assert "toolu_" not in said(ledger)
    # --show 1: what was withheld, and the value itself, which is the person's own.
    assert "**Call 1 (`python: cust.head()`)**" in said(first)
    assert "Withheld from the model: cust (stats)" in said(first) and EMAIL in said(first)
    assert "Nothing of its result was withheld" in said(second) and "42" in said(second)
    with pytest.raises(UsageError, match=r"has 2 calls; pass --show 1 to 2"):
        larik(shell, "/egress --show 3")
