"""The turn loop: prompt in, streamed reply and tool calls persisted at each semantic boundary.

Internal to the agent: front ends drive `api.Agent`, which holds one `AgentLoop`. A tool call's
way through hooks, permissions and protect mode is `tool_calls.py` (`gate.py`, `protect.py`),
what the model is sent and how that context is kept `model_context.py` (summarising it
`compaction.py`), the turn's own arguments and state, its opening and end `turn.py`."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.gate import turn_gate
from larik_jupyter.agent.hooks import HookRunner
from larik_jupyter.agent.mcp import McpManager, McpTool
from larik_jupyter.agent.mcp_status import started_notice
from larik_jupyter.agent.model_context import ModelContext
from larik_jupyter.agent.options import AgentOptions
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.agent.protect import agent_variables
from larik_jupyter.agent.stop_reasons import (
    cut_call_result,
    max_steps_notice,
    output_limit_notice,
    refused_error,
)
from larik_jupyter.agent.subagents import Child
from larik_jupyter.agent.tool_calls import INTERRUPTED_RESULT, ToolCalls
from larik_jupyter.agent.toolset import agent_tools
from larik_jupyter.agent.turn import PromptExtras, Turn, end_turn, open_turn, prompt_message
from larik_jupyter.agent.undo import record_note
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.config.layers import LoadedConfig, load_config
from larik_jupyter.config.skills import in_personal_skill
from larik_jupyter.egress.door import EgressDoor, TurnMark, open_door
from larik_jupyter.egress.lineage import messages_lineage
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock, Usage
from larik_jupyter.llm.provider import Provider, ProviderError
from larik_jupyter.llm.valid_text import valid_text
from larik_jupyter.lsp.manager import LspManager
from larik_jupyter.session.branch import ancestors
from larik_jupyter.session.call_summary import CellPosition, first_known, positions_in_files
from larik_jupyter.session.store import Session
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.env import CallContext, Env, InlineRunner
from larik_jupyter.tools.envelope import new_nonce
from larik_jupyter.tools.kernel import content_key, kernel_snapshots, user_variables
from larik_jupyter.tools.notebook import cell_positions

DEFAULT_MAX_STEPS = 40


class AgentLoop(ModelContext):
    """The turn loop bound to one open session; `api.Agent` drives it and front ends subscribe
    to its events. `options`: its configuration (`agent/options.py`): its `approver` and `yes`
    are the defaults a turn's own arguments override, `protect` turns protect mode on (see
    `protecting`), its `tools` are offered after the built-in ones."""

    def __init__(
        self, session: Session, provider: Provider, options: AgentOptions, *, loaded: LoadedConfig | None = None,
        checkpoints: CheckpointStore | None = None, parent: AgentLoop | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self.options = options
        host = options.host
        self.parent = parent
        self.cwd = Path(session.cwd)
        self.loaded = loaded or load_config(self.cwd)
        self.root = self.loaded.root
        # A subagent gets its parent's store (or a disabled one) and never opens turns in it.
        self._owns_turns = checkpoints is None
        self.checkpoints = checkpoints or CheckpointStore(session.id, self.root)
        self.turn: Turn | None = None  # the running turn
        # The one egress door of the session; a subagent's requests pass its parent's.
        self.door: EgressDoor = parent.door if parent is not None else open_door(
            self.loaded.config.egress.policy_set(), self.root, Path(session.path),
            (lambda: user_variables(host.namespace or {})) if host is not None else None,
            ancestors(Path(session.path)),
            (lambda name, value: content_key(host.fingerprints, name, value)) if host is not None else None,
            self.turn_mark,
        )
        if parent is None:
            # The variables earlier calls made from restricted sources stay restricted.
            self.door.derive(messages_lineage(session.state.all), resumed=True)
            self.door.hold(options.egress_rules)
        self.provider = provider
        self._stop = threading.Event()
        # The kernel variables kept for undo: this session's, in the one process-wide place.
        self.variables = kernel_snapshots(session.id) if host is not None and self._owns_turns else None
        if self.variables is not None and host is not None:  # what the record says the agent made
            self.variables.adopt(host.namespace, agent_variables(session.state))
        # Servers start on the first file they serve, so an agent that edits nothing pays nothing.
        self.lsp = LspManager.from_config(self.loaded.config, self.root)
        self.env = Env(
            cwd=self.cwd,
            root=self.root,
            checkpoints=self.checkpoints,
            host=host,
            call=CallContext(session_id=session.id, stop_event=self._stop),
            checkpoint_paths=list(self.loaded.config.checkpoint_paths),
            allow_outside=(lambda real: in_personal_skill(self.loaded.skills, real)) if self.loaded.skills else None,
            diagnostics=self.lsp if self.lsp.servers else None,
            keeps_variables=host is not None and self._owns_turns,
            egress=self.door.policies,
        )
        self.tools: dict[str, Tool] = agent_tools(
            self.env, self.loaded, tasks_for=self if parent is None else None, skills=lambda: self.loaded.skills
        )
        self.tools |= {tool.name: tool for tool in options.tools}
        self.mcp: McpManager | None = parent.mcp if parent is not None else options.mcp
        self._set_mcp_tools()
        self.hooks = HookRunner(
            self.loaded.config.hooks,
            cwd=self.cwd,
            session_id=session.id,
            transcript=Path(session.path),
            emit=self.emit,
        )
        self.context: list[Message] = session.state.context_for_model()
        self.pending_note: str | None = session.state.pending_note
        self.last_call_usage: Usage | None = None
        self._usage_at = 0  # len(self.context) right after the call `last_call_usage` counts
        self._http_trace: Callable[[], Any] | None = None
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def turn_mark(self) -> TurnMark:
        """The turn the egress ledger's lines belong to: the running one, else the session's last
        (an answer to an outside agent after its call's turn, a `/compact` between turns)."""
        turn = self.turn
        if turn is not None:
            return TurnMark(turn.outcome.turn, turn.env.call.prompt_number)
        prompts = len(self.session.state.prompt_positions)
        return TurnMark(self.checkpoints.last_turn or None, prompts or None)

    @property
    def session_path(self) -> Path:
        return Path(self.session.path)

    def child(self, session: Session, loaded: LoadedConfig, checkpoints: CheckpointStore) -> Child:
        """A subagent's loop on `session`, answering asks as this loop's running turn does."""
        turn = self.turn
        options = AgentOptions(
            cwd=Path(session.cwd), approver=turn.approver if turn is not None else self.options.approver,
            yes=turn.yes if turn is not None else self.options.yes,
        )
        return AgentLoop(session, self.provider, options, loaded=loaded, checkpoints=checkpoints, parent=self)

    # -- control --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def stop(self) -> None:
        """Interrupt the running turn; safe to call from any thread or a widget callback."""
        self._stop.set()
        task, loop = self._task, self._loop
        if task is not None and loop is not None and not task.done():
            loop.call_soon_threadsafe(task.cancel)

    def close(self, *, keep_mcp: bool = False) -> None:
        """Close the session and its servers; `keep_mcp` leaves the MCP servers running for the
        next session's loop, which was handed the same manager."""
        if self.parent is None and self.mcp is not None and not keep_mcp:
            self.mcp.close()
        self.lsp.close()
        self.session.close()

    def reload_config(self) -> list[str]:
        """Re-read the config (after an approval, say): rules, hooks and LSP servers apply from
        the next call, and MCP servers it now allows start at once. Returns notices."""
        before = self.loaded.config
        self.loaded = load_config(self.cwd)
        config = self.loaded.config
        notices = list(self.loaded.errors)
        if self.parent is None:
            self.door.reload(config.egress.policy_set())
            self.env.egress = self.door.policies
        self.hooks.configure(config.hooks)
        if config.lspServers != before.lspServers:
            self.lsp.close()
            self.lsp = LspManager.from_config(config, self.root)
            self.env = dataclasses.replace(self.env, diagnostics=self.lsp if self.lsp.servers else None)
        if self.parent is None:
            self.mcp = self.mcp or McpManager({}, cwd=self.cwd)
            notices += [started_notice(status) for status in self.mcp.sync(self.loaded)]
            self._set_mcp_tools()
        return notices

    def _set_mcp_tools(self) -> None:
        """The tools in one order whatever the history of loading (the tools lead every
        request, so a new order would miss the whole prompt cache): the built-in tools in
        their order, then the MCP tools sorted by name."""
        own = {n: t for n, t in self.tools.items() if not isinstance(t, McpTool)}
        remote = self.mcp.tools() if self.mcp is not None else {}
        self.tools = own | dict(sorted(remote.items()))

    # -- the turn -------------------------------------------------------------------------

    async def run_turn(
        self,
        prompt: str,
        extras: PromptExtras | None = None,
        *,
        approver: Approver | None = None,
        yes: bool | None = None,
        notebook: Path | None = None,
        inline_runner: InlineRunner | None = None,
    ) -> TurnOutcome:
        """Run one user turn to its end; interruption and provider errors end it cleanly. For
        this turn only: `approver` answers asks and `yes` allows them (else the loop's), and
        the tools get `notebook` as the kernel's own notebook and run kernel code through
        `inline_runner` (None: where the loop runs)."""
        extras = extras or PromptExtras()
        prompt = valid_text(prompt)
        turn = self._begin_turn(
            prompt, extras.nonce, approver=self.options.approver if approver is None else approver,
            yes=self.options.yes if yes is None else yes, notebook=notebook, inline_runner=inline_runner,
        )
        outcome = turn.outcome
        try:
            hooked = await self.hooks.prompt_submitted(prompt)
            if hooked.refusal is not None:
                outcome.status, outcome.error = "blocked", hooked.refusal
            else:
                await self._maybe_compact()
                self._append(self._prompt_message(prompt, hooked.notices, extras), sync=True)
                await self._steps(turn)
        except asyncio.CancelledError:
            outcome.status = "interrupted"
            task = asyncio.current_task()
            if task is not None and self._stop.is_set():
                task.uncancel()
            else:
                self._finish(outcome)
                raise
        except ProviderError as exc:
            outcome.status, outcome.error = "error", str(exc)
        stop_notices: list[str] = []
        if outcome.status != "interrupted":
            stop_notices = (await self.hooks.turn_ended(outcome.status)).notices
        if turn.answered is not None:
            outcome.answer, outcome.value = turn.answered.name, turn.answered.value
        self._finish(outcome, stop_notices)
        return outcome

    async def run_call(
        self, prompt: str, call: ToolUseBlock, *, approver: Approver | None = None, notebook: Path | None = None
    ) -> ToolResultBlock:
        """One turn of an outside agent (an MCP client): `prompt` (who called what) stands for
        the user's prompt and `call` for the model's reply, and the call runs through the same
        rules, approvals (`approver`; None: an ask is denied), protect mode, hooks and
        checkpoints as a model's. Returns its result as stored; stopped, the call's result says
        it was interrupted and CancelledError goes on."""
        turn = self._begin_turn(valid_text(prompt), None, approver=approver, yes=False, notebook=notebook)
        # An outside agent has no --yes: what it is told where nobody could answer.
        turn.unanswered = (
            "no notebook showing this kernel is open in a browser and this client cannot ask its user; "
            "ask the person to open the notebook or to add an allow rule for this tool to their larik config"
        )
        outcome = turn.outcome
        try:
            self._append(self._prompt_message(outcome.prompt, [], PromptExtras()), sync=True)
            self._append(Message(role="assistant", content=[call]), sync=True)
            result = await self._tool_calls(turn).run(call)
            self._append(Message(role="user", content=[result]), sync=True)
        except asyncio.CancelledError:
            outcome.status = "interrupted"
            self._finish(outcome)  # the call gets its interrupted result in the transcript
            task = asyncio.current_task()
            if task is None or not self._stop.is_set():
                raise
            task.uncancel()  # our own stop() (Jupyter's interrupt): the call ends, not the cell
            return ToolResultBlock(tool_use_id=call.id, content=INTERRUPTED_RESULT, is_error=True)
        self._finish(outcome)
        return result

    def _begin_turn(
        self, prompt: str, nonce: str | None, *, approver: Approver | None, yes: bool,
        notebook: Path | None, inline_runner: InlineRunner | None = None,
    ) -> Turn:
        """Open a turn: its checkpoint turn, the kernel's variable snapshots, the nonce its
        notebook data is wrapped with, and the `Turn` its steps are given; refused while
        another turn runs."""
        if self.running:
            raise LarikError("A turn is already running; stop it first with `%larik /stop`.")
        self._stop.clear()
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        prompt_number = len(self.session.state.prompt_positions) + 1
        number = open_turn(
            prompt_number, checkpoints=self.checkpoints, owns_turns=self._owns_turns, host=self.options.host,
            variables=self.variables, budget_mb=self.loaded.config.kernel_snapshot_budget_mb, protect=self.protecting,
        )
        call = dataclasses.replace(
            self.env.call, prompt_number=prompt_number, nonce=nonce or new_nonce(), notebook_path=notebook,
            run_inline=inline_runner,
        )
        outcome = TurnOutcome(turn=number, status="done", session_id=self.session.id, prompt=prompt)
        turn = self.turn = Turn(
            approver=approver,
            yes=yes,
            env=dataclasses.replace(self.env, call=call),
            outcome=outcome,
        )
        if self._owns_turns:
            self.door.sync()  # the notebook's rules as they are now (another session of the kernel may have set one)
        self.emit(ae.TurnStarted(turn=number, prompt=prompt, model=self.provider.name))
        return turn

    def _tool_calls(self, turn: Turn) -> ToolCalls:
        """What runs `turn`'s tool calls."""
        gate = turn_gate(turn, loaded=lambda: self.loaded, reread=self._reread_config, cwd=self.cwd, emit=self.emit)
        return ToolCalls(
            turn=turn, tools=self.tools, hooks=self.hooks, gate=gate, protecting=self.protecting,
            position=lambda: self.cell_position(turn.env), store=lambda m: self._append(m, sync=True),
            emit=self.emit,
        )

    def _finish(self, outcome: TurnOutcome, stop_notices: list[str] | None = None) -> None:
        self._answer_unanswered(INTERRUPTED_RESULT)
        end_turn(
            outcome, stop_notices, session=self.session, model=self.provider.name, checkpoints=self.checkpoints,
            door=self.door, owns_turns=self._owns_turns, host=self.options.host, variables=self.variables, emit=self.emit,
        )
        # Not held past the turn: its `answer` value is the user's, and its runner the cell's.
        self._task = self.turn = None

    def queue_note(self, note: str, *, record: bool = True) -> None:
        """Tell the model with the next prompt; notes of several undos add up. Recorded in the
        session (unless `record` is off) so the note still reaches the model after a kernel
        restart."""
        if record:
            self.pending_note = record_note(self.session, self.pending_note, note)
        else:
            self.pending_note = f"{self.pending_note}\n{note}" if self.pending_note else note

    def _prompt_message(self, prompt: str, hooks: list[str], extras: PromptExtras) -> Message:
        note, self.pending_note = self.pending_note, None
        return prompt_message(prompt, note, hooks, extras)

    async def _steps(self, turn: Turn) -> None:
        outcome = turn.outcome
        max_steps = self.loaded.config.max_steps or DEFAULT_MAX_STEPS
        for step in range(1, max_steps + 1):
            await self._maybe_compact(only_if_over=step == 1)
            end = await self._call_model(step, outcome)
            message = end.message
            outcome.text = message.text() or outcome.text
            if message.refused:
                outcome.status, outcome.error = "error", refused_error(self.provider.name)
                return
            calls = message.tool_uses()
            cut = calls.pop() if calls and end.stop_reason == "max_tokens" else None
            if end.stop_reason == "max_tokens":
                self.emit(ae.Notice(output_limit_notice(self.provider.name, cut), level="warning"))
            if not (calls or cut) or message.interrupted:
                return
            runner = self._tool_calls(turn)
            results = await runner.run_all(calls)
            if cut is not None:
                results.append(runner.error_result(cut, cut_call_result(cut.name)))
            # Written and flushed at once (tool completion); fsynced with the next boundary.
            self._append(Message(role="user", content=list(results)))
            if turn.warning is not None:  # protect mode: nothing is built on it unseen
                outcome.error = turn.warning
                return
        outcome.status = "max_steps"
        self.emit(ae.Notice(max_steps_notice(max_steps), level="warning"))

    def _reread_config(self) -> None:
        self.loaded = load_config(self.cwd)

    @property
    def protecting(self) -> bool:
        """Protect mode: on from the front end (`protect`) or the personal config."""
        return self.options.protect or self.loaded.config.protect_variables

    def cell_position(self, env: Env | None = None) -> CellPosition:
        """Where a cell a notebook call names stands now (0-based, None when unknown): in the
        open notebook (`env`: the running turn's, which knows the kernel's notebook), else in
        the notebook file; every view names cells by it."""
        return first_known(cell_positions(env or self.env), positions_in_files(self.cwd))
