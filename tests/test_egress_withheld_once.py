"""The "withheld" line appears only on the turn that withheld (issue 53, point 6): a call's
result withheld in one turn and sent again as history by later requests is not said again,
in the turn's notice nor in the sidebar's per-prompt line; a new call that withholds is."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter import Agent
from larik_jupyter.agent.events import Notice
from larik_jupyter.server.views import egress_turns
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
        agent.set_egress("cust", "stats")
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
