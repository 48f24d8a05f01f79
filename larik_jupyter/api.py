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
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from larik_jupyter.agent.events import Listener
from larik_jupyter.agent.factory import open_agent
from larik_jupyter.agent.loop import AgentLoop
from larik_jupyter.agent.mcp import McpManager
from larik_jupyter.agent.mcp_status import ServerStatus, awaiting_notice
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.agent.turn import PromptExtras
from larik_jupyter.agent.undo import (
    RewindStopped,
    UndoReport,
    undo_down_to,
    undo_turn,
)
from larik_jupyter.checkpoint.diffs import FileDiff, read_current, turn_diffs
from larik_jupyter.checkpoint.store import TurnInfo
from larik_jupyter.config.layers import PendingApproval
from larik_jupyter.config.update import approve as approve_pending
from larik_jupyter.egress.door import EgressDoor
from larik_jupyter.egress.ledger import read_ledger
from larik_jupyter.egress.policy import PolicyError, check_target, is_variable_target, parse_policy
from larik_jupyter.egress.report import by_turn, render, rule_lines, totals
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import ToolResultBlock, ToolUseBlock
from larik_jupyter.llm.script import new_tool_id
from larik_jupyter.lsp.manager import ServerState
from larik_jupyter.records import SessionRecords
from larik_jupyter.run_sync import run_sync
from larik_jupyter.session import branch
from larik_jupyter.session.call_summary import CellPosition, summarize_call
from larik_jupyter.session.catalog import latest, resolve
from larik_jupyter.session.entry_list import EntryList
from larik_jupyter.session.plan import Todo, current_plan
from larik_jupyter.session.variable_changes import VariableChange, turn_changes
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.check import CheckReport
from larik_jupyter.tools.env import Env, InlineRunner
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.notebook import cell_restorer, cell_sources

if TYPE_CHECKING:
    from larik_jupyter.analysis.branch_diff import BranchDiff
    from larik_jupyter.analysis.replay import ReplayReport

__all__ = ["Agent", "PromptExtras", "RewindStopped", "TurnOptions", "TurnOutcome", "UndoReport", "run_sync"]

class TurnOptions(TypedDict, total=False):
    """The per-turn arguments of `Agent.arun` / `Agent.run`."""

    approver: Approver | None
    yes: bool | None
    listener: Listener | None
    notebook: Path | None
    inline_runner: InlineRunner | None


