"""Whole agent turns through the real anthropic and openai SDKs, against the local protocol server."""

from __future__ import annotations

from pathlib import Path

import pytest

from larik_jupyter import Agent
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import wire_model

KEY = "sk-agent-test-abcdef0123456789"


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_turn_with_a_tool_call_through_the_sdk(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    script = [
        {"content": [{"type": "text", "text": "Writing it."},
                     {"type": "tool_use", "name": "write", "input": {"path": "hi.txt", "content": "hi\n"}}],
         "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"content": [{"type": "text", "text": "Wrote hi.txt."}],
         "usage": {"input_tokens": 150, "output_tokens": 5}},
    ]
    with ScriptedHTTPServer(script, api_key=KEY) as server:
        model = wire_model(kind, server, KEY, monkeypatch)
        agent = Agent(project, model=model, yes=True)
        outcome = agent.run("write hi.txt")
        requests = server.requests
    assert outcome.status == "done" and outcome.text == "Wrote hi.txt."
    assert (project / "hi.txt").read_text() == "hi\n"
    assert outcome.usage.input_tokens == 250 and outcome.usage.output_tokens == 25
    # 250 in and 25 out at the listed prices: sonnet 4 $3/$15, gpt-5 $1.25/$10 per million.
    assert outcome.cost == pytest.approx(0.001125 if kind == "anthropic" else 0.0005625)
    second = requests[1].body
    # The tool result went back to the model in the provider's own shape.
    assert "hi.txt" in str(second["messages"][-1])
    assert KEY not in agent.session_path.read_text()
    agent.close()
