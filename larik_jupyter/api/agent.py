"""`Agent`: the one session object every front end drives, and what users script with.

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
from larik_jupyter.agent.options import AgentOptions, OptionKeywords, agent_options
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.agent.turn import PromptExtras, TurnOptions
from larik_jupyter.agent.undo import bind_variable
from larik_jupyter.agent.undo_report import UndoReport
from larik_jupyter.api.config import SessionConfig
from larik_jupyter.api.egress import SessionEgress
from larik_jupyter.api.history import SessionHistory
from larik_jupyter.api.outside import OutsideSessions
from larik_jupyter.api.servers import SessionServers
from larik_jupyter.api.switching import Switching
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import ToolResultBlock, ToolUseBlock
from larik_jupyter.llm.script import new_tool_id
from larik_jupyter.records import SessionRecords
from larik_jupyter.run_sync import run_sync
from larik_jupyter.session.receipts import cell_receipts
from larik_jupyter.session.variable_changes import made_by_prompt
from larik_jupyter.tools.calls import cell_run, summarize_call
from larik_jupyter.tools.check import CheckReport
from larik_jupyter.tools.env import InlineRunner

if TYPE_CHECKING:
    from larik_jupyter.analysis.replay import ReplayReport


class Agent(Switching):
    """A coding agent working in `cwd` (default: the current directory) on one session at a time.

    `session`: an id or file path to resume; `continue_latest`: resume the directory's latest;
    `lazy`: open no session until one is needed (a kernel's agent, opened at its first prompt
    or by `resume`/`new`; `opened` says whether it is).
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

    Beside its turns it switches sessions (`Switching`: new, resume, fork, rewind, undo in
    another session, export, delete) and holds the sessions of outside agents (`outside`).
    """

    def __init__(
        self, cwd: str | os.PathLike[str] | None = None, *, session: str | None = None,
        continue_latest: bool = False, lazy: bool = False, options: AgentOptions | None = None,
        **keywords: Unpack[OptionKeywords],
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
        self._options = options or agent_options(cwd, **keywords)
        self._loop: AgentLoop | None = None
        self.outside: OutsideSessions[Agent] = OutsideSessions(self._outside_agent)
        if not lazy:
            self._open_on(session, continue_latest, model=self._options.model)

    @property
    def options(self) -> AgentOptions:
        """What this agent is configured with (the loop's own, so what runs is what shows)."""
        return self._loop.options if self._loop is not None else self._options

    @property
    def opened(self) -> bool:
        """Whether a session is open (a lazy agent opens one when it is first needed)."""
        return self._loop is not None

    @property
    def loop(self) -> AgentLoop:
        """The turn loop of the open session; a lazy agent opens a new session first."""
        if self._loop is None:
            self._open_on(None, False, model=self._options.model)
            assert self._loop is not None
        return self._loop

    def _open_on(self, session: str | None, continue_latest: bool, *, model: str | None) -> None:
        """Open `session` (None: a new one; `continue_latest`: the latest) on this agent's
        options with `model` (None: the model the session was recorded with), then close the
        session open before; the MCP servers carry over."""
        old = self._loop
        options = dataclasses.replace(self.options, model=model, mcp=old.mcp if old is not None else self.options.mcp)
        opened = open_agent(options, session=session, continue_latest=continue_latest)
        self.notices = opened.notices
        self.branched_from = opened.branched_from
        for listener in self._listeners:
            opened.loop.subscribe(listener)
        if old is not None:
            old.close(keep_mcp=True)
        self._loop = opened.loop

    def _outside_agent(self, client: str) -> Agent:
        return Agent(options=dataclasses.replace(self._options, model=f"mcp:{client}", mcp=None, yes=False, approver=None))

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
    def records(self) -> SessionRecords:
        """The current session as plain records (turns, tool calls, files, tokens, cost)."""
        return SessionRecords.from_state(self.loop.session.state, self.session_id)

    @property
    def history(self) -> SessionHistory:
        """The session's stored history: entries, what can be undone, plan, variable changes."""
        return SessionHistory(self.loop)

    @property
    def egress(self) -> SessionEgress:
        """The session's egress door: its rules, local-only mode and ledger."""
        return SessionEgress(self.loop)

    @property
    def config(self) -> SessionConfig:
        """The project's config as this session follows it: approvals and reloads."""
        return SessionConfig(self.loop)

    @property
    def servers(self) -> SessionServers:
        """The session's MCP and language servers with their state."""
        return SessionServers(self.loop)

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
                              network=network, made=made, receipts=cell_receipts(state.all, cell_run, state.undone))

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)
        if self._loop is not None:
            self._loop.subscribe(listener)

    # -- turns -----------------------------------------------------------------------------

    @property
    def protect(self) -> bool:
        """Protect mode asked for by this front end (the personal config can also turn it on)."""
        return self.options.protect

    @protect.setter
    def protect(self, on: bool) -> None:
        self._options = dataclasses.replace(self._options, protect=on)
        if self._loop is not None:
            self._loop.options = dataclasses.replace(self._loop.options, protect=on)

    @property
    def protecting(self) -> bool:
        """Whether protect mode is on: asked for by this front end or in the personal config."""
        return self.loop.protecting

    def bind(self, name: str, value: object) -> None:
        """Bind kernel variable `name` to `value` as a change of the last turn (`%larik -o NAME`):
        undoing that turn puts back what `name` held, or deletes it. Needs a kernel (`host`);
        `CheckpointError`: the record could not be written (bound, but undo does not know)."""
        bind_variable(self.options.host, self.loop.variables, self.loop.checkpoints, name, value)

    @property
    def running(self) -> bool:
        """Whether a turn is running."""
        return self._loop is not None and self._loop.running

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
        loop = self.loop
        if listener is not None:
            loop.subscribe(listener)
        try:
            return await loop.run_turn(
                prompt, extras, approver=approver, yes=yes, notebook=notebook, inline_runner=inline_runner
            )
        finally:
            if listener is not None:
                loop.unsubscribe(listener)

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
        if self._loop is not None:
            self._loop.stop()

    def compact(self, instructions: str = "") -> str:
        return run_sync(self.loop.compact(instructions))

    def clear(self) -> None:
        self.loop.clear()

    def switch_model(self, model: str) -> None:
        from larik_jupyter.llm.select import select_provider

        provider, _ = select_provider(model, self.loop.loaded.config)
        self.loop.switch_provider(provider)

    # -- the branch as an analysis ---------------------------------------------------------

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

    def close(self, *, keep_mcp: bool = False) -> None:
        """Close the session and the outside agents' sessions; `keep_mcp` leaves the MCP servers
        to the agent handed them."""
        self.outside.close_all()
        if self._loop is not None:
            self._loop.close(keep_mcp=keep_mcp)
