"""The undo panel (`%larik /checkpoints`, and after `%larik /undo`): turns that changed files
or kernel variables, newest first, with their diffs and variable changes, an undo button on
the newest and "undo down to here" on the older ones."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

import traitlets

from larik_jupyter.agent.undo import UndoReport
from larik_jupyter.api import Agent
from larik_jupyter.checkpoint.diffs import cell_diffs
from larik_jupyter.checkpoint.store import UndoResult
from larik_jupyter.notebook.widgets import esm
from larik_jupyter.notebook.widgets.session_widget import SessionWidget, escape, refresh_all
from larik_jupyter.textdiff import diff_html
from larik_jupyter.tools.kernel_undo import kernel_snapshots

if TYPE_CHECKING:
    from larik_jupyter.notebook.kernel import KernelSession

_HERE = pathlib.Path(__file__).parent
# A diff longer than this is cut: the panel shows what changed, not whole generated files.
MAX_DIFF_CHARS = 100_000


def _variables(
    session_id: str, turn: int, recorded: list[tuple[str, bool]], changes: dict[str, str]
) -> list[dict[str, Any]]:
    """A turn's variable changes: name, type and shape `before` → `after` (now), and whether
    undo can put it back; without this kernel's snapshot every one is `gone`. `change` is
    what the transcript says the turn did to it (the line shown under its calls), when it
    says."""
    rows = kernel_snapshots(session_id).changes(turn)
    if rows is not None:
        return [{**row, "gone": False, "change": changes.get(row["name"])} for row in rows]
    return [
        {"name": name, "before": "", "after": "", "restorable": False, "gone": True,
         "reason": "gone with the kernel (it restarted since that turn)", "change": changes.get(name)}
        for name, _existed in recorded
    ]


def undo_data(agent: Agent | None) -> dict[str, Any]:
    """The JSON the undo panel renders: the session and its turns with files or variables,
    newest first.

    Each file and cell shows what that turn did to it (`checkpoint.diffs`: the text `diff`, and
    `diff_html`, the one diff rendering the panel shows); each variable shows its type and
    shape before the turn and now.
    """
    if agent is None:
        return {"session": None, "turns": []}
    saved = list(reversed(agent.turn_diffs(limit=MAX_DIFF_CHARS)))
    turns = []
    for position, (info, files) in enumerate(saved):
        newest = position == 0
        why = None if newest else (
            f"Undo goes newest first: undo {saved[position - 1][0].label} before this one."
        )
        turns.append({
            "turn": info.turn,
            "prompt": info.prompt,
            "label": info.label,
            "time": info.time.isoformat(),
            "files": [
                {"path": f.path, "diff": f.diff, "diff_html": diff_html(f.diff) if f.diff else "", "error": f.error}
                for f in files
            ],
            "variables": _variables(agent.session_id, info.turn, info.variables, {
                c.name: c.text() for c in (agent.variable_changes(info.prompt) if info.prompt else [])
            }),
            "cells": [
                {"path": c.path, "id": c.cell_id, "change": c.change, "diff": c.diff,
                 "diff_html": diff_html(c.diff) if c.diff else ""}
                for c in cell_diffs(info, limit=MAX_DIFF_CHARS)
            ],
            "undoable": newest,
            "why": why,
        })
    return {"session": agent.session_id, "turns": turns}


def result_data(result: UndoResult) -> dict[str, Any]:
    """An undo's outcome as JSON facts: what was restored and what was not, with reasons; the
    kernel variables' part (`variables`, see `UndoResult.variables_text`), the notebooks'
    cells (`cells`: path, count and where), the files changed since (`changed`: nothing was
    done, the user is asked) and those kept as changed (`skipped`), when it had any. The
    words the panel shows come from the `UndoReport` (`outcome`)."""
    data = {
        "turn": result.turn,
        "label": result.label,
        "restored": list(result.restored),
        "refused": [{"path": path, "reason": reason} for path, reason in result.refused],
        "removed_dirs": list(result.removed_dirs),
        "kept_dirs": [{"path": path, "reason": reason} for path, reason in result.kept_dirs],
        "ok": result.ok,
    }
    if result.changed:
        data["changed"] = list(result.changed)
    if result.skipped:
        data["skipped"] = list(result.skipped)
    if variables := result.variables_text():
        data["variables"] = variables
    if result.restored_cells:
        data["cells"] = [
            {"path": path, "count": count, "where": where} for path, count, where in result.restored_cells
        ]
    return data


class UndoPanel(SessionWidget):
    """The file-changing turns of the kernel's current session, with one-click undo.

    Parameters: `kernel` (the kernel's `KernelSession`) and `report` (an undo just made, to
    show what it did). The front end sends `undo` and `undo_to` (with `prompt`), either with
    `force` or `skip_changed` to repeat one that stopped at files the user changed since
    (`retry` is that action); `undo()` and `undo_to()` are the same actions.
    """

    COMMAND = "/checkpoints"

    _esm = esm("undo")
    _css = _HERE / "widgets.css"

    panel = traitlets.Dict(help="the turns as computed by `undo_data`").tag(sync=True)
    result = traitlets.Dict(help="the last undo's outcome (`result_data`), or empty").tag(sync=True)
    results: traitlets.List[dict[str, Any]] = traitlets.List(
        help="every turn the last action undid (`result_data`), newest first"
    ).tag(sync=True)
    outcome = traitlets.Unicode(
        help="what the last action did: the `UndoReport` as HTML, less the commands to run that "
        "the panel's buttons stand for"
    ).tag(sync=True)
    retry = traitlets.Dict(
        help="the last action as the front end sends it, to repeat with `force` or `skip_changed`"
    ).tag(sync=True)

    def __init__(self, kernel: KernelSession, report: UndoReport | None = None, **kwargs: Any) -> None:
        super().__init__(kernel, **kwargs)
        self._show(report or UndoReport())

    off_main_thread_actions = frozenset({"undo", "undo_to"})

    def actions(self) -> dict[str, Any]:
        return {
            "undo": lambda m: self.undo(force=bool(m.get("force")), skip_changed=bool(m.get("skip_changed"))),
            "undo_to": lambda m: self.undo_to(
                int(m["prompt"]), force=bool(m.get("force")), skip_changed=bool(m.get("skip_changed"))
            ),
        }

    def _show(self, report: UndoReport) -> None:
        self._report = report
        self.retry = {"type": "undo"} if report.to is None else {"type": "undo_to", "prompt": report.to}
        self.results = [result_data(r) for r in report]
        self.result = self.results[-1] if self.results else {}
        self.outcome = report.html(buttons=True)
        # One line on it for a status bar; the panel's own view shows `outcome` instead.
        self.status = report.summary() if report else ""

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        self.panel = undo_data(self.kernel.agent)

    def static_html(self) -> str:
        return self._report.html() + self._turns_html()

    def _empty_line(self) -> str:
        # The panel follows the kernel's current session, which a /fork or /rewind changes
        # after it was shown: naming the session keeps an old output from reading as a lie.
        session = self.panel.get("session")
        if session is None:
            return "No session is open in this kernel."
        return f"No turn of the current session, {session}, changed files."

    def _turns_html(self) -> str:
        turns = self.panel.get("turns", [])
        if not turns:
            return f"<p>{escape(self._empty_line())}</p>"
        rows = [
            f"<li>{escape(t['label']).capitalize()}: " + ", ".join(
                [f"<code>{escape(f['path'])}</code>" for f in t["files"]]
                + [f"variable <code>{escape(v['name'])}</code>" for v in t["variables"]]
                + [f"cell <code>{escape(c['path'])}#{escape(c['id'])}</code>" for c in t["cells"]]
            )
            + "</li>"
            for t in turns
        ]
        return f"<ul class='larik-undo-static'>{''.join(rows)}</ul>"

    def static_text(self) -> str:
        turns = self.panel.get("turns", [])
        lines = self._report.plain().splitlines()
        if not turns:
            return "\n".join([*lines, self._empty_line()])
        return "\n".join(
            lines + [
                f"{t['label'].capitalize()}: " + ", ".join(
                    [f["path"] for f in t["files"]] + [f"{c['path']}#{c['id']}" for c in t["cells"]]
                )
                for t in turns
            ]
        )

    def undo(self, *, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Revert the newest turn, as `%larik /undo`; the panel shows the report."""
        return self._did(self.kernel.undo(force=force, skip_changed=skip_changed))

    def undo_to(self, prompt: int, *, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Revert every turn down to prompt `prompt`, as `%larik /undo --to N`."""
        return self._did(self.kernel.undo_to(prompt, force=force, skip_changed=skip_changed))

    def _did(self, report: UndoReport) -> UndoReport:
        self._show(report)
        refresh_all()
        return report
