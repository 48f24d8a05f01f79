"""The undo panel (`%larik /checkpoints`, and after `%larik /undo`): turns that changed files
or kernel variables, newest first, with their diffs and variable changes, an undo button on
the newest and "undo down to here" on the older ones."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

import msgspec
import traitlets
from pydantic import BaseModel

from larik_jupyter.api import (
    DID_NOT_EXIST,
    Agent,
    LarikError,
    UndoReport,
    UndoResult,
    counted,
    kernel_snapshots,
)
from larik_jupyter.frontends.notebook.widgets import esm
from larik_jupyter.frontends.notebook.widgets.actions import Action, Ping
from larik_jupyter.frontends.notebook.widgets.session_widget import (
    SessionWidget,
    escape,
    refresh_all,
)
from larik_jupyter.frontends.notebook.widgets.undo_model import (
    Reload,
    TurnRow,
    Undo,
    UndoList,
    UndoTo,
    VariableRow,
)

if TYPE_CHECKING:
    from larik_jupyter.frontends.notebook.kernel import KernelSession

_HERE = pathlib.Path(__file__).parent
# A diff longer than this is cut: the panel shows what changed, not whole generated files.
MAX_DIFF_CHARS = 100_000


def _undo_action(prompt: int | None) -> Undo | UndoTo:
    """The action a button sends to undo down to prompt `prompt` (None: the newest turn)."""
    return Undo() if prompt is None else UndoTo(prompt=prompt)


def _variables(
    session_id: str, turn: int, recorded: list[tuple[str, bool]], changes: dict[str, str]
) -> list[VariableRow]:
    """A turn's variable changes: name, type and shape `before` → `after` (now), and whether
    undo can put it back; without this kernel's snapshot every one is `gone`. `change` is
    what the transcript says the turn did to it (the line shown under its calls), when it
    says."""
    rows = kernel_snapshots(session_id).changes(turn)
    if rows is not None:
        found = [msgspec.convert(row, VariableRow) for row in rows]
    else:
        found = [
            VariableRow(name=name, before="", after="", restorable=False, gone=True, same=False,
                        reason="gone with the kernel (it restarted since that turn)")
            for name, _existed in recorded
        ]
    said = [msgspec.structs.replace(row, change=changes.get(row.name)) for row in found]
    return [msgspec.structs.replace(row, text=_variable_text(row)) for row in said]


def _variable_text(row: VariableRow) -> str:
    """The panel's line for one variable: the transcript's line for it (as shown under the
    calls), else its type and shape before → now; never `x → x` for a value whose type and
    shape stayed while its content changed, nor a change for one that is back as it was."""
    name, before, after = row.name, row.before, row.after
    if row.gone:
        return f"{row.change or name}: {row.reason}"
    if row.same:
        return f"{name}: {before}, as it was before this turn (changed back since), nothing to undo"
    if row.change:
        text = row.change
    elif before == DID_NOT_EXIST:  # as every other view says it: `x: created int`
        text = f"{name}: created {after}"
    elif before == after:
        text = f"{name}: {before}, its content changed (same type and shape)"
    else:
        text = f"{name}: {before} → {after}"
    return text + ("" if row.restorable else f" (cannot be restored: {row.reason})")


def _json_of(value: object) -> object:
    """The page's JSON of a pydantic record the panel holds (`TurnChange`, with its `diff_html`)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise NotImplementedError(f"{type(value).__name__} has no JSON form")


def page_data(listed: UndoList) -> dict[str, Any]:
    """The panel's list as its page reads it (`undo.js`)."""
    data: dict[str, Any] = msgspec.to_builtins(listed, enc_hook=_json_of)
    return data


