"""The fork tree of a working directory's sessions as an interactive widget (`%larik /tree`).

Each session lists its prompts in order; a branch (fork or rewind) hangs under the last prompt
it shares with its source, so siblings under a prompt are alternative continuations. A branch
that shares no prompt (`/rewind 1`) is an alternative to the first prompt: it comes before it.
"""

from __future__ import annotations

import os
import pathlib
from pathlib import Path
from typing import Any

import msgspec
import traitlets

from larik_jupyter.api import (
    CheckpointStore,
    LarikError,
    RewindStopped,
    TreeNode,
    TurnInfo,
    builtin_writes,
    cell_name,
    cost_label,
    fork_label,
    fork_tree,
    load_entries,
)
from larik_jupyter.api import replay_state as replay
from larik_jupyter.api import resolve_session as resolve
from larik_jupyter.api import session_summary as summary
from larik_jupyter.frontends.notebook.widgets import esm
from larik_jupyter.frontends.notebook.widgets.actions import Action, Ping, Resume, note_data
from larik_jupyter.frontends.notebook.widgets.session_widget import (
    SessionWidget,
    escape,
    refresh_all,
)
from larik_jupyter.frontends.notebook.widgets.tree_actions import (
    AsNotebook,
    CancelRewind,
    Compare,
    ForkAt,
    InsertCell,
    NoCells,
    OpenFile,
    PlanRewind,
    Rewind,
)
from larik_jupyter.frontends.notebook.widgets.tree_model import (
    CompactionItem,
    Confirm,
    PromptItem,
    RewindPlan,
    TreeData,
    TreeSession,
)
from larik_jupyter.records import SessionRecords

_HERE = pathlib.Path(__file__).parent


def _shares(fork_at: int | None, position: int) -> bool:
    """Whether a branch made at message `fork_at` shares the message at `position`."""
    return fork_at is None or position < fork_at


def _session(node: TreeNode, counter: list[int], parent: str | None = None) -> TreeSession:
    # The fork tree was just built from the same summaries, so this reads nothing again.
    details = summary(Path(node.path))
    counter[0] += 1
    items: list[tuple[tuple[int, int], PromptItem | CompactionItem]] = []
    total: float | None = 0.0
    for prompt in details.prompts:
        spent = prompt.cost
        total = None if total is None or spent is None else total + spent
        if node.fork_of and _shares(node.fork_at, prompt.position):
            continue  # the copied prefix: shown once, in the session it was forked from
        last = prompt.number == len(details.prompts)
        item = PromptItem(
            n=prompt.number,
            position=prompt.position,
            text=prompt.first_line,
            prompt_text=prompt.text,  # what the search matches, and the row's hover
            time=prompt.time,
            cost=spent,
            cost_label=cost_label(spent),
            interrupted=prompt.interrupted or bool(last and node.interrupted),
            undone=prompt.undone,
        )
        items.append(((prompt.position, 1), item))
        counter[0] += 1
    for at in node.compactions:
        if not (node.fork_of and _shares(node.fork_at, at)):
            items.append(((at, 0), CompactionItem(at)))
    items.sort(key=lambda pair: pair[0])
    ordered = [item for _, item in items]
    prompts = [item for item in ordered if isinstance(item, PromptItem)]
    children: list[TreeSession] = []
    for child in node.children:
        data = _session(child, counter, node.id)
        before = [p for p in prompts if p.n <= (child.fork_prompt or 0)]
        (before[-1].children if before else children).append(data)
    return TreeSession(
        id=node.id,
        time=details.started,
        model=details.model,  # the current model, as /sessions shows it
        cost=total,
        cost_label=cost_label(total),
        fork_of=node.fork_of,
        fork_at=node.fork_at,
        fork_prompt=node.fork_prompt,
        parent_deleted=node.parent_deleted,
        # Hung beside its source (it branched inside the prompts its source copied): named.
        branch=fork_label(node.fork_of, node.fork_prompt, node.parent_deleted, name_source=node.fork_of != parent),
        interrupted=node.interrupted,
        error=node.error,
        items=ordered,
        children=children,
    )


