"""The Python API: what the magics call, and what users script with.

    from larik_jupyter import Agent
    agent = Agent(model="scripted:demo", yes=True)
    agent.run("create hello.py")
    agent.undo()
    agent.records.turns            # plain records; .to_dataframe() with pandas
"""

from __future__ import annotations

import dataclasses
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from larik_jupyter.agent.events import Listener
from larik_jupyter.agent.factory import open_agent
from larik_jupyter.agent.loop import AgentLoop
from larik_jupyter.agent.mcp_status import ServerStatus, awaiting_notice
from larik_jupyter.agent.options import AgentOptions, OptionKeywords, agent_options
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.agent.turn import PromptExtras, TurnOptions
from larik_jupyter.agent.undo import RewindStopped, bind_variable, record_undone, undo_turns
from larik_jupyter.agent.undo_list import UndoList, undo_list
from larik_jupyter.agent.undo_report import UndoReport
from larik_jupyter.checkpoint.diffs import FileDiff, read_current, turn_diffs
from larik_jupyter.checkpoint.store import TurnInfo
from larik_jupyter.config.layers import PendingApproval
from larik_jupyter.config.update import approve as approve_pending
from larik_jupyter.egress.controls import ledger_report, ledger_totals, set_local_only, set_rule
from larik_jupyter.egress.door import EgressDoor
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import ToolResultBlock, ToolUseBlock
from larik_jupyter.llm.script import new_tool_id
from larik_jupyter.lsp.manager import ServerState
from larik_jupyter.records import SessionRecords
from larik_jupyter.run_sync import run_sync
from larik_jupyter.session import branch
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.session.catalog import latest, resolve
from larik_jupyter.session.entry_list import EntryList
from larik_jupyter.session.plan import Todo
from larik_jupyter.session.receipts import Receipt, cell_receipts, session_receipts
from larik_jupyter.session.variable_changes import VariableChange, made_by_prompt, turn_changes
from larik_jupyter.tools.calls import numbered_calls, summarize_call
from larik_jupyter.tools.check import CheckReport
from larik_jupyter.tools.env import Env, InlineRunner
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.plan import current_plan

if TYPE_CHECKING:
    from larik_jupyter.analysis.branch_diff import BranchDiff
    from larik_jupyter.analysis.replay import ReplayReport

__all__ = ["Agent", "AgentOptions", "PromptExtras", "RewindStopped", "TurnOptions", "TurnOutcome", "UndoReport", "run_sync"]

