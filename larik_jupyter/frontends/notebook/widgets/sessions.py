"""The sessions browser (`%larik /sessions`): this directory's sessions as a sortable table with
resume, fork, export and delete."""

from __future__ import annotations

import os
import pathlib
from pathlib import Path
from typing import Any

import msgspec
import traitlets

from larik_jupyter.api import LarikError, cost_label, fork_label, list_sessions
from larik_jupyter.frontends.notebook.widgets import esm
from larik_jupyter.frontends.notebook.widgets.actions import Action, Ping, Resume
from larik_jupyter.frontends.notebook.widgets.session_widget import (
    SessionWidget,
    escape,
    refresh_all,
)

_HERE = pathlib.Path(__file__).parent


class SessionRow(msgspec.Struct, kw_only=True):
    """One session as the browser lists it."""

    id: str
    time: str
    updated: str
    held: bool
    model: str | None
    fork_prompt: int | None
    first_prompt: str
    messages: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    cost_label: str
    fork_of: str | None
    fork_at: int | None
    interrupted: str | None
    error: str | None

    def branch_text(self) -> str:
        """`branched after prompt N of ID`, as the tree says it; empty for a root."""
        return fork_label(self.fork_of, self.fork_prompt, name_source=True) or ""


class SessionsTable(msgspec.Struct, kw_only=True):
    """What the browser renders (its `sessions` trait): the sessions of `cwd`, the one last
    written to first, and the kernel's `current` one."""

    cwd: str
    current: str | None
    rows: list[SessionRow]


def sessions_data(cwd: str | os.PathLike[str], current: str | None = None) -> SessionsTable:
    """The table of `cwd`'s sessions, `current` the kernel's."""
    rows = []
    for info in list_sessions(cwd):
        u = info.usage
        rows.append(SessionRow(
            id=info.id,
            time=info.time,
            updated=info.updated,
            held=info.held,
            model=info.model,
            fork_prompt=info.fork_prompt,
            first_prompt=info.first_prompt or "",
            messages=info.message_count,
            input_tokens=u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
            output_tokens=u.output_tokens,
            cost=info.cost,
            cost_label=cost_label(info.cost),
            fork_of=info.fork_of,
            fork_at=info.fork_at,
            interrupted=info.interrupted,
            error=info.error,
        ))
    return SessionsTable(cwd=os.fspath(cwd), current=current, rows=rows)


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

    sessions = traitlets.Dict(help="the table (`SessionsTable`) as JSON").tag(sync=True)
    table: SessionsTable  # what `sessions` shows, set by `refresh`

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
        self.table = self.directory_data(memo, sessions_data)
        self.sessions = msgspec.to_builtins(self.table)

    def static_html(self) -> str:
        rows = self.table.rows
        if not rows:
            return "<p>No sessions in this directory yet.</p>"
        body = "".join(
            f"<tr><td><code>{escape(r.id)}</code></td><td>{escape(r.updated)}</td>"
            f"<td>{escape(r.first_prompt)}</td><td>{r.messages}</td>"
            f"<td>{escape(r.branch_text())}</td></tr>"
            for r in rows
        )
        head = "<tr><th>id</th><th>last active</th><th>first prompt</th><th>messages</th><th>branch</th></tr>"
        return f"<table class='larik-sessions-static'>{head}{body}</table>"

    def static_text(self) -> str:
        rows = self.table.rows
        if not rows:
            return "No sessions in this directory yet."
        return "\n".join(
            f"{r.id}  last active {r.updated}  {r.messages} msgs  {r.first_prompt}"
            + (f"  ({r.branch_text()})" if r.fork_of else "")
            + ("  (open in a kernel)" if r.held else "")
            for r in rows
        )

    def resume(self, session_id: str) -> None:
        """Continue `session_id` in this kernel, as `%larik /resume ID`."""
        self.kernel.open(resume=session_id)
        self.status = f"Resumed {session_id}."
        refresh_all()

    def fork(self, session_id: str) -> Path:
        """Branch `session_id` at its end and continue there, as `/resume ID` then `/fork`."""
        path = self.kernel.sessions.fork(session=session_id)
        self.status = f"Forked {session_id}; now on {path.stem}."
        refresh_all()
        return path

    def export(self, session_id: str) -> Path:
        """Write `session_id` as Markdown under `.larik/exports/`; returns the file."""
        out = self.kernel.sessions.export(session=session_id)
        self.status = f"Exported {session_id} to {out}."
        return out

    def delete(self, session_id: str) -> Path:
        """Remove `session_id` with its agents, trace and checkpoints, as `%larik /delete ID`."""
        path = self.kernel.sessions.delete(session_id)
        self.status = f"Deleted {session_id} with its checkpoints."
        refresh_all()
        return path