def tree_data(cwd: str | os.PathLike[str], current: str | None = None) -> TreeData:
    """The fork tree of `cwd`'s sessions, `current` the kernel's."""
    counter = [0]
    roots = [_session(node, counter) for node in fork_tree(cwd)]
    return TreeData(cwd=os.fspath(cwd), current=current, roots=roots, count=counter[0])


# A session (or branch) none of whose own prompts exist yet: said once, on its row.
NO_PROMPT = "no prompt yet"


def _static(data: TreeData) -> str:
    def session(node: TreeSession) -> str:
        mark = " <b>(current)</b>" if node.id == data.current else ""
        branch = f" <i>{escape(node.branch)}</i>" if node.branch else ""
        branch += f" <i>({NO_PROMPT})</i>" if node.empty() else ""
        rows = [session(child) for child in node.children]
        for item in node.items:
            if isinstance(item, CompactionItem):
                rows.append("<li><i>compacted</i></li>")
                continue
            stop = " <i>(interrupted)</i>" if item.interrupted else ""
            stop += " <i>(undone)</i>" if item.undone else ""
            below = "".join(session(child) for child in item.children)
            rows.append(
                f"<li>{item.n}. {escape(item.text)}{stop}"
                + (f"<ul>{below}</ul>" if below else "")
                + "</li>"
            )
        return f"<li><code>{escape(node.id)}</code>{branch}{mark}<ul>{''.join(rows)}</ul></li>"

    body = "".join(session(root) for root in data.roots)
    return f"<ul class='larik-tree-static'>{body}</ul>" if body else "<p>No sessions yet.</p>"


def _changed_cells(path: Path, session_id: str, prompt_number: int) -> bool:
    """Whether prompt `prompt_number` of the transcript at `path` made a call that changed
    notebook cells and did not fail."""
    records = SessionRecords.from_state(replay(load_entries(path).entries), session_id)
    return any(
        call.prompt_number == prompt_number and not call.is_error and "notebooks" in builtin_writes(call.name)
        for call in records.tool_calls
    )


def rewind_plan(saved: list[TurnInfo], prompt_number: int) -> RewindPlan:
    """What rewinding before prompt `prompt_number` with files would undo: `turns` (newest
    first), the `files`, `variables` and notebook `cells` (named as every undo view names them,
    `checkpoint.diffs.cell_name`) they changed, and `stop`
    when an older-format turn (no prompt number) would stop the undo before it reaches that
    prompt."""
    turns: list[int] = []
    files: dict[str, None] = {}
    variables: dict[str, None] = {}
    cells: dict[str, None] = {}
    stop = None
    for info in reversed(saved):
        if info.prompt is None:
            stop = f"turn {info.turn} has no prompt number (saved by an older version); the undo stops there"
            break
        if info.prompt < prompt_number:
            break
        turns.append(info.turn)
        files.update(dict.fromkeys(f.path for f in info.files))
        variables.update(dict.fromkeys(name for name, _existed in info.variables))
        cells.update(dict.fromkeys(cell_name(nb.path, c) for nb in info.notebooks for c in nb.cells))
    return RewindPlan(turns=turns, files=list(files), variables=list(variables), cells=list(cells), stop=stop)


def _static_text(data: TreeData) -> str:
    lines: list[str] = []

    def session(node: TreeSession, depth: int) -> None:
        pad = "  " * depth
        branch = f" {node.branch}" if node.branch else ""
        branch += f" ({NO_PROMPT})" if node.empty() else ""
        lines.append(f"{pad}{node.id}{branch}" + (" (current)" if node.id == data.current else ""))
        for child in node.children:
            session(child, depth + 1)
        for item in node.items:
            if isinstance(item, CompactionItem):
                lines.append(f"{pad}  (compacted)")
                continue
            stop = " (interrupted)" if item.interrupted else ""
            stop += " (undone)" if item.undone else ""
            lines.append(f"{pad}  {item.n}. {item.text}{stop}")
            for child in item.children:
                session(child, depth + 2)

    for root in data.roots:
        session(root, 0)
    return "\n".join(lines) or "No sessions yet."


