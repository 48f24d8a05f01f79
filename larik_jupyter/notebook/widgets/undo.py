"""The undo panel (`%larik /checkpoints`, and after `%larik /undo`): turns that changed files,
newest first, with their diffs and an undo button on the newest."""

from __future__ import annotations

import pathlib
from typing import Any

import traitlets

from larik_jupyter.api import Agent
from larik_jupyter.checkpoint.errors import CheckpointError
from larik_jupyter.checkpoint.store import UndoResult
from larik_jupyter.notebook.widgets import actions
from larik_jupyter.notebook.widgets.live import SessionWidget, escape, refresh_all
from larik_jupyter.tools.diff import snapshot_diff

_HERE = pathlib.Path(__file__).parent
# A diff longer than this is cut: the panel shows what changed, not whole generated files.
MAX_DIFF_CHARS = 100_000


def _file_diff(agent: Agent, turn: int, rel: str) -> dict[str, Any]:
    store = agent.loop.checkpoints
    try:
        before = store.original_bytes(turn, rel)
    except CheckpointError as exc:
        return {"path": rel, "diff": "", "error": str(exc)}
    target = store.root / rel
    try:
        now = target.read_bytes() if target.is_file() and not target.is_symlink() else None
    except OSError as exc:
        return {"path": rel, "diff": "", "error": f"{rel} cannot be read now: {exc.strerror}."}
    return {"path": rel, "diff": snapshot_diff(rel, before, now, limit=MAX_DIFF_CHARS), "error": None}


def undo_data(agent: Agent | None) -> dict[str, Any]:
    """The JSON the undo panel renders: the session and its turns with files, newest first.

    Each file's diff runs from its snapshot before the turn to what is on disk now.
    """
    if agent is None:
        return {"session": None, "turns": []}
    saved = list(reversed(agent.loop.checkpoints.turns()))
    turns = []
    for position, info in enumerate(saved):
        newest = position == 0
        why = None if newest else (
            f"Undo goes newest first: undo turn {saved[position - 1].turn} before this one."
        )
        turns.append({
            "turn": info.turn,
            "time": info.time.isoformat(),
            "files": [_file_diff(agent, info.turn, f.path) for f in info.files],
            "undoable": newest,
            "why": why,
        })
    return {"session": agent.session_id, "turns": turns}


def result_data(result: UndoResult) -> dict[str, Any]:
    """An undo's outcome as JSON: what was restored and what was not, with reasons."""
    return {
        "turn": result.turn,
        "restored": list(result.restored),
        "refused": [{"path": path, "reason": reason} for path, reason in result.refused],
        "removed_dirs": list(result.removed_dirs),
        "kept_dirs": [{"path": path, "reason": reason} for path, reason in result.kept_dirs],
        "ok": result.ok,
    }


class UndoPanel(SessionWidget):
    """The file-changing turns of the kernel's current session, with one-click undo.

    Parameters: `magics` (the kernel's `LarikMagics`), `result` (an undo just made, to show
    what it restored). The front end sends `undo`; `undo()` is the same action.
    """

    _esm = _HERE / "undo.js"
    _css = _HERE / "widgets.css"

    panel = traitlets.Dict(help="the turns as computed by `undo_data`").tag(sync=True)
    result = traitlets.Dict(help="the last undo's outcome (`result_data`), or empty").tag(sync=True)

    def __init__(self, magics: Any, result: UndoResult | None = None, **kwargs: Any) -> None:
        super().__init__(magics, **kwargs)
        if result is not None:
            self.result = result_data(result)

    def actions(self) -> dict[str, Any]:
        return {"undo": lambda m: self.undo()}

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        self.panel = undo_data(self.magics.agent)

    def _outcome_lines(self) -> list[str]:
        r = self.result
        if not r:
            return []
        head = f"Undid turn {r['turn']}." if r["ok"] else f"Turn {r['turn']} was not fully undone."
        return [
            head,
            *(f"- restored {path}" for path in r["restored"]),
            *(f"- not restored {i['path']}: {i['reason']}" for i in r["refused"]),
            *(f"- removed {path}/ (created by the turn)" for path in r["removed_dirs"]),
            *(f"- kept {i['path']}/: {i['reason']}" for i in r["kept_dirs"]),
        ]

    def static_html(self) -> str:
        outcome = "".join(f"<p>{escape(line)}</p>" for line in self._outcome_lines())
        return outcome + self._turns_html()

    def _turns_html(self) -> str:
        turns = self.panel.get("turns", [])
        if not turns:
            return "<p>No turn of this session changed files.</p>"
        rows = [
            f"<li>Turn {t['turn']}: " + ", ".join(f"<code>{escape(f['path'])}</code>" for f in t["files"])
            + "</li>"
            for t in turns
        ]
        return f"<ul class='larik-undo-static'>{''.join(rows)}</ul>"

    def static_text(self) -> str:
        turns = self.panel.get("turns", [])
        lines = self._outcome_lines()
        if not turns:
            return "\n".join([*lines, "No turn of this session changed files."])
        return "\n".join(
            lines + [f"Turn {t['turn']}: " + ", ".join(f["path"] for f in t["files"]) for t in turns]
        )

    def undo(self) -> UndoResult:
        """Revert the newest file-changing turn, as `%larik /undo`; the panel shows the outcome."""
        result = actions.undo(self.magics)
        self.result = result_data(result)
        self.status = f"Undid turn {result.turn}." if result.ok else (
            f"Turn {result.turn} was only partly undone; see the files not restored."
        )
        refresh_all()
        return result
