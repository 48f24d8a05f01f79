"""Which turn each egress ledger line names: the running turn's, held by the turn itself, else
the session's last (the door keeps no turn of its own)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from larik_jupyter import Agent
from larik_jupyter.llm.messages import ContentBlock
from larik_jupyter.llm.provider import Destination
from tests.agent_helpers import done, scripted
from tests.session_helpers import ledger_lines


def _marks(agent: Agent) -> list[tuple[object, object, object]]:
    lines = ledger_lines(agent.session_path)
    return [(line.get("turn"), line.get("prompt"), line.get("kind")) for line in lines if line["type"] == "request"]


def test_a_request_names_its_turn_and_one_between_turns_the_last(tmp_path: Path) -> None:
    agent = Agent(tmp_path, model=scripted(tmp_path, done("s"), done("a"), done("b"), done("the summary")), yes=True)
    try:
        agent.compact()  # before any turn: none to name
        agent.run("one")
        agent.run("two")
        agent.compact()  # between turns: the last one's
    finally:
        agent.close()
    assert _marks(agent) == [(None, None, None), (1, 1, None), (2, 2, None), (2, 2, None)]


def test_an_answer_to_an_outside_agent_names_its_calls_turn(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello\n")
    agent = Agent(tmp_path, model="mcp:client", yes=True)
    try:
        for _ in range(2):
            result = asyncio.run(agent.acall("read", {"path": "f.txt"}, caller="client"))

            def build(blocks: list[ContentBlock]) -> dict[str, object]:
                return {"content": [block.to_json() for block in blocks]}

            agent.egress.door.pass_answer(Destination("mcp:client", None), [("result", result)], build)
    finally:
        agent.close()
    assert _marks(agent) == [(1, 1, "answer"), (2, 2, "answer")]
