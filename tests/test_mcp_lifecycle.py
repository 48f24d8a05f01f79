"""MCP servers across session switches in one kernel, and a server that dies while idle."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from IPython.utils.capture import capture_output

from larik_jupyter import Agent, paths
from larik_jupyter.agent.mcp import PING_TIMEOUT, McpManager
from larik_jupyter.config.model import McpServer
from larik_jupyter.frontends.notebook.render import ToolPart, render_tool
from tests.agent_helpers import personal, scripted, text, tool
from tests.process_helpers import wait_until
from tests.widget_helpers import larik, shell_with_magics

TINY = Path(__file__).parent / "mcp_servers" / "tiny_server.py"
TINY_SERVER = {"command": sys.executable, "args": [str(TINY)]}


def server_pid(agent: Agent) -> int:
    return int(agent.loop.tools["mcp__tiny__pid"].run(agent.loop.env, {}).content)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_same_server_serves_fork_rewind_resume_and_new(project: Path, tmp_path: Path) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}})
    agent = Agent(project, model=scripted(tmp_path, [text("one")], [text("two")]), yes=True)
    try:
        pid = server_pid(agent)
        agent.run("first")
        agent.run("second")
        first = agent.session_id
        agent.fork()
        assert agent.session_id != first and server_pid(agent) == pid
        agent.rewind(2)
        assert server_pid(agent) == pid
        agent.resume(first)
        assert server_pid(agent) == pid
        agent.new()
        assert server_pid(agent) == pid
    finally:
        agent.close()
    assert _reaped_soon(pid)


def _reaped_soon(pid: int) -> bool:
    return wait_until(lambda: not alive(pid), f"the MCP server {pid} to exit")


def test_the_kernel_keeps_its_servers_across_new_and_restarts_a_changed_one(project: Path) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}})
    shell, magics = shell_with_magics(project, "scripted:demo")
    larik(shell, "/new")
    assert magics.agent is not None
    pid = server_pid(magics.agent)
    larik(shell, "/new")
    larik(shell, "/fork")
    assert server_pid(magics.agent) == pid
    # A changed definition is a different server: the old one stops, the new one starts.
    personal({"mcpServers": {"tiny": {**TINY_SERVER, "env": {"TINY_FLAVOUR": "b"}}}})
    larik(shell, "/new")
    changed = server_pid(magics.agent)
    assert changed != pid and _reaped_soon(pid)
    magics.agent.close()
    assert _reaped_soon(changed)


def test_mcp_shows_a_server_that_died_while_idle_as_failed(project: Path) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}})
    shell, magics = shell_with_magics(project, "scripted:demo")
    larik(shell, "/new")
    agent = magics.agent
    assert agent is not None and agent.loop.mcp is not None
    try:
        pid = server_pid(agent)
        os.kill(pid, signal.SIGKILL)
        assert _reaped_soon(pid)
        with capture_output() as listed:
            larik(shell, "/mcp")
        (table,) = [o.data["text/markdown"] for o in listed.outputs]
        assert "| `tiny` | failed: exited while idle (MCPError: Connection closed) |" in table
        # The next session in the kernel starts it again.
        larik(shell, "/new")
        (status,) = magics.agent.loop.mcp.statuses()  # type: ignore[union-attr]
        assert status.state == "running"
    finally:
        magics.agent.close()  # type: ignore[union-attr]


def test_a_server_busy_with_a_call_is_not_declared_dead(project: Path) -> None:
    manager = McpManager({"tiny": McpServer(**TINY_SERVER)}, cwd=project)
    manager.start()
    try:
        with ThreadPoolExecutor(1) as pool:
            busy = pool.submit(manager.call, "tiny", "hang", {"seconds": PING_TIMEOUT + 2})
            log = paths.logs_dir() / "mcp-tiny.log"
            wait_until(lambda: "hanging for" in log.read_text(), "the server to be busy with the call")
            (status,) = manager.check()
            assert status.state == "running"
            assert busy.result().content == "woke up"
    finally:
        manager.close()


def test_mcp_before_the_first_prompt_says_not_started(project: Path) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}})
    shell, magics = shell_with_magics(project, "scripted:demo")
    with capture_output() as listed:
        larik(shell, "/mcp")
    (table,) = [o.data["text/markdown"] for o in listed.outputs]
    assert "| `tiny` | not started |" in table
    assert magics.agent is None


def test_files_an_mcp_tool_changed_are_reported_as_changed_by_that_tool(
    project: Path, tmp_path: Path
) -> None:
    personal({"mcpServers": {"tiny": TINY_SERVER}, "permissions": {"allow": ["mcp__tiny__*"]}})
    model = scripted(tmp_path, [tool("mcp__tiny__write_note", path="note.txt", text="hi")], [text("ok")])
    cli = Path(sys.executable).parent / "larik-jupyter"
    run = subprocess.run(
        [str(cli), "run", "--cwd", str(project), "--model", model, "write a note"],
        capture_output=True, text=True, timeout=120,
    )
    assert "note.txt created by the tool `mcp__tiny__write_note`, not undoable" in run.stdout, run.stdout
    assert "by the shell" not in run.stdout
    view = render_tool(
        ToolPart(id="1", summary="x", name="mcp__tiny__write_note", uncaptured=[("note.txt", "created")])
    )
    assert "`note.txt` created by the tool `mcp__tiny__write_note` — **not undoable**" in view
