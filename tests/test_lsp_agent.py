"""Diagnostics in real agent turns: after write/edit/multi_edit, the `diagnostics` tool, `/lsp`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output

from larik_jupyter import Agent
from larik_jupyter.frontends.notebook import commands
from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.frontends.notebook.parser import Command, parse_magic
from larik_jupyter.frontends.notebook.render import ToolPart, render_tool
from tests.agent_helpers import results_of, scripted, tool

PYLSP = str(Path(sys.executable).parent / "pylsp")


def configure(larik_dirs: dict[str, Path], servers: dict[str, Any]) -> None:
    larik_dirs["config"].mkdir(parents=True, exist_ok=True)
    (larik_dirs["config"] / "config.json").write_text(json.dumps({"lspServers": servers}))


def test_file_tools_return_diagnostics_and_the_tool_reports_them(
    project: Path, tmp_path: Path, larik_dirs: dict[str, Path]
) -> None:
    configure(larik_dirs, {"pylsp": {"command": PYLSP, "languages": ["python"]}})
    spec = scripted(
        tmp_path,
        [tool("write", path="app.py", content="def main():\n    return 1\n")],
        [tool("edit", path="app.py", old_string="return 1", new_string="return total")],
        [tool("diagnostics", path="app.py")],
        [tool("multi_edit", path="app.py", edits=[{"old_string": "return total", "new_string": "return 2"}])],
        [tool("diagnostics")],
        [{"type": "text", "text": "Done."}],
    )
    agent = Agent(project, model=spec, yes=True)
    try:
        assert "diagnostics" in agent.loop.tools
        assert agent.run("go").status == "done"
        write, edit, asked, multi, overall = (r.content for r in results_of(agent))
        assert write == "Created app.py (2 lines).\n\nDiagnostics (pylsp): no problems in app.py."
        assert edit.startswith("Edited app.py: replaced 1 occurrence.\n\nDiagnostics (pylsp): 1 error in app.py:")
        assert "line 2, col 12: error: undefined name 'total' (pyflakes)" in edit
        assert asked == edit.split("\n\n", 1)[1]
        assert multi.endswith("\n\nDiagnostics (pylsp): no problems in app.py.")
        assert overall == "Diagnostics (pylsp): no problems in app.py."
        assert (project / "app.py").read_text() == "def main():\n    return 2\n"
        assert [s.state for s in agent.loop.lsp.states()] == ["running"]
    finally:
        agent.close()
    assert [s.state for s in agent.loop.lsp.states()] == ["exited"]


def test_a_server_that_exits_at_once_leaves_the_edit_standing(
    project: Path, tmp_path: Path, larik_dirs: dict[str, Path]
) -> None:
    configure(larik_dirs, {"bad": {"command": sys.executable, "args": ["-c", "raise SystemExit(2)"],
                                   "patterns": ["*.py"]}})
    spec = scripted(
        tmp_path,
        [tool("write", path="a.py", content="x = 1\n")],
        [{"type": "text", "text": "Done."}],
    )
    agent = Agent(project, model=spec, yes=True)
    try:
        assert agent.run("go").status == "done"
        [result] = results_of(agent)
    finally:
        agent.close()
    assert not result.is_error
    assert result.content.startswith("Created a.py (1 line).\n\nDiagnostics (bad): unavailable — the server exited with code 2")
    assert (result.diff or "").endswith("+++ b/a.py\n@@ -0,0 +1 @@\n+x = 1\n")
    assert (project / "a.py").read_text() == "x = 1\n"


def test_servers_from_a_shared_layer_wait_for_approval(project: Path, larik_dirs: dict[str, Path]) -> None:
    (project / ".larik").mkdir()
    (project / ".larik" / "settings.json").write_text(
        json.dumps({"lspServers": {"evil": {"command": "/bin/false", "patterns": ["*"]}}})
    )
    agent = Agent(project, model="scripted:demo", yes=True)
    try:
        assert "evil" not in agent.loop.lsp.servers
    finally:
        agent.close()


def test_no_server_means_no_diagnostics_tool(project: Path, larik_dirs: dict[str, Path]) -> None:
    configure(larik_dirs, {"pylsp": {"command": PYLSP, "languages": ["python"], "enabled": False}})
    agent = Agent(project, model="scripted:demo", yes=True)
    try:
        assert agent.loop.lsp.servers == [] and "diagnostics" not in agent.loop.tools
    finally:
        agent.close()


def test_lsp_command_lists_servers_with_their_state(
    project: Path, larik_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(larik_dirs, {"pylsp": {"command": PYLSP, "languages": ["python"]}})
    assert parse_magic("/lsp") == Command("lsp", {})
    monkeypatch.chdir(project)
    magics = LarikMagics(shell=InteractiveShell.instance())
    with capture_output() as cap:
        commands.run(magics.kernel, Command("lsp", {}), commands.Output(display))
    table = cap.outputs[0].data["text/markdown"]
    assert "| server | state | pid | starts | open files | command | log |" in table
    assert f"| pylsp | not started |  | 0 | 0 | `{PYLSP}` |" in table
    assert "lsp-pylsp.log" in table


def test_notebook_shows_diagnostics_under_the_diff() -> None:
    part = ToolPart(
        id="t1", summary="edit: a.py", status="done",
        output="Edited a.py: replaced 1 occurrence.\n\nDiagnostics (pylsp): 1 error in a.py:\n"
               "  line 2, col 7: error: undefined name 'y' (pyflakes)",
        diff="--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n",
    )
    shown = render_tool(part)
    assert shown.index('class="larik-diff"') < shown.index("Diagnostics (pylsp): 1 error in a.py:")
    assert "undefined name 'y'" not in shown.split("</details>")[0]
