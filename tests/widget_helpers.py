"""Builders shared by the widget tests: a shell with `%larik` on scripted models in a project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from larik_jupyter.frontends.notebook.magics import LarikMagics
from larik_jupyter.frontends.notebook.widgets.session_widget import SessionWidget
from larik_jupyter.session.reader import load_entries
from larik_jupyter.testing import ScriptedHTTPServer
from tests.agent_helpers import scripted, text


def talkative(tmp_path: Path, n: int = 30) -> str:
    """A model that only ever answers with text."""
    return scripted(tmp_path, *([text(f"reply {i}")] for i in range(n)))


def shell_with_magics(project: Path, model: str) -> tuple[InteractiveShell, LarikMagics]:
    """A shell whose `%larik` works in `project` with `model`, allowing every tool call."""
    shell = InteractiveShell.instance()
    shell.reset()  # the instance is shared by every test: start from an empty namespace
    magics = LarikMagics(shell=shell)
    magics.cwd = project
    magics.model = model
    magics.yes = True
    shell.register_magics(magics)
    return shell, magics


def larik(shell: InteractiveShell, line: str) -> None:
    """What `%larik LINE` in a cell does."""
    shell.run_line_magic("larik", line)


def turn_sent(server: ScriptedHTTPServer, shell: InteractiveShell, line: str) -> str:
    """What the requests of one `%larik LINE` sent to `server`, as JSON text."""
    before = len(server.requests)
    larik(shell, line)
    return "\n".join(json.dumps(r.body, ensure_ascii=False) for r in server.requests[before:])


def shape(path: Path) -> list[Any]:
    """A session file without its ids and times: what two equal branches share."""
    out = []
    for entry in load_entries(path).entries:
        data = entry.to_json()
        for key in ("id", "parent_id", "time"):
            data.pop(key, None)
        out.append(data)
    return out


def click(widget: SessionWidget, **message: Any) -> None:
    """The comm message the front end's `model.send(message)` delivers when a button is clicked."""
    widget._handle_msg({"content": {"data": {"method": "custom", "content": message}}, "buffers": []})
