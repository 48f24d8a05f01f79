"""Protect mode knows the agent's own variables across fork, rewind and resume, from the
session's record (issue 53, point 5): no ask about `epoch` the agent made, on the branch or in
the resumed session; the twins (the user made `epoch`, or a user cell bound it again after the
agent) are asked about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent, KernelHost, PermissionAnswer, PermissionRequest
from larik_jupyter.agent.turn import PromptExtras
from tests.agent_helpers import done, scripted, tool

BUMP = "epoch = epoch + 1"


def _approver(asked: list[str]) -> Any:
    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request.summary)
        return PermissionAnswer("allow")

    return approver


def _first(project: Path, tmp_path: Path, ns: dict[str, Any], asked: list[str], *, by_agent: bool) -> Agent:
    """Prompt 1: the agent makes `epoch` (or, for the twin, only reads the user's)."""
    code = "epoch = 4" if by_agent else "print(epoch)"
    model = scripted(tmp_path, [tool("python", code=code)], done(), [tool("python", code=BUMP)], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost(ns), approver=_approver(asked), protect=True)
    agent.run("make the epoch")
    return agent


@pytest.mark.parametrize("by_agent", [True, False])
@pytest.mark.parametrize("how", ["fork", "rewind", "resume"])
def test_protect_does_not_ask_about_the_agents_own_variable_after_a_switch(
    project: Path, tmp_path: Path, how: str, by_agent: bool
) -> None:
    ns: dict[str, Any] = {} if by_agent else {"epoch": 4}
    asked: list[str] = []
    agent = _first(project, tmp_path, ns, asked, by_agent=by_agent)
    agent.run("look")  # prompt 2: bumps it (the agent's own: never asked)
    if how in ("fork", "rewind"):
        agent.fork(2) if how == "fork" else agent.rewind(2)
        agent.switch_model(scripted(tmp_path, [tool("python", code=BUMP)], done()))
    else:
        agent.close()
        agent = Agent(project, model=scripted(tmp_path, [tool("python", code=BUMP)], done()), yes=True,
                      host=KernelHost(ns), approver=_approver(asked), protect=True, session=agent.session_id)
    before = list(asked)
    agent.run("bump the epoch")
    agent.close()
    new = asked[len(before):]
    assert (not new) is by_agent, (how, asked)
    assert all("epoch" in summary for summary in new)


@pytest.mark.parametrize("user_cell", [True, False])
def test_a_user_cell_that_bound_the_name_again_makes_it_the_users(
    project: Path, tmp_path: Path, user_cell: bool
) -> None:
    ns: dict[str, Any] = {}
    asked: list[str] = []
    agent = _first(project, tmp_path, ns, asked, by_agent=True)
    cells = [{"source": "epoch = 4"}] if user_cell else []  # the user's own cell, run before prompt 2
    agent.switch_model(scripted(tmp_path, done("Noted.")))
    agent.run("note it", PromptExtras(cells=cells))
    agent.fork()  # a new session: what is whose comes from the record alone
    agent.switch_model(scripted(tmp_path, [tool("python", code=BUMP)], done()))
    agent.run("bump the epoch")
    agent.close()
    assert bool(asked) is user_cell, asked
