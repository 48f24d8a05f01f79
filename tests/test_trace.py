"""Debug traces: events and provider HTTP bodies beside the session, with no key anywhere."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.agent.trace import REDACTED, Trace, active_trace, start_trace, stop_trace
from larik_jupyter.config.layers import user_config_path
from larik_jupyter.session import catalog
from larik_jupyter.testing import ScriptedHTTPServer

KEY = "sk-ant-trace-test-0123456789abcdef"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    replies = [
        {"content": [{"type": "tool_use", "name": "bash", "input": {"command": "echo hello"}}]},
        {"content": [{"type": "text", "text": "All done."}]},
        {"content": [{"type": "text", "text": "Untraced."}]},
    ]
    with ScriptedHTTPServer(replies, api_key=KEY) as running:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.anthropic_base_url)
        yield running


def all_bytes(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_traced_turn_keeps_bodies_and_no_key(
    project: Path, server: ScriptedHTTPServer, larik_dirs: dict[str, Path]
) -> None:
    agent = Agent(project, model="anthropic:claude-test", yes=True)
    trace = start_trace(agent.loop)
    assert trace.directory == agent.session_path.with_name(f"{agent.session_id}.trace")
    outcome = agent.run("print the key")
    assert outcome.status == "done" and outcome.text == "All done."
    sent = server.requests[0].headers
    assert KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))  # the call had it

    events = [json.loads(line) for line in (trace.directory / "events.jsonl").read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "TurnStarted" and kinds[-1] == "TurnEnded"
    assert {"ToolRequested", "ToolFinished", "TextDelta", "AssistantMessage"} <= set(kinds)
    assert all(e["time"].endswith("Z") for e in events)
    finished = next(e for e in events if e["type"] == "ToolFinished")
    assert finished["content"].startswith("hello")

    http = trace.directory / "http"
    first = json.loads((http / "0001-request.json").read_text())
    assert first["body"]["messages"][0]["content"][0]["text"] == "print the key"
    auth = {k: v for k, v in first["headers"].items() if k in ("x-api-key", "authorization")}
    assert auth and set(auth.values()) == {REDACTED}
    second = json.loads((http / "0002-request.json").read_text())
    assert second["body"]["messages"][-1]["content"][0]["type"] == "tool_result"
    assert json.loads((http / "0001-response.json").read_text())["status"] == 200
    assert "content_block_delta" in (http / "0002-response.body").read_text()

    # /debug off stops writing.
    stop_trace(agent.loop)
    assert active_trace(agent.loop) is None
    before = all_bytes(trace.directory)
    agent.run("again")
    assert all_bytes(trace.directory) == before
    agent.close()

    leaks = [p for p, data in all_bytes(larik_dirs["data"]).items() if KEY.encode() in data]
    assert leaks == []

    catalog.delete(str(agent.session_path))
    assert not trace.directory.exists()


def test_debug_config_traces_from_the_start(project: Path, server: ScriptedHTTPServer) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"debug": True}))
    agent = Agent(project, model="anthropic:claude-test", yes=True)
    agent.run("print the key")
    agent.close()
    http = agent.session_path.with_name(f"{agent.session_id}.trace") / "http"
    assert sorted(os.listdir(http))[:2] == ["0001-request.json", "0001-response.body"]


def test_secret_values_are_redacted_wherever_they_appear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-9f8e7d6c5b4a")
    trace = Trace(tmp_path / "x.trace")
    trace.record(ae.Notice("the tool printed tok-9f8e7d6c5b4a"))
    trace.close()
    line = (tmp_path / "x.trace" / "events.jsonl").read_text()
    assert "tok-9f8e7d6c5b4a" not in line and line.count(REDACTED) == 1