class Agent:
    """A coding agent working in `cwd` on one session at a time.

    Parameters: `cwd` (default: the current directory), `session` (an id or file path to
    resume), `continue_latest` (resume the directory's latest session), `model`
    (`provider:model`), `yes` (allow calls that would ask), `approver` (async callback
    answering asks), `host` (what a Jupyter kernel offers: its namespace, display, open
    notebooks and cell runner, see `tools/host.py`; without one the kernel-only tools say they
    need a kernel), `protect` (protect mode: python code that changes an existing variable of
    the kernel always asks first), `tools` (tools of your own, `Tool` subclasses whose traits
    say how their calls are treated), `mcp` (the MCP servers of an agent this one replaces in the same
    directory, reused instead of restarted; the old agent is then closed with `keep_mcp=True`),
    `for_turns` (False: open `session` only to act on it, as `larik-jupyter undo` does: refused
    with `SessionLockedError` when another process holds it, where a turn-running agent goes on
    on a branch of it; no MCP server starts, and a model that cannot be set up fails only a turn).
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        session: str | None = None,
        continue_latest: bool = False,
        model: str | None = None,
        yes: bool = False,
        approver: Approver | None = None,
        host: KernelHost | None = None,
        mcp: McpManager | None = None,
        protect: bool = False,
        tools: Iterable[Tool] = (),
        for_turns: bool = True,
    ) -> None:
        self.cwd = Path(os.path.abspath(os.fspath(cwd or os.getcwd())))
        self.yes = yes
        self._protect = protect
        self.approver = approver
        self.host = host
        self.extra_tools = list(tools)
        self.notices: list[str] = []
        # The id of the held session the open one branched from (resume of a session another
        # kernel holds continues on a new branch of it), else None.
        self.branched_from: str | None = None
        # What the latest undo, undo(prompt_number=...) or rewind(prompt_number, files=True) undid.
        self.last_undo = UndoReport()
        self._listeners: list[Listener] = []
        self._for_turns = for_turns
        self.loop: AgentLoop = self._open(
            session=session, continue_latest=continue_latest, model=model, mcp=mcp
        )

    def _open(self, *, session: str | None = None, continue_latest: bool = False,
              model: str | None = None, mcp: McpManager | None = None) -> AgentLoop:
        opened = open_agent(
            self.cwd,
            session=session,
            continue_latest=continue_latest,
            model=model,
            approver=self.approver,
            yes=self.yes,
            host=self.host,
            mcp=mcp,
            protect=self._protect,
            tools=self.extra_tools,
            for_turns=self._for_turns,
        )
        self.notices = opened.notices
        self.branched_from = opened.branched_from
        for listener in self._listeners:
            opened.loop.subscribe(listener)
        return opened.loop

    def _switch(self, *, model: str | None, **kwargs: Any) -> None:
        """Open another session; the current one is closed only once the new one opened.

        `model` None lets a resumed session keep the model it was recorded with. The MCP
        servers carry over to the new session instead of restarting."""
        new = self._open(model=model, mcp=self.loop.mcp, **kwargs)
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
        """The world the session's tools run in (root, kernel host, egress rules), for a front
        end that tags what it gathers for the model as a tool would."""
        return self.loop.env

    @property
    def egress_door(self) -> EgressDoor:
        """The session's one egress door: every request to the model and every answer to an
        outside agent passes it, and it keeps the ledger."""
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
        """Where a cell a notebook call names stands now (0-based, None when unknown): in the
        open notebook, else in the notebook file; how `/history` names cells."""
        return self.loop.cell_position()

    def checkpoints(self) -> list[TurnInfo]:
        """The saved turns that changed files, oldest first (what `/undo` can revert)."""
        return self.loop.checkpoints.turns()

    def turn_diffs(self, *, limit: int) -> list[tuple[TurnInfo, list[FileDiff]]]:
        """Each saved turn, oldest first, with what it did to each of its files (diffs cut at
        `limit` characters)."""
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
        """The opening notices that only say an MCP server awaits approval (an approval card
        says it better where there is one)."""
        mcp = self.loop.mcp
        return [awaiting_notice(status) for status in mcp.awaiting] if mcp is not None else []

    def sync(self) -> None:
        """Make everything appended so far durable (before another reader opens the file)."""
        self.loop.session.sync()

    def check(
        self,
        path: str | None = None,
        *,
        timeout: int = 600,
        stop: threading.Event | None = None,
        notebook: Path | None = None,
    ) -> CheckReport:
        """Run the notebook at `path` (default: this kernel's own) top to bottom in a scratch
        kernel and report what does not hold up (see `tools/check/tool.py`). It runs on a
        thread of its own: setting `stop`, or an interrupt of the calling thread, ends it, and
        the scratch kernel is shut down either way. `notebook`: the kernel's own notebook, when
        the caller knows it (else the one the last turn was given)."""
        from larik_jupyter.tools.check import check_on_thread, check_path

        env = self.loop.env
        if notebook is not None:
            env = dataclasses.replace(env, call=dataclasses.replace(env.call, notebook_path=notebook))
        return check_on_thread(env, check_path(env, path), timeout=timeout, stop=stop or threading.Event())

    def variable_changes(self, prompt_number: int) -> list[VariableChange]:
        """What the turn of prompt `prompt_number` (1-based) did to the kernel's variables, as its
        calls' results recorded it (each variable's first state before the turn and last after)."""
        return turn_changes(self.loop.session.state.all, prompt_number)

    @property
    def plan(self) -> list[Todo] | None:
        """The current plan: the todos of the session's last successful `todo_write` call (on a
        branch, the last one before the branch point), or None when there is none."""
        return current_plan(self.loop.session.state.all)

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)
        self.loop.subscribe(listener)

    # -- turns -----------------------------------------------------------------------------

    @property
    def protect(self) -> bool:
        """Protect mode asked for by this front end (the personal config can also turn it on)."""
        return self._protect

    @protect.setter
    def protect(self, on: bool) -> None:
        self._protect = self.loop.protect = on

    @property
    def protecting(self) -> bool:
        """Whether protect mode is on: asked for by this front end or in the personal config."""
        return self.loop.protecting

    def bind(self, name: str, value: object) -> None:
        """Bind the kernel variable `name` to `value` as a change of the last turn (what
        `%larik -o NAME` does with the outcome): undoing that turn puts back what `name` held
        before, or deletes it. Needs a kernel (`host`); raises `CheckpointError` when the turn's
        record cannot be written (the binding is made, undo does not know of it)."""
        snapshots = self.loop.variables
        if self.host is None or snapshots is None:
            raise LarikError(f"Binding `{name}` needs a kernel; run the agent inside Jupyter (with a `host`).")
        existed = name in self.host.namespace
        snapshots.rebind(self.host.namespace, name, value)
        self.loop.checkpoints.note_variables([(name, existed)])  # a failure says undo will not know

    @property
    def pending_note(self) -> str | None:
        """What the next prompt tells the model first (the note of an undo since), if anything."""
        return self.loop.pending_note

    @property
    def running(self) -> bool:
        """Whether a turn is running."""
        return self.loop.running

    def require_idle(self) -> None:
        """Refuse while a turn runs: undoing, branching or switching the session mid-turn would
        tear it."""
        if self.running:
            raise LarikError("A turn is running; wait for it to end (or `%larik /stop` it), then try again.")

    async def arun(
        self,
        prompt: str,
        extras: PromptExtras | None = None,
        *,
        approver: Approver | None = None,
        yes: bool | None = None,
        listener: Listener | None = None,
        notebook: Path | None = None,
        inline_runner: InlineRunner | None = None,
    ) -> TurnOutcome:
        """Run one turn; `extras` adds blocks (notebook context, attachments) to the prompt
        message. For this turn only: `approver` answers asks, `yes` allows them, `listener`
        hears its events, `notebook` is the kernel's own notebook (the notebook tools' default),
        `inline_runner` is where kernel tools run (the kernel's main thread, when the turn's
        loop runs on another one; None: where the loop is)."""
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
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        caller: str,
        approver: Approver | None = None,
        notebook: Path | None = None,
    ) -> ToolResultBlock:
        """Run one tool call of an outside agent (the MCP client `caller`) as a turn of this
        session: its prompt names the caller and the call, and the call passes the same rules,
        approvals (`approver`; none: an ask is denied), protect mode, hooks and checkpoints as
        a model's. `notebook` as for `arun`. Returns the result as stored."""
        loop = self.loop
        call = ToolUseBlock(id=new_tool_id(), name=name, input=tool_input)
        prompt = f"{caller}: {summarize_call(name, tool_input)}"
        return await loop.run_call(prompt, call, approver=approver, notebook=notebook)

    def run(
        self, prompt: str, extras: PromptExtras | None = None, **options: Unpack[TurnOptions]
    ) -> TurnOutcome:
        """Run one turn to its end and return how it ended (`options` as for `arun`)."""
        return run_sync(self.arun(prompt, extras, **options))

    def stop(self) -> None:
        self.loop.stop()

    def compact(self, instructions: str = "") -> str:
        return run_sync(self.loop.compact(instructions))

    def clear(self) -> None:
        self.loop.clear()

    def undo(
        self, prompt_number: int | None = None, *, force: bool = False, skip_changed: bool = False
    ) -> UndoReport:
        """Revert the newest turn that changed files or kernel variables; the next prompt tells
        the model. With `prompt_number`, every turn from the newest down to that prompt (1-based),
        newest first, stopping after the first one not fully undone. Returns the report: the turns'
        `UndoResult`s, newest first, and what it did in words (`markdown()`, `plain()`, …).

        A file or cell the user changed since its turn is never overwritten unasked: that turn
        is left as it is and its result lists them in `changed`. Undo again with `force=True`
        to restore them anyway (their later changes are lost) or `skip_changed=True` to keep
        them as they are and undo the rest."""
        self.require_idle()
        if prompt_number is None:
            self.last_undo = self._undo_newest(force=force, skip_changed=skip_changed)
        else:
            self.last_undo = self._undo_to(prompt_number, force=force, skip_changed=skip_changed)
        return self.last_undo

    def _undo_newest(self, *, record: bool = True, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Undo the newest turn (files and cells where this kernel shows or keeps them, kernel
        variables) and queue the report's note to the model (recorded in the session unless
        `record` is off: a rewind carries it to its branch instead)."""
        env = self.loop.env
        report = undo_turn(
            self.loop.checkpoints, cells=cell_restorer(env), sources=cell_sources(env), force=force,
            skip_changed=skip_changed,
        )
        if note := report.system_note():
            self.loop.queue_note(note, record=record)
        return report

    def _undo_to(
        self, prompt_number: int, *, nothing_ok: bool = False, record: bool = True, **how: bool
    ) -> UndoReport:
        return undo_down_to(
            self.loop.checkpoints, prompt_number, len(self.loop.session.state.prompt_positions),
            lambda: self._undo_newest(record=record, **how), session_id=self.session_id, nothing_ok=nothing_ok,
        )

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

    def rewind(
        self, prompt_number: int, *, files: bool = False, force: bool = False, skip_changed: bool = False
    ) -> str:
        """Branch just before prompt `prompt_number` (1-based), continue there, return that
        prompt's text.

        With `files`, first undo this session's turns from the newest down to that prompt
        (files and this kernel's variables; `last_undo` holds what was done; `force` and
        `skip_changed` as for `undo`); when one of them cannot be fully undone, raise
        `RewindStopped` and make no branch. Without it nothing on disk changes but the new
        branch. An agent that went on on a branch of a session another process holds
        (`branched_from`) cannot undo that session's turns: with `files` it refuses."""
        self.require_idle()
        if files and self.branched_from:
            raise LarikError(
                f"Session {self.branched_from} is open in another kernel, so its turns can be undone only "
                f"there; this kernel is now on its branch {self.session_id}. Rewind without files to branch it here."
            )
        self.loop.session.sync()
        if files:
            self.last_undo = self._undo_to(
                prompt_number, nothing_ok=True, record=False, force=force, skip_changed=skip_changed
            )
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
        prompt_number: int | None = None, include_shell: bool = False,
    ) -> Path:
        """Write a branch (default: the current session) up to prompt `prompt_number` (default:
        all of it) as a new notebook and return its path: `path` (relative to `cwd`; refused if it exists), else
        `<id>.ipynb` in the session's directory. Shell commands become `!cmd` cells only with
        `include_shell`."""
        from larik_jupyter.analysis.as_notebook import write_notebook

        return write_notebook(
            self._source(session), path, prompt_number=prompt_number, include_shell=include_shell, cwd=self.cwd
        )

    def replay(
        self, session: str | None = None, *, prompt_number: int | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = 600.0, stop_on_fail: bool = False, in_place: bool = False, force: bool = False,
        include_shell: bool = False, rtol: float = 1e-6,
    ) -> ReplayReport:
        """Re-run a branch's code (default: the current session's; up to prompt `prompt_number`,
        default: all of it) in a fresh kernel without the model, in a scratch copy of the project
        unless `in_place` (then files changed since the session are left alone unless `force`,
        and shell commands run only with `include_shell`), and compare each output with the
        recorded one; `report.table()` prints it, `report.exit_status` is 0, 1 or 2."""
        from larik_jupyter.analysis.replay import replay_branch

        return replay_branch(
            self._source(session), prompt_number=prompt_number, cwd=cwd, timeout=timeout,
            stop_on_fail=stop_on_fail, in_place=in_place, force=force, include_shell=include_shell, rtol=rtol,
        )

    def diff(self, other: str, session: str | None = None) -> BranchDiff:
        """Compare a branch (default: the current session) with `other`: their common prefix,
        then each one's prompts and code outputs; `.render()` shows it side by side."""
        from larik_jupyter.analysis.branch_diff import diff_branches

        return diff_branches(self._source(session), resolve(other, self.cwd))

    # -- egress ----------------------------------------------------------------------------

    def set_egress(self, target: str, policy: str) -> str:
        """Set what may leave of variable, file or pattern `target` for this session
        (`never`, `schema`, `stats`, `sample N [mask COL,…]`, `full`); returns the sentence
        saying what now holds. A PolicyError (a LarikError) names a bad policy or target."""
        try:
            parsed = parse_policy(policy)
            target = check_target(target)
        except PolicyError as exc:
            raise LarikError(str(exc)) from None
        door = self.loop.door
        door.set_policy(target, parsed)
        policies = door.policies
        resolved = policies.for_variable(target) if is_variable_target(target) else policies.for_file(target)
        kind = "Variable" if is_variable_target(target) else "Files"
        said = f"{kind} `{target}`: policy `{resolved.policy}` from the next request on."
        if resolved.policy != parsed:
            said += f" The repository's config allows no more than `{resolved.policy}`, so that holds."
        return said

    def set_local_only(self, on: bool) -> str:
        """Mark this session local-models-only (or not); returns the sentence saying what holds."""
        door = self.loop.door
        door.set_local_only(on)
        if door.policies.is_local_only():
            also = " (the repository's config requires it)" if not on else ""
            return (
                "Local models only" + also + ": restricted data goes in full to ollama:/openai-compatible: "
                "servers on this machine and not at all to any other."
            )
        return "Local models only is off: restricted data goes as its policy allows to any model."

    def egress_report(self) -> str:
        """The rules in force, the last turn's requests by source and the session's totals."""
        door = self.loop.door
        records = read_ledger(door.ledger.path) if door.ledger is not None else []
        return render(records, rule_lines(door.policies, origins=True))

    def egress_totals(self) -> str:
        """What this session has sent in all and what was withheld, from its ledger."""
        door = self.loop.door
        records = read_ledger(door.ledger.path) if door.ledger is not None else []
        return totals(by_turn(records))

    def approve(self, name: str) -> list[str]:
        """Approve a pending MCP server, hook, allow rule or LSP server (`name` or `kind:name`,
        pinned to its definition's hash) and apply it to this agent now; returns notices."""
        approve_pending(self.cwd, name)
        return self.loop.reload_config()

    def close(self, *, keep_mcp: bool = False) -> None:
        """Close the session; `keep_mcp` leaves the MCP servers to the agent handed them."""
        self.loop.close(keep_mcp=keep_mcp)

