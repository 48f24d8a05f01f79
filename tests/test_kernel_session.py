"""Commands and widget actions against a `KernelSession` with no IPython shell: the kernel's one
agent, the idle guard, and what each action writes; plus the layering the notebook keeps."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

import larik_jupyter.frontends.notebook as notebook_package
from larik_jupyter.errors import LarikError
from larik_jupyter.frontends.notebook import commands
from larik_jupyter.frontends.notebook.kernel import KernelSession
from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel
from tests.agent_helpers import done, scripted, tool
from tests.process_helpers import await_until


def text_of(items: list[Any]) -> str:
    """What a text-only front end prints of the outputs: Markdown source, a widget's text."""
    return "\n".join(i.data if hasattr(i, "data") else i.static_text() for i in items)


def run(kernel: KernelSession, line: str) -> str:
    shown: list[Any] = []
    commands.run(kernel, commands.parse_command(line), commands.Output(shown.append))
    return text_of(shown)


def test_commands_run_without_a_shell(project: Path, tmp_path: Path) -> None:
    model = scripted(tmp_path, [tool("write", path="a.txt", content="a\n")], done("Wrote it."))
    cells: list[str] = []
    session = KernelSession(project, model=model, yes=True, set_next_cell=cells.append)
    assert "No session yet" in run(session, "/model")
    with pytest.raises(LarikError, match="No session is open"):
        run(session, "/usage")
    agent = session.ensure()
    agent.run("write a.txt")
    assert (project / "a.txt").read_text() == "a\n"
    assert f"Session `{agent.session_id}`:" in run(session, "/usage")
    assert "Undid prompt 1." in run(session, "/undo") and not (project / "a.txt").exists()
    source = agent.session_id
    assert "Rewound" in run(session, "/rewind 1")
    assert cells == ["%%larik\nwrite a.txt"] and session.require().session_id != source
    assert "Deleted session" in run(session, f"/delete {source}")
    with pytest.raises(LarikError, match="That is the open session"):
        run(session, f"/delete {session.require().session_id}")
    session.close()


def test_every_session_switch_is_refused_while_a_turn_runs(project: Path, tmp_path: Path) -> None:
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"responses": [
        {"content": [{"type": "text", "text": "first"}]},
        {"content": [{"type": "text", "text": "slow"}], "delay": 5},
    ]}))
    session = KernelSession(project, model=f"scripted:{script}", yes=True)
    agent = session.ensure()
    agent.run("first")
    first = agent.session_id

    async def during_a_turn() -> list[str]:
        task = asyncio.create_task(agent.arun("slow"))
        await await_until(lambda: agent.running, "the slow turn to start")
        refused = []
        for action in (lambda: session.open(resume=first), lambda: session.open(), lambda: agent.fork(),
                       lambda: agent.rewind(1), lambda: session.require().undo(),
                       lambda: UndoPanel(session).undo()):
            with pytest.raises(LarikError, match="A turn is running") as info:
                action()
            refused.append(str(info.value))
        agent.stop()
        await task
        return refused

    assert len(asyncio.run(during_a_turn())) == 6
    assert session.require().session_id == first
    session.close()


def test_the_notebook_layer_goes_through_agent_and_kernel_session_only() -> None:
    package = Path(notebook_package.__file__).parent
    for path in package.rglob("*.py"):
        source = path.read_text()
        assert not re.search(r"\.loop\.", source), f"{path} reaches around Agent into its loop"
        if path.name != "extension.py":
            assert "notebook.magics" not in source, f"{path} imports the magics"


def test_a_pending_shared_config_is_shown_by_the_front_end_not_built_here(project: Path) -> None:
    # KernelSession builds no widget: without `show_pending` its notices say what awaits
    # approval; with it, the front end gets the pending items and the notices step aside.
    server = {"command": "python", "args": ["-c", "pass"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"tiny": server}}))
    shown: list[Any] = []
    plain = KernelSession(project, model="scripted:demo", show=shown.append)
    try:
        plain.ensure()
        assert "awaits your approval" in text_of(shown)
        assert all(hasattr(item, "data") for item in shown)  # Markdown only, no widget
    finally:
        plain.require().close()
    shown.clear()
    handed: list[list[Any]] = []
    front = KernelSession(project, model="scripted:demo", show=shown.append, show_pending=handed.append)
    try:
        front.ensure()
        assert [[p.key for p in pending] for pending in handed] == [["mcp:tiny"]]
        assert "awaits your approval" not in text_of(shown)
    finally:
        front.require().close()