def undo_data(agent: Agent | None) -> UndoList:
    """What the undo panel renders: the session's undo list (`Agent.history.undo_list`, the one
    every view reads), newest first, each turn with its state (`undoable`, `files only`, `not
    undoable`) and the note saying why.

    Each file and cell shows what that turn did to it (`checkpoint.diffs`: the text `diff`, and
    `diff_html`, the one diff rendering the panel shows); each variable shows its type and
    shape before the turn and now.
    """
    if agent is None:
        return UndoList(session=None, turns=[], empty="No session is open in this kernel.")
    listed = agent.history.undo_list()
    diffs = {info.turn: files for info, files in agent.history.turn_diffs(limit=MAX_DIFF_CHARS)}
    turns = []
    newer: list[TurnRow] = []  # the turns above, newest first, that undo acts on first
    for entry in listed.turns:
        info, files = entry.info, diffs.get(entry.turn, [])
        variables = _variables(agent.session_id, info.turn, info.variables, {
            c.name: c.text() for c in (agent.history.variable_changes(info.prompt) if info.prompt else [])
        })
        gone = entry.state == "not undoable"
        turn = TurnRow(
            turn=info.turn,
            prompt=info.prompt,
            label=info.label,
            time=info.time.isoformat(),
            changes=entry.changes(files, limit=MAX_DIFF_CHARS),
            variables=variables,
            state=entry.state,
            gone=gone,
            note=entry.note,
            undoable=not gone and not newer,
            why=None if gone or not newer else f"Undo goes newest first: undo {newer[-1].label} before this one.",
            undo=_undo_action(None if not newer else info.prompt),
        )
        if not gone:
            newer.append(turn)
        turns.append(turn)
    # Said when no turn is listed: every change undone, or none made (the panel follows the
    # kernel's current session, which a /fork or /rewind changes: naming it keeps an old
    # output from reading as a lie).
    return UndoList(session=agent.session_id, turns=turns, empty=listed.nothing_left(),
                    undone=list(listed.undone), undone_text=undone_text(list(listed.undone)))


def undone_text(undone: list[int]) -> str:
    """The panel's line naming the prompts already undone ("" when none)."""
    if not undone:
        return ""
    which = ", ".join(str(n) for n in undone)
    return (f"Undone: prompt{'s' if len(undone) > 1 else ''} {which} (their changes were put back; "
            "/notebook and replay leave them out).")