class Agent:
    """A coding agent working in `cwd` (default: the current directory) on one session at a time.

    `session`: an id or file path to resume; `continue_latest`: resume the directory's latest.
    What it is configured with is one `AgentOptions` (`agent/options.py`): `options`, or its
    fields as keywords: `model`: `provider:model`; `yes`: allow calls that would ask; `approver`:
    async callback answering asks; `host`: what a Jupyter kernel offers (namespace, display, open
    notebooks, cell runner: `tools/host.py`; without one the kernel-only tools say they need a
    kernel); `protect`: python code that changes an existing kernel variable always asks first;
    `tools`: `Tool` subclasses of your own, their traits saying how calls are treated; `mcp`: the
    MCP servers of an agent this one replaces in the same directory, reused (close the old one
    with `keep_mcp=True`); `for_turns` False: open `session` only to act on it (`larik-jupyter
    undo`): refused with `SessionLockedError` when another process holds it, where a
    turn-running agent goes on on a branch of it; no MCP server starts, a model that cannot be
    set up fails a turn. `egress_rules`: the notebook's egress rules this agent's sessions share
    (a kernel's, held by all its agents); default: its own, kept across its sessions.
    """

    def __init__(
        self, cwd: str | os.PathLike[str] | None = None, *, session: str | None = None,
        continue_latest: bool = False, options: AgentOptions | None = None, **keywords: Unpack[OptionKeywords],
    ) -> None:
        if options is not None and (keywords or cwd is not None):
            raise TypeError("Agent takes either `options` or `cwd` and the options as keywords, not both.")
        self.notices: list[str] = []
        # The id of the held session the open one branched from (resume of a session another
        # kernel holds continues on a new branch of it), else None.
        self.branched_from: str | None = None
        # What the latest undo, undo(prompt_number=...) or rewind(prompt_number, files=True) undid.
        self.last_undo = UndoReport()
        self._listeners: list[Listener] = []
        self.loop: AgentLoop = self._open(options or agent_options(cwd, **keywords), session, continue_latest)

    @property
    def options(self) -> AgentOptions:
        """What this agent is configured with (the loop's own, so what runs is what shows)."""
        return self.loop.options

    @property
    def cwd(self) -> Path:
        return self.options.cwd

    @property
    def host(self) -> KernelHost | None:
        return self.options.host

    def _open(self, options: AgentOptions, session: str | None, continue_latest: bool) -> AgentLoop:
        opened = open_agent(options, session=session, continue_latest=continue_latest)
        self.notices = opened.notices
        self.branched_from = opened.branched_from
        for listener in self._listeners:
            opened.loop.subscribe(listener)
        return opened.loop

    def _switch(self, *, model: str | None, session: str | None = None, continue_latest: bool = False) -> None:
        """Open another session on the same options, then close the current one; the MCP
        servers carry over. `model` None lets a resumed session keep the model it was recorded with."""
        new = self._open(dataclasses.replace(self.options, model=model, mcp=self.loop.mcp), session, continue_latest)
        self.loop.close(keep_mcp=True)
        self.loop = new

    # -- session ---------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.loop.session.id

    @property
    def session_path(self) -> Path:
        return Path(self.loop.session.path)

    @property
    def model(self) -> str:
        return self.loop.provider.name

    @property
    def tool_env(self) -> Env:
        """What the session's tools run in (root, host, egress rules), for front ends tagging as tools do."""
        return self.loop.env

    @property
    def egress_door(self) -> EgressDoor:
        """The one egress door every request and every answer to an outside agent passes; keeps the ledger."""
        return self.loop.door

    @property
    def records(self) -> SessionRecords:
        """The current session as plain records (turns, tool calls, files, tokens, cost)."""
        return SessionRecords.from_state(self.loop.session.state, self.session_id)

    @property
    def entries(self) -> EntryList:
        """The stored transcript: every entry of the session file, oldest first."""
        return self.loop.session.entries

    def cell_position(self) -> CellPosition:
        """Where a cell a call names stands now (0-based, None: unknown), open notebook first; for `/history`."""
        return self.loop.cell_position()

    def checkpoints(self) -> list[TurnInfo]:
        """The saved turns that changed files, oldest first (what `/undo` can revert)."""
        return self.loop.checkpoints.turns()

    def undo_list(self) -> UndoList:
        """What can be undone, newest first: the one list every view renders (`agent.undo_list`)."""
        return undo_list(self.loop.checkpoints, self.session_path)

    def turn_diffs(self, *, limit: int) -> list[tuple[TurnInfo, list[FileDiff]]]:
        """Each saved turn, oldest first, with what it did to each file (diffs cut at `limit` characters)."""
        store = self.loop.checkpoints
        return turn_diffs(store, lambda rel: read_current(store.root, rel), limit=limit)

    def mcp_status(self) -> list[ServerStatus]:
        """The MCP servers with their state (a server that died while idle shows as failed)."""
        return self.loop.mcp.check() if self.loop.mcp is not None else []

    def lsp_status(self) -> list[ServerState]:
        """The language servers with their state."""
        return self.loop.lsp.states()

    @property
    def tracing(self) -> Path | None:
        """The folder of the running debug trace, or None."""
        from larik_jupyter.agent.trace import active_trace

        trace = active_trace(self.loop)
        return trace.directory if trace is not None else None

    def trace(self, on: bool) -> Path | None:
        """Start (`on`) or stop the debug trace; returns its folder (None when none ran)."""
        from larik_jupyter.agent.trace import start_trace, stop_trace

        trace = start_trace(self.loop) if on else stop_trace(self.loop)
        return trace.directory if trace is not None else None

    def pending_approvals(self) -> list[PendingApproval]:
        """What the project's shared config declares that awaits the user's approval."""
        return list(self.loop.loaded.pending)

    def awaiting_notices(self) -> list[str]:
        """The opening notices saying only that an MCP server awaits approval (for a card)."""
        mcp = self.loop.mcp
        return [awaiting_notice(status) for status in mcp.awaiting] if mcp is not None else []

    def sync(self) -> None:
        """Make everything appended so far durable (before another reader opens the file)."""
        self.loop.session.sync()

    def check(
        self, path: str | None = None, *, timeout: int = 600, stop: threading.Event | None = None,
        notebook: Path | None = None, network: bool = False,
    ) -> CheckReport:
        """Run the notebook at `path` (default: this kernel's own: `notebook` when the caller knows
        it, else the one a browser shows it in) top to bottom in a scratch kernel and report what does not hold
        up (`tools/check/tool.py`); `network` lets its cells connect to other machines. Setting
        `stop`, or an interrupt of the calling thread, ends it; the scratch kernel is shut down
        either way."""
        from larik_jupyter.tools.check import check_notebook

        state = self.loop.session.state
        made = made_by_prompt(state.all, state.undone)
        return check_notebook(self.loop.env, path, timeout=timeout, stop=stop or threading.Event(), notebook=notebook,
                              network=network, made=made, receipts=cell_receipts(state.all, state.undone))

    def variable_changes(self, prompt_number: int) -> list[VariableChange]:
        """What prompt `prompt_number`'s turn did to kernel variables, as its calls' results recorded it."""
        return turn_changes(self.loop.session.state.all, prompt_number)

    def receipts(self) -> list[tuple[int, Receipt]]:
        """The receipts of the session's kernel calls with their prompt numbers, newest first."""
        return list(reversed(list(session_receipts(self.loop.session.state.all))))

    @property
    def plan(self) -> list[Todo] | None:
        """The todos of the session's last successful `todo_write` call (on a branch, before it), or None."""
        return current_plan(self.loop.session.state.all)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)
        self.loop.subscribe(listener)

    # -- turns -----------------------------------------------------------------------------

    @property
    def protect(self) -> bool:
        """Protect mode asked for by this front end (the personal config can also turn it on)."""
        return self.options.protect

    @protect.setter
    def protect(self, on: bool) -> None:
        self.loop.options = dataclasses.replace(self.options, protect=on)

    @property
    def protecting(self) -> bool:
        """Whether protect mode is on: asked for by this front end or in the personal config."""
        return self.loop.protecting

    def bind(self, name: str, value: object) -> None:
        """Bind kernel variable `name` to `value` as a change of the last turn (`%larik -o NAME`):
        undoing that turn puts back what `name` held, or deletes it. Needs a kernel (`host`);
        `CheckpointError`: the record could not be written (bound, but undo does not know)."""
        bind_variable(self.host, self.loop.variables, self.loop.checkpoints, name, value)

    @property
    def pending_note(self) -> str | None:
        """What the next prompt tells the model first (the note of an undo since), if anything."""
        return self.loop.pending_note

    @property
    def running(self) -> bool:
        """Whether a turn is running."""
        return self.loop.running

    def require_idle(self) -> None:
        """Refuse while a turn runs: undoing, branching or switching mid-turn would tear it."""
        if self.running:
            raise LarikError("A turn is running; wait for it to end (or `%larik /stop` it), then try again.")

    async def arun(
        self, prompt: str, extras: PromptExtras | None = None, *, approver: Approver | None = None,
        yes: bool | None = None, listener: Listener | None = None, notebook: Path | None = None,
        inline_runner: InlineRunner | None = None,
    ) -> TurnOutcome:
        """Run one turn; `extras` adds blocks (notebook context, attachments) to the prompt. For
        this turn only: `approver` answers asks, `yes` allows them, `listener` hears its events,
        `notebook` is the kernel's own notebook (the notebook tools' default), `inline_runner`
        where kernel tools run (the kernel's main thread when the loop runs on another; None: here)."""
        if listener is not None:
            self.loop.subscribe(listener)
        try:
            return await self.loop.run_turn(
                prompt, extras, approver=approver, yes=yes, notebook=notebook, inline_runner=inline_runner
            )
        finally:
            if listener is not None:
                self.loop.unsubscribe(listener)

    async def acall(
        self, name: str, tool_input: dict[str, Any], *, caller: str, approver: Approver | None = None,
        notebook: Path | None = None,
    ) -> ToolResultBlock:
        """Run one tool call of an outside agent (MCP client `caller`) as a turn of this session,
        its prompt naming caller and call, through the same rules, approvals (`approver`; none:
        an ask is denied), protect mode, hooks and checkpoints as a model's (`notebook` as for
        `arun`); returns the result as stored."""
        call = ToolUseBlock(id=new_tool_id(), name=name, input=tool_input)
        prompt = f"{caller}: {summarize_call(name, tool_input)}"
        return await self.loop.run_call(prompt, call, approver=approver, notebook=notebook)

    def run(self, prompt: str, extras: PromptExtras | None = None, **options: Unpack[TurnOptions]) -> TurnOutcome:
        """Run one turn to its end and return how it ended (`options` as for `arun`)."""
        return run_sync(self.arun(prompt, extras, **options))

    def stop(self) -> None:
        self.loop.stop()

    def compact(self, instructions: str = "") -> str:
        return run_sync(self.loop.compact(instructions))

    def clear(self) -> None:
        self.loop.clear()

    def undo(self, prompt_number: int | None = None, *, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Revert the newest turn that changed files or kernel variables; the next prompt tells
        the model. With `prompt_number`, every turn from the newest down to that prompt (1-based),
        newest first, stopping after the first one not fully undone. Returns the report: the turns'
        `UndoResult`s, newest first, and what it did in words (`markdown()`, `plain()`, …).

        A file or cell the user changed since its turn is never overwritten unasked: that turn
        is left as it is, its result listing them in `changed`. Undo again with `force=True` to
        restore them anyway (their later changes lost) or `skip_changed=True` to undo the rest."""
        self.require_idle()
        self.last_undo = self._undo(prompt_number, force=force, skip_changed=skip_changed)
        return self.last_undo

    def _undo(self, prompt_number: int | None, *, nothing_ok: bool = False, record: bool = True, **how: bool) -> UndoReport:
        """Undo the newest turn, or with `prompt_number` each turn down to it; the note for the
        model is recorded in the session unless `record` is off (a rewind carries it to its branch)."""
        loop = self.loop
        report = undo_turns(
            loop.checkpoints, loop.env, lambda note: loop.queue_note(note, record=record), prompt_number,
            prompts=len(loop.session.state.prompt_positions), nothing_ok=nothing_ok, **how,
        )
        if record:
            record_undone(loop.session, report)
        return report

    # -- branches and sessions -------------------------------------------------------------

    def new(self, model: str | None = None) -> None:
        self.require_idle()
        self._switch(model=model or self.model)

    def resume(self, session: str | None = None, *, last: bool = False) -> None:
        """Continue a session by id or path, or the directory's latest with `last=True`."""
        self.require_idle()
        if session is None or last:
            newest = latest(self.cwd)
            target = Path(newest.path) if newest is not None else None
        else:
            target = resolve(session, self.cwd)
        if target == self.session_path:
            self.branched_from = None
            return  # already there; reopening would collide with our own writer lock
        self._switch(model=None, session=session, continue_latest=last or session is None)

    def fork(self, prompt_number: int | None = None) -> Path:
        """Branch the session after the turn of prompt `prompt_number` (1-based; default: at its
        end), continue on the branch and return its path: before the last prompt, exactly the
        branch `rewind(prompt_number + 1)` makes."""
        self.require_idle()
        prompts = len(self.loop.session.state.prompt_positions)
        if prompt_number is not None:
            branch.check_prompt(self.session_id, prompt_number, prompts)
        if prompt_number is not None and prompt_number < prompts:
            self.rewind(prompt_number + 1)
            return self.session_path
        self.loop.session.sync()
        path = branch.fork(self.session_path)
        self._switch(model=self.model, session=str(path))
        return path

    def rewind(self, prompt_number: int, *, files: bool = False, force: bool = False, skip_changed: bool = False) -> str:
        """Branch just before prompt `prompt_number` (1-based), continue there, return that
        prompt's text. With `files`, first undo this session's turns from the newest down to that
        prompt (files and this kernel's variables; `last_undo` holds what was done; `force` and
        `skip_changed` as for `undo`); when one cannot be fully undone, raise `RewindStopped`
        and make no branch. Without it nothing on disk changes but the new branch. An agent on
        a branch of a session another process holds (`branched_from`) refuses `files`."""
        self.require_idle()
        if files and self.branched_from:
            raise LarikError(
                f"Session {self.branched_from} is open in another kernel, so its turns can be undone only there; this "
                f"kernel is now on its branch {self.session_id}. Rewind without files to branch it here."
            )
        self.loop.session.sync()
        if files:
            self.last_undo = self._undo(prompt_number, nothing_ok=True, record=False, force=force, skip_changed=skip_changed)
            if self.last_undo and not self.last_undo[-1].ok:
                raise RewindStopped(self.last_undo.rewind_stopped(prompt_number), self.last_undo)
        path, text = branch.rewind(self.session_path, prompt_number)
        # The undo's note goes with the branch, where the next prompt is sent; the source
        # transcript is never written to.
        note, self.loop.pending_note = self.loop.pending_note, None
        self._switch(model=self.model, session=str(path))
        if note:
            self.loop.queue_note(note)
        return text

    def switch_model(self, model: str) -> None:
        from larik_jupyter.llm.select import select_provider

        provider, _ = select_provider(model, self.loop.loaded.config)
        self.loop.switch_provider(provider)

    # -- the branch as an analysis ---------------------------------------------------------

    def _source(self, session: str | None) -> Path:
        """The transcript `session` names (default: the current one, made durable first)."""
        path = self.session_path if session is None else resolve(session, self.cwd)
        if path == self.session_path:
            self.sync()
        return path

    def to_notebook(
        self, path: str | os.PathLike[str] | None = None, *, session: str | None = None,
        prompt_number: int | None = None, include_shell: bool = False, include_undone: bool = False,
    ) -> Path:
        """Write a branch (default: the current session) up to prompt `prompt_number` (default: all)
        as a new notebook and return its path: `path` (relative to `cwd`; refused if it exists),
        else `<id>.ipynb` in the session's directory. `!cmd` cells only with `include_shell`."""
        from larik_jupyter.analysis.as_notebook import write_notebook

        source = self._source(session)
        return write_notebook(source, path, prompt_number=prompt_number, include_shell=include_shell, cwd=self.cwd,
                              include_undone=include_undone)

    def replay(
        self, session: str | None = None, *, prompt_number: int | None = None,
        cwd: str | os.PathLike[str] | None = None, timeout: float = 600.0, stop_on_fail: bool = False,
        in_place: bool = False, force: bool = False, include_shell: bool = False, rtol: float = 1e-6,
        network: bool = False,
    ) -> ReplayReport:
        """Re-run a branch's code (default: the current session's, up to prompt `prompt_number`,
        default: all) in a fresh kernel without the model, in a scratch copy of the project unless
        `in_place` (files changed since left alone unless `force`, shell commands only with
        `include_shell`; no network unless `network`), comparing each output with the recorded
        one; `report.table()` prints it, `report.exit_status` is 0, 1 or 2."""
        from larik_jupyter.analysis.replay import replay_branch

        return replay_branch(
            self._source(session), prompt_number=prompt_number, cwd=cwd, timeout=timeout,
            stop_on_fail=stop_on_fail, in_place=in_place, force=force, include_shell=include_shell, rtol=rtol,
            network=network,
        )

    def diff(self, other: str, session: str | None = None) -> BranchDiff:
        """Compare a branch (default: the current session) with `other`: their common prefix,
        then each one's prompts and code outputs; `.render()` shows it side by side."""
        from larik_jupyter.analysis.branch_diff import diff_branches

        return diff_branches(self._source(session), resolve(other, self.cwd))

    # -- egress ----------------------------------------------------------------------------

    def set_egress(self, target: str, policy: str) -> str:
        """Set what may leave of variable, file or pattern `target` (`never`, `schema`, `stats`,
        `sample N [mask COL,…]`, `full`); returns what now holds. A LarikError names a bad policy or target."""
        return set_rule(self.loop.door, target, policy)

    def set_local_only(self, on: bool) -> str:
        """Mark this session local-models-only (or not); returns the sentence saying what holds."""
        return set_local_only(self.loop.door, on)

    def egress_report(self) -> str:
        """The rules in force, the last turn's requests by source and the session's totals."""
        return ledger_report(self.loop.door, numbered_calls(self.loop.session.state.all, self.cell_position()))

    def egress_totals(self) -> str:
        """What this session has sent in all and what was withheld, from its ledger."""
        return ledger_totals(self.loop.door)

    def approve(self, name: str) -> list[str]:
        """Approve a pending MCP server, hook, allow rule or LSP server (`name` or `kind:name`,
        pinned to its definition's hash) and apply it to this agent now; returns notices."""
        approve_pending(self.cwd, name)
        return self.loop.reload_config()

    def follow_config(self) -> list[str]:
        """Read the config again when one of its files changed since it was read (allow and
        deny rules the person set meanwhile): it applies from the next call. Returns notices."""
        return self.loop.reload_config() if self.loop.loaded.changed() else []

    def close(self, *, keep_mcp: bool = False) -> None:
        """Close the session; `keep_mcp` leaves the MCP servers to the agent handed them."""
        self.loop.close(keep_mcp=keep_mcp)

