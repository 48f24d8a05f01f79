"""Debug traces: events and provider HTTP bodies beside the session, with no key anywhere."""

from __future__ import annotations

import base64
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.agent.trace import Trace, active_trace, start_trace, stop_trace
from larik_jupyter.config.layers import user_config_path
from larik_jupyter.config.secrets import redactor_for
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
    assert auth and set(auth.values()) <= {"[redacted: x-api-key header]", "[redacted: authorization header]"}
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
    trace = Trace(tmp_path / "x.trace", redactor_for(tmp_path))
    trace.record(ae.Notice("the tool printed tok-9f8e7d6c5b4a"))
    trace.close()
    line = (tmp_path / "x.trace" / "events.jsonl").read_text()
    assert "tok-9f8e7d6c5b4a" not in line and line.count("[redacted: MY_SERVICE_TOKEN]") == 1


HOSTILE_SECRET = 'pa"ss\\wo/rd+x=é€-0123'
FORMS_SCRIPT = """
import base64, json, os, urllib.parse
s = os.environ["MY_DB_PASSWORD"]
print(s)
print(json.dumps(s))
print(json.dumps(s, ensure_ascii=False))
print(urllib.parse.quote(s, safe=""))
print(urllib.parse.quote_plus(s))
print(base64.b64encode(s.encode()).decode())
print(base64.urlsafe_b64encode(s.encode()).decode())
print(base64.b64encode(("x" + s).encode()).decode())
"""


def encoded_forms(secret: str) -> list[str]:
    raw = secret.encode()
    return [
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        base64.b64encode(b"x" + raw).decode()[2:-2],
    ]


def test_a_hostile_secret_is_redacted_in_every_form_in_every_trace_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, larik_dirs: dict[str, Path]
) -> None:
    monkeypatch.setenv("MY_DB_PASSWORD", HOSTILE_SECRET)
    (project / "forms.py").write_text(FORMS_SCRIPT)
    replies = [
        {"content": [{"type": "tool_use", "name": "bash", "input": {"command": f"{sys.executable} forms.py"}}]},
        {"content": [{"type": "text", "text": f"The password is {HOSTILE_SECRET} indeed."}]},
    ]
    # One fragment per delta: a secret split across streamed deltas is beyond any text match.
    with ScriptedHTTPServer(replies, api_key=KEY, fragment=1000) as running:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", running.anthropic_base_url)
        agent = Agent(project, model="anthropic:claude-test", yes=True)
        trace = start_trace(agent.loop)
        outcome = agent.run("show me the forms")
        agent.close()
    assert outcome.status == "done" and HOSTILE_SECRET in outcome.text  # the secret did flow
    files = {p: p.read_text(encoding="utf-8") for p in trace.directory.rglob("*") if p.is_file()}
    assert {p.name for p in files} >= {"events.jsonl", "0002-request.json", "0002-response.json", "0002-response.body"}
    leaks = [(p.name, form) for p, text in files.items() for form in encoded_forms(HOSTILE_SECRET) if form in text]
    assert leaks == []
    assert "[redacted: MY_DB_PASSWORD]" in files[trace.directory / "http" / "0002-request.json"]
    assert "[redacted: MY_DB_PASSWORD]" in files[trace.directory / "http" / "0002-response.body"]
    for line in files[trace.directory / "events.jsonl"].splitlines():
        json.loads(line)  # redaction keeps every line valid JSON
    json.loads(files[trace.directory / "http" / "0002-request.json"])
