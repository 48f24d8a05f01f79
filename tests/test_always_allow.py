""""Always allow", for every tool that asks, through the agent as a front end drives it: the
person answers "always" once, the rule saved covers the next identical call (no second ask),
and a call the rule does not cover is still asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from larik_jupyter import Agent
from larik_jupyter.agent import events as ae
from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
from larik_jupyter.config.layers import private_settings_path
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.registry import BUILTIN_TOOLS
from tests.agent_helpers import scripted, text, tool

# Each asking tool: the call answered "always" (made again, identically), the rule that answer
# saves, and a call that rule does not cover. A notebook call without `path` acts on the
# kernel's own notebook (a.ipynb), which the rule then names.
CASES: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "write": ({"path": "a.txt", "content": "1"}, "write(./a.txt)", {"path": "b.txt", "content": "1"}),
    "edit": ({"path": "app.py", "old_string": "x", "new_string": "y"}, "edit(./app.py)",
             {"path": "lib.py", "old_string": "x", "new_string": "y"}),
    "multi_edit": ({"path": "app.py", "edits": [{"old_string": "x", "new_string": "y"}]}, "multi_edit(./app.py)",
                   {"path": "lib.py", "edits": [{"old_string": "x", "new_string": "y"}]}),
    "bash": ({"command": "echo hi"}, "bash(echo hi)", {"command": "echo bye"}),
    "notebook_edit": ({"cell_id": "c", "new_source": "x = 2"}, "notebook_edit(./a.ipynb)",
                      {"path": "b.ipynb", "cell_id": "c", "new_source": "x = 2"}),
    "notebook_run": ({"cell_id": "c"}, "notebook_run(./a.ipynb)", {"path": "b.ipynb", "cell_id": "c"}),
    # A notebook that is not there: the check fails at once, after the permission was decided.
    "notebook_check": ({"path": "gone.ipynb"}, "notebook_check(./gone.ipynb)", {"path": "other.ipynb"}),
    # "Always" for python covers every python call in this project (the notice says so): what it
    # does not cover is the same call in another project.
    "python": ({"code": "y = 1"}, "python", {"code": "y = 1"}),
}


def _project(root: Path) -> Path:
    root.mkdir()
    (root / ".git").mkdir()
    (root / "app.py").write_text("x = 1\n")
    (root / "lib.py").write_text("x = 1\n")
    for name in ("a.ipynb", "b.ipynb"):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1", id="c")]
        nbformat.write(nb, root / name)
    return root


def test_every_asking_tool_has_a_case() -> None:
    assert {cls.name for cls in BUILTIN_TOOLS if cls.default_permission == "ask"} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_always_allow_covers_the_next_identical_call_and_no_other(name: str, tmp_path: Path) -> None:
    call, rule, other = CASES[name]
    root = _project(tmp_path / "proj")
    elsewhere = _project(tmp_path / "elsewhere")
    asked: list[PermissionRequest] = []

    async def approver(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer("always" if len(asked) == 1 else "deny")

    turns = [[tool(name, **call)], [text("ok")]] * 2
    spec = scripted(tmp_path, *turns, [tool(name, **other)], [text("ok")])
    agent = Agent(root, model=spec, approver=approver, host=KernelHost({}))
    notices: list[str] = []
    agent.subscribe(lambda e: notices.append(e.text) if isinstance(e, ae.Notice) else None)
    own = root / "a.ipynb"
    agent.run("first", notebook=own)
    assert [r.tool for r in asked] == [name]
    assert json.loads(private_settings_path(root).read_text())["permissions"]["allow"] == [rule]
    assert any(f"saved the rule `{rule}`" in n for n in notices)
    agent.run("the same call again", notebook=own)
    assert len(asked) == 1, f"{name}: the rule {rule} did not cover the identical call"
    if name == "python":
        agent.close()
        spec = scripted(tmp_path, [tool(name, **other)], [text("ok")])
        agent = Agent(elsewhere, model=spec, approver=approver, host=KernelHost({}))
        own = elsewhere / "a.ipynb"
    agent.run("another call", notebook=own)
    assert len(asked) == 2 and asked[1].tool == name, f"{name}: the rule {rule} covered a call it should not"
    agent.close()