class ForkTreeWidget(SessionWidget):
    """The fork tree of the working directory's sessions, with rewind, fork and resume.

    Parameters: `kernel` (the kernel's `KernelSession`). The front end sends `Rewind`,
    `ForkAt` and `Resume`; the same actions are the methods below. After a rewind the
    prompt's `%%larik` cell goes to the front end (`InsertCell`).
    "Rewind here with files" first sends `PlanRewind` and shows `confirm` (the files and
    variables it would restore); confirming sends `Rewind` with `files` and the `turns` shown.
    When files changed since their turn, `confirm` comes back with them as `changed`, and
    the user's answer is sent as `Rewind` again with `force` or `skip_changed`.
    "Open as notebook" sends `AsNotebook` (the page then opens `OpenFile`); "Compare with…"
    sends `Compare` and the result shows as `comparison`.
    """

    ACTIONS = Rewind | PlanRewind | CancelRewind | ForkAt | Resume | AsNotebook | Compare | NoCells | Ping
    NAME = "fork tree"
    COMMAND = "/tree"

    _esm = esm("tree")
    _css = _HERE / "widgets.css"

    tree = traitlets.Dict(help="the fork tree (`TreeData`) as JSON").tag(sync=True)
    confirm = traitlets.Dict(
        help="a rewind with files awaiting confirmation (`Confirm`) as JSON, or empty"
    ).tag(sync=True)
    data: TreeData  # what `tree` shows, set by `refresh`
    comparison = traitlets.Unicode(
        help="the last \"compare with…\" result, as `larik-jupyter diff` prints it"
    ).tag(sync=True)

    off_main_thread_actions = (Rewind,)

    def act(self, action: Action) -> None:
        match action:
            case Rewind():
                self.rewind_here(
                    action.session, action.prompt, files=action.files, turns=action.turns,
                    force=action.force, skip_changed=action.skip_changed,
                )
            case PlanRewind():
                self.plan_rewind(action.session, action.prompt)
            case CancelRewind():
                self._confirm(None)
            case ForkAt():
                self.fork_here(action.session, action.prompt)
            case Resume():
                self.resume(action.session)
            case AsNotebook():
                self.open_as_notebook(action.session, action.prompt)
            case Compare():
                self.compare(action.session, action.other)
            case NoCells():
                self.explain_no_cells(action.session, action.prompt)

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        self.data = self.directory_data(memo, tree_data)
        self.tree = msgspec.to_builtins(self.data)

    def _confirm(self, confirm: Confirm | None) -> None:
        self.confirm = msgspec.to_builtins(confirm) if confirm is not None else {}

    def static_html(self) -> str:
        return _static(self.data)

    def static_text(self) -> str:
        return _static_text(self.data)

    def _saved(self, session_id: str) -> list[TurnInfo]:
        """The saved (undoable) turns of `session_id`, from the kernel's agent when it holds it."""
        agent = self.kernel.agent
        if agent is not None and agent.session_path == resolve(session_id, self.kernel.cwd):
            return agent.history.checkpoints()
        return CheckpointStore(session_id).turns()

    def _plan(self, session_id: str, prompt_number: int, changed: list[str] | None = None) -> Confirm:
        plan = rewind_plan(self._saved(session_id), prompt_number)
        return Confirm(session=session_id, prompt=prompt_number, changed=changed or [], **msgspec.structs.asdict(plan))

    def explain_no_cells(self, session_id: str, prompt_number: int) -> str:
        """Why "Jump to cells" found no open cell of prompt `prompt_number`, said once in
        `status`: the notebook it edited is not open (named), its cell changes were undone (it
        changed cells, and no saved turn holds them now), or it changed no cells."""
        saved = [turn for turn in self._saved(session_id) if turn.prompt == prompt_number]
        edited = [record.path for turn in saved for record in turn.notebooks if record.cells] + [
            file.path for turn in saved for file in turn.files if file.path.endswith(".ipynb")
        ]
        if edited:
            names = ", ".join(dict.fromkeys(edited))
            self.status = (
                f"Prompt {prompt_number} of {session_id} changed cells of {names}, which no open "
                "notebook shows; open it to jump to them."
            )
        elif _changed_cells(resolve(session_id, self.kernel.cwd), session_id, prompt_number):
            self.status = f"Prompt {prompt_number} of {session_id} changed cells, and those changes were undone."
        else:
            self.status = f"Prompt {prompt_number} of {session_id} changed no cells."
        return self.status

    def plan_rewind(self, session_id: str, prompt_number: int) -> Confirm:
        """Show what "Rewind here with files" would restore, for the user to confirm."""
        plan = self._plan(session_id, prompt_number)
        self._confirm(plan)
        return plan

    def rewind_here(
        self, session_id: str, prompt_number: int, *, files: bool = False, turns: list[int] | None = None,
        force: bool = False, skip_changed: bool = False,
    ) -> str:
        """Branch `session_id` before its prompt `prompt_number` (1-based, as `/rewind N`),
        continue there, and send that prompt as a new `%%larik` cell; returns the cell.

        With `files` (`/rewind N --files`) the turns from that prompt on are undone first;
        `turns`, when given, are those the user confirmed, and a plan that changed since
        is refused rather than carried out. When a turn's files changed since it, nothing is
        branched: `confirm` asks again, naming them (`changed`), to go on with `force` or
        `skip_changed` (as `Agent.rewind`); returns "" then."""
        self._confirm(None)
        if files and turns is not None and self._plan(session_id, prompt_number).turns != turns:
            raise LarikError(
                "The turns to undo changed since you confirmed; click Rewind here with files again "
                "to see the current list."
            )
        try:
            code = "%%larik\n" + self.kernel.sessions.rewind(
                prompt_number, session=session_id, files=files, force=force, skip_changed=skip_changed
            )
        except RewindStopped as exc:
            if not exc.results[-1].changed:
                raise
            self._confirm(self._plan(session_id, prompt_number, list(exc.results[-1].changed)))
            refresh_all()
            return ""
        how = " and restored its files" if files else ""
        self.status = f"Rewound {session_id} to before prompt {prompt_number}{how}; now on {self.current}."
        self.send(note_data(InsertCell(code=code)))
        refresh_all()
        return code

    def fork_here(self, session_id: str, prompt_number: int | None = None) -> Path:
        """Branch `session_id` after the turn of prompt `prompt_number` (default: its end) and
        continue on the branch; returns the branch's file."""
        path = self.kernel.sessions.fork(prompt_number, session=session_id)
        where = "its end" if prompt_number is None else f"prompt {prompt_number}"
        self.status = f"Forked {session_id} after {where}; now on {self.current}."
        refresh_all()
        return path

    def open_as_notebook(self, session_id: str, prompt_number: int | None = None) -> Path:
        """Write `session_id` (up to prompt `prompt_number`, default: all of it) as a new notebook,
        as `/notebook` does, and ask the page to open it (`OpenFile`)."""
        path = self.kernel.sessions.to_notebook(session=session_id, prompt_number=prompt_number)
        self.status = f"Wrote {path}."
        self.send(note_data(OpenFile(path=str(path))))
        return path

    def compare(self, session_id: str, other: str) -> str:
        """Compare two branches as `larik-jupyter diff` does; the text goes to `comparison`."""
        if session_id == other:
            raise LarikError("Pick two different sessions to compare.")
        self.comparison = self.kernel.sessions.diff(other, session=session_id).render()
        self.status = f"Compared {session_id} with {other}."
        return self.comparison

    def resume(self, session_id: str) -> None:
        """Continue `session_id` in this kernel, as `%larik /resume ID`."""
        self.kernel.open(resume=session_id)
        self.status = f"Resumed {session_id}."
        refresh_all()
