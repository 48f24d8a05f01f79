"""What the widgets' buttons do, through the same Agent calls as the `%larik` commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from larik_jupyter.api import Agent
from larik_jupyter.checkpoint.store import UndoResult
from larik_jupyter.errors import LarikError
from larik_jupyter.session import catalog
from larik_jupyter.session.export import export_markdown

if TYPE_CHECKING:
    from larik_jupyter.notebook.magics import LarikMagics


def _idle(magics: LarikMagics) -> None:
    agent = magics.agent
    if agent is not None and agent.loop.running:
        raise LarikError("A turn is running; wait for it to end (or stop it), then click again.")


def _agent(magics: LarikMagics) -> Agent:
    if magics.agent is None:
        raise LarikError(
            "No session is open in this kernel yet; send a prompt or `%larik /resume --last` first."
        )
    return magics.agent


def resume(magics: LarikMagics, session_id: str) -> Agent:
    """Continue `session_id` in this kernel, as `%larik /resume ID`."""
    _idle(magics)
    return magics.resume_session(session_id)


def rewind(magics: LarikMagics, session_id: str, n: int) -> str:
    """Branch `session_id` just before its prompt `n` (1-based) and continue there, as
    `%larik /resume ID` then `%larik /rewind N`; returns the `%%larik` cell to edit."""
    agent = resume(magics, session_id)
    return "%%larik\n" + agent.rewind(n)


def fork(magics: LarikMagics, session_id: str, n: int | None = None) -> Path:
    """Branch `session_id` after the turn of its prompt `n` (default: at its end) and continue
    there: `/fork` at the last prompt, else exactly what `/rewind N+1` makes."""
    agent = resume(magics, session_id)
    prompts = len(agent.loop.session.state.prompt_indexes)
    if n is not None and not 1 <= n <= prompts:
        raise LarikError(
            f"Session {session_id} has {prompts} prompt(s); choose a prompt from 1 to {prompts}."
        )
    if n is None or n == prompts:
        return agent.fork()
    agent.rewind(n + 1)
    return agent.session_path


def undo(magics: LarikMagics) -> UndoResult:
    """Revert the newest turn of the current session that changed files, as `%larik /undo`."""
    _idle(magics)
    result: UndoResult = _agent(magics).undo()
    return result


def export(magics: LarikMagics, session_id: str) -> Path:
    """Write `session_id` as Markdown under `<cwd>/.larik/exports/`, as `/export`."""
    path = catalog.resolve(session_id, magics.cwd)
    agent = magics.agent
    if agent is not None and agent.session_path == path:
        agent.loop.session.sync()
    return export_markdown(path, None, cwd=magics.cwd)


def delete(magics: LarikMagics, session_id: str) -> Path:
    """Remove a session with its agents, trace and checkpoints, as `%larik /delete ID`: the
    same validated delete as the CLI and the server."""
    agent = magics.agent
    if agent is not None and session_id in (agent.session_id, str(agent.session_path)):
        raise LarikError("That is the open session; `%larik /new` first, then delete it.")
    return catalog.delete(session_id, magics.cwd)
