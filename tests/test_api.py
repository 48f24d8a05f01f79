"""The Python API: session records and the DataFrame view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from larik_jupyter import Agent
from larik_jupyter.session.branch import BranchError


def test_session_records_and_dataframe(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [
        {"content": [{"type": "tool_use", "name": "write", "input": {"path": "a.txt", "content": "a"}}],
         "usage": {"input_tokens": 10, "output_tokens": 2}},
        {"content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 12, "output_tokens": 1}},
        {"content": [{"type": "tool_use", "name": "edit",
                      "input": {"path": "a.txt", "old_string": "zz", "new_string": "b"}}]},
        {"content": [{"type": "text", "text": "could not"}]},
    ]}))
    agent = Agent(tmp_path, model=f"scripted:{script}", yes=True)
    agent.run("one")
    agent.run("two")
    records = agent.records
    assert [t.prompt for t in records.turns] == ["one", "two"]
    assert records.turns[0].files_changed == ["a.txt"] and records.turns[1].files_changed == []
    assert [(c.name, c.is_error) for c in records.tool_calls] == [("write", False), ("edit", True)]
    assert records.usage.input_tokens == 22
    frame = records.to_dataframe("tool_calls")
    assert list(frame["name"]) == ["write", "edit"]
    agent.close()


def test_rewind_returns_the_prompt_and_switches_session(tmp_path: Path) -> None:
    agent = Agent(tmp_path, model="scripted:demo", yes=True)
    agent.run("first")
    agent.run("second")
    source = agent.session_id
    assert agent.rewind(2) == "second"
    assert agent.session_id != source
    assert len(agent.records.turns) == 1
    with pytest.raises(BranchError, match="has 1 prompt; choose a prompt number from 1 to 1"):
        agent.rewind(5)
    agent.close()


def test_resume_keeps_the_model_the_session_was_recorded_with(tmp_path: Path) -> None:
    first = Agent(tmp_path, model="scripted:demo", yes=True)
    first.run("hello")
    recorded = first.session_id
    other = tmp_path / "other.json"
    other.write_text('{"responses": []}')
    first.new(model=f"scripted:{other}")
    first.resume(recorded)
    assert first.session_id == recorded and first.model == "scripted:demo"
    first.close()


def test_one_options_object_configures_the_agent_and_outlives_a_session_switch(tmp_path: Path) -> None:
    from larik_jupyter import AgentOptions

    options = AgentOptions(cwd=tmp_path, model="scripted:demo", yes=True, protect=True)
    agent = Agent(options=options)
    agent.run("hello")
    agent.fork()
    assert agent.options.yes and agent.options.protect and agent.options.egress_rules is options.egress_rules
    agent.protect = False
    assert not agent.protecting and not agent.options.protect and options.protect
    with pytest.raises(TypeError, match="either `options` or"):
        Agent(options=options, yes=False)
    agent.close()
