"""MCP servers over stdio: a small server written here with the SDK, and the published mcp-server-time."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter import Agent, paths
from larik_jupyter.agent.mcp import McpManager
from larik_jupyter.agent.mcp_status import status_table, tool_name
from larik_jupyter.config.layers import load_config
from larik_jupyter.config.model import McpServer
from larik_jupyter.config.update import approve
from larik_jupyter.testing import ScriptedHTTPServer
from larik_jupyter.testing.api_rules import TOOL_NAME
from tests.agent_helpers import done, personal, results_of, scripted, tool, wire_model
from tests.process_helpers import exited, wait_until

TINY = Path(__file__).parent / "mcp_servers" / "tiny_server.py"
TINY_SERVER = {"command": sys.executable, "args": [str(TINY)]}


def time_server() -> dict[str, Any]:
    exe = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    assert exe, "mcp-server-time is part of the test extras; pip install mcp-server-time"
    return {"command": exe, "args": ["--local-timezone", "UTC"]}


def test_tools_are_listed_called_and_logged(project: Path, tmp_path: Path) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER, "time": time_server()}})
    spec = scripted(
        tmp_path,
        [tool("mcp__tiny__add", a=2, b=40)],
        [tool("mcp__time__get_current_time", timezone="UTC")],
        [tool("mcp__tiny__write_note", path="note.txt", text="hello")],
        done(),
    )
    agent = Agent(project, model=spec, yes=True)
    try:
        assert {"mcp__tiny__add", "mcp__tiny__echo", "mcp__time__get_current_time"} <= set(agent.loop.tools)
        schema = agent.loop.tools["mcp__time__get_current_time"].input_schema
        assert schema["required"] == ["timezone"]
        outcome = agent.run("use the servers")
        assert outcome.status == "done"
        added, now, note = results_of(agent)
        assert added.content == "42" and not added.is_error
        assert '"timezone": "UTC"' in now.content and not now.is_error
        # MCP tools change files behind the checkpoints' back, and the transcript says so.
        assert "note.txt" in note.content and "not undoable" in note.content
        table = status_table(agent.loop.mcp.statuses())  # type: ignore[union-attr]
        assert "| `tiny` | running |" in table and "`mcp__time__convert_time`" in table
    finally:
        agent.close()
    log = paths.logs_dir() / "mcp-tiny.log"
    assert "tiny server: starting" in log.read_text()


def test_a_server_crashing_mid_call_gives_an_error_result_and_the_turn_goes_on(
    project: Path, tmp_path: Path
) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}})
    spec = scripted(tmp_path, [tool("mcp__tiny__crash")], [tool("mcp__tiny__echo", text="hi")], done("Recovered."))
    agent = Agent(project, model=spec, yes=True)
    try:
        started = time.monotonic()
        outcome = agent.run("crash it")
        assert time.monotonic() - started < 60  # the crash was seen: not the 120 s call timeout
        assert outcome.status == "done" and outcome.text == "Recovered."
        crashed, after = results_of(agent)
        assert crashed.is_error and "crashed" in crashed.content and "mcp-tiny.log" in crashed.content
        assert after.is_error and "is not running" in after.content
        (status,) = agent.loop.mcp.statuses()  # type: ignore[union-attr]
        assert status.state == "failed" and "crashed" in status.reason
    finally:
        agent.close()
    assert "crashing on purpose" in (paths.logs_dir() / "mcp-tiny.log").read_text()


def test_a_hung_call_times_out_and_closing_does_not_hang(project: Path) -> None:
    manager = McpManager({"tiny": McpServer(**TINY_SERVER)}, cwd=project, call_timeout=1.0)
    manager.start()
    server = int(manager.call("tiny", "pid", {}).content)
    try:
        started = time.monotonic()
        result = manager.call("tiny", "hang", {"seconds": 120})
        assert result.is_error and "did not answer hang within 1 s" in result.content
        assert time.monotonic() - started < 30  # the 1 s call timeout, not the 120 s hang
        assert manager.call("tiny", "echo", {"text": "still here"}).content == "still here"
    finally:
        started = time.monotonic()
        manager.close()
        # Not waiting out the hang: close gives up on a server after 10 s, and on its thread after 10 more.
        assert time.monotonic() - started < 10
        wait_until(lambda: exited(server), "close to end the server still busy with the hung call")


def test_a_server_that_cannot_start_is_reported_failed(project: Path) -> None:
    personal({"mcpServers": {"broken": {"command": str(project / "no-such-server")}}})
    agent = Agent(project, model="scripted:demo", yes=True)
    try:
        assert any("`broken` failed to start" in n for n in agent.notices)
        (status,) = agent.loop.mcp.statuses()  # type: ignore[union-attr]
        assert status.state == "failed"
        assert not any(name.startswith("mcp__") for name in agent.loop.tools)
    finally:
        agent.close()


def test_calls_go_through_permissions(project: Path, tmp_path: Path) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}})
    spec = scripted(tmp_path, [tool("mcp__tiny__echo", text="x")], done())
    agent = Agent(project, model=spec)
    try:
        agent.run("echo")
        (denied,) = results_of(agent)
        assert denied.is_error and "Permission denied" in denied.content
    finally:
        agent.close()
    personal({"mcpServers": {"tiny": TINY_SERVER}, "permissions": {"allow": ["mcp__tiny__*"]}})
    agent = Agent(project, model=scripted(tmp_path, [tool("mcp__tiny__echo", text="x")], done()))
    try:
        agent.run("echo")
        (allowed,) = results_of(agent)
        assert allowed.content == "x" and not allowed.is_error
    finally:
        agent.close()


def test_an_untrusted_server_starts_only_once_approved_and_loses_approval_when_changed(
    project: Path, tmp_path: Path
) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tiny": TINY_SERVER}}))
    agent = Agent(project, model=scripted(tmp_path, [tool("mcp__tiny__echo", text="x")], done()), yes=True)
    try:
        assert any("larik-jupyter approve tiny" in n for n in agent.notices)
        assert "mcp__tiny__echo" not in agent.loop.tools
        assert "awaiting approval" in status_table(agent.loop.mcp.statuses())  # type: ignore[union-attr]
        agent.run("echo")
        (refused,) = results_of(agent)
        assert refused.is_error and "Unknown tool `mcp__tiny__echo`" in refused.content
    finally:
        agent.close()

    approve(project, "tiny")
    agent = Agent(project, model=scripted(tmp_path, [tool("mcp__tiny__echo", text="y")], done()), yes=True)
    try:
        agent.run("echo")
        (ran,) = results_of(agent)
        assert ran.content == "y"
    finally:
        agent.close()

    changed = {**TINY_SERVER, "args": [str(TINY), "--verbose"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tiny": changed}}))
    assert [p.name for p in load_config(project).pending] == ["tiny"]
    agent = Agent(project, model="scripted:demo", yes=True)
    try:
        assert "mcp__tiny__echo" not in agent.loop.tools
        assert any("awaits your approval" in n for n in agent.notices)
    finally:
        agent.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_server_over_streamable_http(project: Path, tmp_path: Path) -> None:
    port = free_port()
    log = open(tmp_path / "http-server.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen([sys.executable, str(TINY), "--http", str(port)], stderr=log, stdout=log)
    try:
        def listening() -> bool:
            assert process.poll() is None, (tmp_path / "http-server.log").read_text()
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, f"the HTTP MCP server to listen on port {port}")
        manager = McpManager({"web": McpServer(url=f"http://127.0.0.1:{port}/mcp")}, cwd=project)
        manager.start()
        try:
            (status,) = manager.statuses()
            assert status.state == "running", status.reason
            assert "mcp__web__add" in manager.tools()
            assert manager.call("web", "add", {"a": 20, "b": 22}).content == "42"
        finally:
            manager.close()
    finally:
        process.kill()
        process.wait()
        log.close()


LONG = "analytics-warehouse-of-the-whole-company-with-a-long-name-for-tests"


def test_long_names_stay_distinct_and_the_tools_keep_one_order(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenAI's function-calling guide and Anthropic's tool use docs: tool names match
    `^[a-zA-Z0-9_-]{1,64}$` (and must be unique). Cutting two long names to 64 characters
    used to make them one; approving a server mid-session used to reorder the tools array,
    the start of every request's cached prefix."""
    personal({"mcpServers": {LONG: TINY_SERVER}})
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tiny": TINY_SERVER}}))
    add = tool_name(LONG, "add")
    script = [[tool(add, a=2, b=40)], done(), done("Again."), done("Fresh.")]
    with ScriptedHTTPServer([{"content": c} for c in script], api_key="k") as server:
        model = wire_model("anthropic", server, "k", monkeypatch)
        agent = Agent(project, model=model, yes=True)
        try:
            assert agent.run("add").status == "done"
            (added,) = results_of(agent)
            assert added.content == "42" and not added.is_error
            # The transcript records the name the model saw.
            assert agent.loop.session.state.all[1].tool_uses()[0].name == add
            agent.config.approve("tiny")
            assert agent.run("again").status == "done"
        finally:
            agent.close()
        fresh = Agent(project, model=model, yes=True)
        try:
            assert fresh.run("fresh").status == "done"
        finally:
            fresh.close()
        names = [[t["name"] for t in r.body["tools"]] for r in server.requests]
    long_names = [n for n in names[0] if n.startswith("mcp__analytics")]
    # The tiny server's six tools, each under its own valid name.
    assert len(set(long_names)) == 6 and all(TOOL_NAME.match(n) for n in long_names)
    tiny = {n for n in names[2] if n.startswith("mcp__tiny__")}
    assert len(tiny) == 6
    assert names[0] == names[1]
    # After the approval the tiny server's tools join in their sorted place, and a fresh
    # session offers the same array in the same order.
    assert names[2] == names[3] and set(names[2]) - set(names[0]) == tiny
    mcp = [n for n in names[2] if n.startswith("mcp__")]
    assert mcp == sorted(mcp) and names[2][: -len(mcp)] == names[0][: -len(long_names)]
