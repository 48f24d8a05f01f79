"""`Agent` is the façade front ends drive: per-turn options, the stored transcript, checkpoints,
server status and tracing, without reaching into the loop."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter import Agent, PermissionAnswer, PermissionRequest
from larik_jupyter.agent import events as ae
from tests.agent_helpers import done, scripted, tool


def test_per_turn_options_apply_to_that_turn_only(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [tool("write", path="a.txt", content="a")], done(),
                     [tool("write", path="b.txt", content="b")], done())
    agent = Agent(project, model=model)
    asked: list[str] = []
    seen: list[ae.AgentEvent] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request.summary)
        return PermissionAnswer("allow")

    assert agent.run("write a", approver=approver, listener=seen.append).status == "done"
    assert asked == ["write: a.txt"] and (project / "a.txt").exists()
    assert any(isinstance(e, ae.TurnEnded) for e in seen)
    count = len(seen)
    # The next turn has neither the approver nor the listener: nobody can answer, so it is denied.
    agent.run("write b")
    assert not (project / "b.txt").exists() and len(seen) == count and not agent.running
    agent.close()


def test_yes_for_one_turn(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [tool("write", path="a.txt", content="a")], done(),
                     [tool("write", path="b.txt", content="b")], done())
    agent = Agent(project, model=model)
    agent.run("write a", yes=True)
    agent.run("write b")
    assert (project / "a.txt").exists() and not (project / "b.txt").exists()
    agent.close()


def test_transcript_checkpoints_status_and_tracing(project: Path, tmp_path: Path) -> None:
    agent = Agent(project, model=scripted(tmp_path, [tool("write", path="a.txt", content="a")], done()), yes=True)
    assert agent.tracing is None
    directory = agent.trace(True)
    assert directory is not None and agent.tracing == directory
    agent.run("write a")
    assert [e.type for e in agent.history.entries][0] == "meta"
    assert any(e.message is not None and e.message.is_prompt() for e in agent.history.entries)
    (turn,) = agent.history.checkpoints()
    assert [f.path for f in turn.files] == ["a.txt"] and turn.files[0].existed is False
    assert agent.servers.mcp() == [] and agent.servers.lsp() == []
    assert agent.trace(False) == directory and agent.tracing is None
    assert (directory / "events.jsonl").stat().st_size > 0
    agent.close()
