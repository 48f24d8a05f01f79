"""The package's public surface: what `from larik_jupyter import …` gives a script or a front end."""

from __future__ import annotations

import subprocess
import sys

import larik_jupyter


def test_the_types_agent_methods_take_and_return_are_exported() -> None:
    assert set(larik_jupyter.__all__) >= {
        "Agent", "TurnOutcome", "UndoResult", "SessionRecords", "PermissionRequest", "PermissionAnswer",
        "LarikError", "current",
    }
    from larik_jupyter.agent.permissions import PermissionAnswer, PermissionRequest
    from larik_jupyter.api import TurnOutcome
    from larik_jupyter.errors import LarikError

    assert larik_jupyter.TurnOutcome is TurnOutcome
    assert larik_jupyter.PermissionRequest is PermissionRequest
    assert larik_jupyter.PermissionAnswer is PermissionAnswer
    assert larik_jupyter.LarikError is LarikError
    assert larik_jupyter.current() is None  # no extension loaded in this process


def test_an_approver_needs_only_the_package() -> None:
    code = (
        "from larik_jupyter import Agent, PermissionAnswer, PermissionRequest\n"
        "async def approver(request: PermissionRequest) -> PermissionAnswer:\n"
        "    return PermissionAnswer('allow')\n"
        "import tempfile\n"
        "agent = Agent(tempfile.mkdtemp(), model='scripted:demo', approver=approver)\n"
        "outcome = agent.run('go')\n"
        "print(outcome.status)\n"
        "agent.close()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "done"
