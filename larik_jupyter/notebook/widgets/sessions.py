"""The sessions browser (`%larik /sessions`): this directory's sessions as a sortable table with
resume, fork, export and delete."""

from __future__ import annotations

import os
import pathlib
from pathlib import Path
from typing import Any

import traitlets

from larik_jupyter.errors import LarikError
from larik_jupyter.llm.pricing import cost_label
from larik_jupyter.notebook.widgets import esm
from larik_jupyter.notebook.widgets.actions import Action, Ping, Resume
from larik_jupyter.notebook.widgets.session_widget import SessionWidget, escape, refresh_all
from larik_jupyter.session import branch, catalog

_HERE = pathlib.Path(__file__).parent


def sessions_data(cwd: str | os.PathLike[str], current: str | None = None) -> dict[str, Any]:
    """The JSON the browser renders: `rows` (the session last written to first) and `current`."""
    rows = []
    for info in catalog.list_sessions(cwd):
        u = info.usage
        rows.append({
            "id": info.id,
            "time": info.time,
            "updated": info.updated,
            "held": info.held,
            "model": info.model,
            "fork_prompt": info.fork_prompt,
            "first_prompt": info.first_prompt or "",
            "messages": info.message_count,
            "input_tokens": u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
            "output_tokens": u.output_tokens,
            "cost": info.cost,
            "cost_label": cost_label(info.cost),
            "fork_of": info.fork_of,
            "fork_at": info.fork_at,
            "interrupted": info.interrupted,
            "error": info.error,
        })
    return {"cwd": os.fspath(cwd), "current": current, "rows": rows}


def _branch_text(row: dict[str, Any]) -> str:
    """`branched after prompt N of ID`, as the tree says it; empty for a root."""
    return branch.fork_label(row["fork_of"], row["fork_prompt"], name_source=True) or ""


class Fork(Action, tag="fork"):
    """Branch `session` at its end and continue there."""

    session: str


class Export(Action, tag="export"):
    """Write `session` as Markdown."""

    session: str


class Delete(Action, tag="delete"):
    """Remove `session`: only with `confirm`, sent after the user confirmed."""

    session: str
    confirm: bool = False


class SessionsBrowser(SessionWidget):
    """This working directory's sessions, with resume, fork, export and a confirmed delete.

    Parameters: `kernel` (the kernel's `KernelSession`). The front end sends `Resume`, `Fork`,
    `Export` and `Delete` (the last only with `confirm`, after asking the user).
    """

    ACTIONS = Resume | Fork | Export | Delete | Ping
    NAME = "sessions browser"
    COMMAND = "/sessions"

    _esm = esm("sessions")
    _css = _HERE / "widgets.css"

    sessions = traitlets.Dict(help="the table as computed by `sessions_data`").tag(sync=True)

    def act(self, action: Action) -> None:
        if isinstance(action, Resume):
            self.resume(action.session)
        elif isinstance(action, Fork):
            self.fork(action.session)
        elif isinstance(action, Export):
            self.export(action.session)
        elif isinstance(action, Delete):
            if not action.confirm:
                raise LarikError("Deleting a session needs confirmation; click Delete, then confirm.")
            self.delete(action.session)

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        self.sessions = self.directory_data(memo, sessions_data)

    def static_html(self) -> str:
        rows = self.sessions.get("rows", [])
        if not rows:
            return "<p>No sessions in this directory yet.</p>"
        body = "".join(
            f"<tr><td><code>{escape(r['id'])}</code></td><td>{escape(r['updated'])}</td>"
            f"<td>{escape(r['first_prompt'])}</td><td>{r['messages']}</td>"
            f"<td>{escape(_branch_text(r))}</td></tr>"
            for r in rows
        )
        head = "<tr><th>id</th><th>last active</th><th>first prompt</th><th>messages</th><th>branch</th></tr>"
        return f"<table class='larik-sessions-static'>{head}{body}</table>"

    def static_text(self) -> str:
        rows = self.sessions.get("rows", [])
        if not rows:
            return "No sessions in this directory yet."
        return "\n".join(
            f"{r['id']}  last active {r['updated']}  {r['messages']} msgs  {r['first_prompt']}"
            + (f"  ({_branch_text(r)})" if r["fork_of"] else "")
            + ("  (open in a kernel)" if r["held"] else "")
            for r in rows
        )

    def resume(self, session_id: str) -> None:
        """Continue `session_id` in this kernel, as `%larik /resume ID`."""
        self.kernel.resume(session_id)
        self.status = f"Resumed {session_id}."
        refresh_all()

    def fork(self, session_id: str) -> Path:
        """Branch `session_id` at its end and continue there, as `/resume ID` then `/fork`."""
        path = self.kernel.fork(session_id=session_id)
        self.status = f"Forked {session_id}; now on {path.stem}."
        refresh_all()
        return path

    def export(self, session_id: str) -> Path:
        """Write `session_id` as Markdown under `.larik/exports/`; returns the file."""
        out = self.kernel.export(session_id)
        self.status = f"Exported {session_id} to {out}."
        return out

    def delete(self, session_id: str) -> Path:
        """Remove `session_id` with its agents, trace and checkpoints, as `%larik /delete ID`."""
        path = self.kernel.delete(session_id)
        self.status = f"Deleted {session_id} with its checkpoints."
        refresh_all()
        return path