def stale_text(shown: UndoList, now: UndoList) -> str:
    """Why a panel showing `shown` is out of date, the session being as `now` says."""
    if shown.session != now.session:
        current = f"session {now.session}" if now.session else "no session"
        return f"Out of date: this list shows session {shown.session}, and the kernel is now on {current}."
    before, after = set(shown.listed()[1]), set(now.listed()[1])
    changes = [
        f"{counted(count, 'turn')} {what}"
        for count, what in ((len(after - before), "added"), (len(before - after), "undone"))
        if count
    ]
    return f"Out of date: since this list was shown, {' and '.join(changes)}."


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
    show what it did). The front end sends `Undo` and `UndoTo`, either with `force` or
    `skip_changed` to repeat one that stopped at files the user changed since (`retry` is that
    action), and `Reload`; `undo()`, `undo_to()` and `reload()` are the same actions.
    """

    ACTIONS = Undo | UndoTo | Reload | Ping
    NAME = "undo panel"
    COMMAND = "/checkpoints"

    _esm = esm("undo")
    _css = _HERE / "widgets.css"

    panel = traitlets.Dict(help="the turns (`UndoList`, as `undo_data` computes them) as JSON").tag(sync=True)
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
    stale = traitlets.Unicode(
        help="why the turns shown are out of date (turns added or undone since, elsewhere), or "
        "empty; the panel keeps showing what it showed, without undo buttons, until `refresh`"
    ).tag(sync=True)

    def __init__(
        self, kernel: KernelSession, report: UndoReport | None = None, *, session: str | None = None, **kwargs: Any
    ) -> None:
        self._session = session  # an outside agent's session this kernel holds (None: the kernel's own)
        self.listed: UndoList | None = None  # what `panel` shows
        super().__init__(kernel, **kwargs)
        self._show(report or UndoReport())

    def _agent(self) -> Agent | None:
        """The session the panel shows: the kernel's own, or the outside agent's it was opened on
        (None once that agent went away)."""
        if self._session is None:
            return self.kernel.agent
        try:
            return self.kernel.held_agent(self._session)
        except LarikError:
            return None

    def _acting(self) -> Agent:
        agent = self._agent()
        if agent is None:
            raise LarikError(f"Session {self._session} is no longer open in this kernel; nothing here can undo it.")
        return agent

    off_main_thread_actions = (Undo, UndoTo)

    def act(self, action: Action) -> None:
        if isinstance(action, UndoTo):
            self.undo_to(action.prompt, force=action.force, skip_changed=action.skip_changed)
        elif isinstance(action, Undo):
            self.undo(force=action.force, skip_changed=action.skip_changed)
        elif isinstance(action, Reload):
            self.reload()

    def _show(self, report: UndoReport) -> None:
        self._report = report
        self.retry = msgspec.to_builtins(_undo_action(report.prompt_number))
        self.results = [result_data(r) for r in report]
        self.result = self.results[-1] if self.results else {}
        self.outcome = report.html(buttons=True)
        # One line on it for a status bar; the panel's own view shows `outcome` instead.
        self.status = report.summary() if report else ""

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        """Follow the session while it lists the same turns (diffs and variables as they are
        now); once turns were added or undone elsewhere, keep what it showed and say it is out
        of date (its buttons would act on turns it does not show)."""
        now = undo_data(self._agent())
        if self.listed is None or now.listed() == self.listed.listed():
            self._list(now)
        else:
            self.stale = stale_text(self.listed, now)

    def reload(self) -> None:
        """Show the session as it is now (the panel's Refresh)."""
        self._list(undo_data(self._agent()))

    def _list(self, listed: UndoList) -> None:
        self.listed = listed
        self.panel, self.stale = page_data(listed), ""

    @property
    def _shown(self) -> UndoList:
        return self.listed if self.listed is not None else UndoList(session=None, turns=[], empty="")

    def static_html(self) -> str:
        stale = f"<p class='larik-stale'>{escape(self.stale)}</p>" if self.stale else ""
        undone = self._shown.undone_text
        done = f"<p class='larik-undone'>{escape(undone)}</p>" if undone else ""
        return self._report.html() + stale + done + self._turns_html()

    def _turns_html(self) -> str:
        turns = self._shown.turns
        if not turns:
            return f"<p>{escape(self._shown.empty)}</p>"
        rows = [
            f"<li>{escape(t.label).capitalize()}: " + ", ".join(
                [f"<code>{escape(c.name)}</code>" for c in t.changes]
                + [f"variable <code>{escape(v.name)}</code>" for v in t.variables]
            )
            + (f" <i>{escape(t.note)}</i>" if t.note else "")
            + "".join(f"<br>{escape(v.text)}" for v in t.variables)
            + "</li>"
            for t in turns
        ]
        return f"<ul class='larik-undo-static'>{''.join(rows)}</ul>"

    def static_text(self) -> str:
        shown = self._shown
        lines = self._report.plain().splitlines()
        if self.stale:
            lines.append(self.stale)
        if shown.undone_text:
            lines.append(shown.undone_text)
        if not shown.turns:
            lines.append(shown.empty)
        for t in shown.turns:
            named = [c.name for c in t.changes] + [f"variable {v.name}" for v in t.variables]
            lines.append(f"{t.label.capitalize()}: " + "; ".join(filter(None, [", ".join(named), t.note])))
            lines += [f"  {v.text}" for v in t.variables]
        return "\n".join(lines)

    def undo(self, *, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Revert the newest turn, as `%larik /undo`; the panel shows the report."""
        self._require_current()
        return self._did(self._acting().undo(force=force, skip_changed=skip_changed))

    def undo_to(self, prompt_number: int, *, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Revert every turn down to prompt `prompt_number`, as `%larik /undo --to N`."""
        self._require_current()
        return self._did(self._acting().undo(prompt_number, force=force, skip_changed=skip_changed))

    def _require_current(self) -> None:
        if self.stale:
            raise LarikError(f"{self.stale} Refresh the list before undoing, so you see what an undo would revert.")

    def _did(self, report: UndoReport) -> UndoReport:
        self._show(report)
        self.reload()
        refresh_all()
        return report
