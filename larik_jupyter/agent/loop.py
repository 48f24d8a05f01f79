"""The turn loop: prompt in, streamed reply and tool calls persisted at each semantic boundary."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.compaction import compact_context, needs_compaction, room
from larik_jupyter.agent.hooks import HookRunner
from larik_jupyter.agent.mcp import McpManager, McpTool, started_notice
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import (
    Approver,
    PermissionAnswer,
    PermissionRequest,
    always_rule,
)
from larik_jupyter.agent.preview import preview_change
from larik_jupyter.agent.prompt import egress_rules, system_prompt
from larik_jupyter.agent.stop_reasons import cut_call_result, output_limit_notice, refused_error
from larik_jupyter.agent.summary import approval_question
from larik_jupyter.agent.toolset import agent_tools, concurrent_batches
from larik_jupyter.agent.undo import UndoReport, record_note, undo_turn
from larik_jupyter.checkpoint.errors import CheckpointError, NothingToUndoError
from larik_jupyter.checkpoint.store import CheckpointStore, UndoResult
from larik_jupyter.config.layers import LoadedConfig, load_config
from larik_jupyter.config.rules import allowed_by, decide
from larik_jupyter.config.skills import skills_prompt
from larik_jupyter.config.update import add_allow_rule
from larik_jupyter.egress.door import EgressDoor, open_door
from larik_jupyter.egress.tags import tagged
from larik_jupyter.errors import LarikError
from larik_jupyter.llm import events as ev
from larik_jupyter.llm.builder import MessageBuilder
from larik_jupyter.llm.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from larik_jupyter.llm.pricing import cost as price_usage
from larik_jupyter.llm.provider import Provider, ProviderError
from larik_jupyter.llm.tokens import context_tokens, estimate_tokens, has_tokens
from larik_jupyter.llm.valid_text import valid_event, valid_text
from larik_jupyter.lsp.manager import LspManager
from larik_jupyter.session.branch import BranchError, ancestors
from larik_jupyter.session.call_summary import (
    CellPosition,
    first_known,
    positions_in_files,
    summarize_call,
)
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.numbers import trace_last_turn
from larik_jupyter.session.store import Session
from larik_jupyter.session.variable_changes import VariableChange
from larik_jupyter.tools.base import Tool, ToolResult, failure_result
from larik_jupyter.tools.env import CallContext, Env
from larik_jupyter.tools.envelope import new_nonce
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel import (
    Answer,
    kernel_snapshots,
    protect_text,
    protected_changes,
    user_variables,
)
from larik_jupyter.tools.notebook import (
    cell_positions,
    cell_restorer,
    cell_sources,
    kernel_notebook,
)
from larik_jupyter.tools.registry import tool_schemas, unavailable_reason

DEFAULT_MAX_STEPS = 40
INTERRUPTED_RESULT = "Interrupted by the user before this tool call finished."
CLEARED_SUMMARY = "The user cleared the conversation context (/clear); earlier messages are not part of it."


@dataclass
class PromptExtras:
    """What a front end adds to a prompt message: blocks before the prompt text (the notebook
    context), blocks after it (attachments), the attachments' metadata, the nonce its
    notebook data was wrapped with (the turn's nonce; tools wrap with the same one), and the
    cells the user ran since the previous prompt (stored with the prompt, never sent)."""

    before: list[ContentBlock] = field(default_factory=list)
    after: list[ContentBlock] = field(default_factory=list)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    nonce: str | None = None
    cells: list[dict[str, Any]] = field(default_factory=list)


class AgentLoop:
    """The turn loop bound to one open session; front ends drive it and subscribe to events."""

    def __init__(
        self,
        session: Session,
        provider: Provider,
        *,
        loaded: LoadedConfig | None = None,
        approver: Approver | None = None,
        yes: bool = False,
        host: KernelHost | None = None,
        checkpoints: CheckpointStore | None = None,
        parent: AgentLoop | None = None,
        mcp: McpManager | None = None,
    ) -> None:
        self.session = session
        self.parent = parent
        self.cwd = Path(session.cwd)
        self.loaded = loaded or load_config(self.cwd)
        self.root = self.loaded.root
        # The one egress door of the session; a subagent's requests pass its parent's.
        self.door: EgressDoor = parent.door if parent is not None else open_door(
            self.loaded.config.egress.policy_set(), self.root, Path(session.path),
            (lambda: user_variables(host.namespace or {})) if host is not None else None,
            ancestors(Path(session.path)),
        )
        self.provider = provider
        self.approver = approver
        self.yes = yes
        # A subagent gets its parent's store (or a disabled one) and never opens turns in it.
        self._owns_turns = checkpoints is None
        self.checkpoints = checkpoints or CheckpointStore(session.id, self.root)
        self._stop = threading.Event()
        self.env = Env(
            cwd=self.cwd,
            root=self.root,
            checkpoints=self.checkpoints,
            host=host,
            call=CallContext(session_id=session.id, stop_event=self._stop),
            checkpoint_paths=list(self.loaded.config.checkpoint_paths),
            egress=self.door.policies,
        )
        self.host = host
        if host is not None and self._owns_turns:
            self.env.variables = kernel_snapshots(session.id)
        # Servers start on the first file they serve, so an agent that edits nothing pays nothing.
        self.lsp = LspManager.from_config(self.loaded.config, self.root)
        self.env.diagnostics = self.lsp if self.lsp.servers else None
        self.tools: dict[str, Tool] = agent_tools(self)
        self.mcp: McpManager | None = parent.mcp if parent is not None else mcp
        if self.loaded.skills:
            self.env.allow_outside = self._in_personal_skill
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
        self._listeners: list[ae.Listener] = []
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.answered: Answer | None = None  # the turn's `answer` call, if any
        self.protect = False  # protect mode asked for by the front end (see `protecting`)

    @property
    def provider(self) -> Provider:
        """The model provider; every request it sends passes the session's egress door."""
        return self._provider

    @provider.setter
    def provider(self, provider: Provider) -> None:
        provider.door = self.door
        self._provider = provider

    def _in_personal_skill(self, real: Path) -> bool:
        """Whether `real` lies in a personal skill's folder, which `read` may open although it
        is outside the project root."""
        return any(
            real.is_relative_to(os.path.realpath(skill.folder))
            for skill in self.loaded.skills
            if skill.usable and skill.source == "personal"
        )

    # -- events ---------------------------------------------------------------------------

    def subscribe(self, listener: ae.Listener) -> None:
        """Call `listener` with every event of every later turn."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: ae.Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: ae.AgentEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

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
            self.env.diagnostics = self.lsp if self.lsp.servers else None
        if self.parent is None:
            self.mcp = self.mcp or McpManager({}, cwd=self.cwd)
            notices += [started_notice(status) for status in self.mcp.sync(self.loaded)]
            self._set_mcp_tools()
        return notices

    def add_tools(self, tools: Iterable[Tool]) -> None:
        """Offer `tools` too (after the built-in ones, replacing any of the same name)."""
        self.tools |= {tool.name: tool for tool in tools}
        self._set_mcp_tools()

    def _set_mcp_tools(self) -> None:
        """The tools in one order whatever the history of loading (the tools lead every
        request, so a new order would miss the whole prompt cache): the built-in tools in
        their order, then the MCP tools sorted by name."""
        own = {n: t for n, t in self.tools.items() if not isinstance(t, McpTool)}
        remote = self.mcp.tools() if self.mcp is not None else {}
        self.tools = own | dict(sorted(remote.items()))

    # -- the turn -------------------------------------------------------------------------

    async def run_turn(self, prompt: str, extras: PromptExtras | None = None) -> TurnOutcome:
        """Run one user turn to its end; interruption and provider errors end it cleanly."""
        if self.running:
            raise LarikError("A turn is already running; stop it first with `%larik /stop`.")
        extras = extras or PromptExtras()
        prompt = valid_text(prompt)
        self.env.call.nonce = extras.nonce or new_nonce()
        self._stop.clear()
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        prompt_number = len(self.session.state.prompt_positions) + 1
        if self._owns_turns:
            turn = self.checkpoints.begin_turn(prompt_number)
            if self.env.variables is not None:
                self.env.variables.open_turn(
                    turn, self.loaded.config.kernel_snapshot_budget_mb, protect=self.protecting
                )
            if self.host is not None:
                self.host.fingerprints.clear()  # the user may have run cells since the last turn
        else:
            turn = 1
        self.env.call.prompt_number = prompt_number
        if self._owns_turns:
            self.door.turn, self.door.prompt = turn, prompt_number
        outcome = TurnOutcome(turn=turn, status="done", session_id=self.session.id, prompt=prompt)
        self.answered = None
        self.emit(ae.TurnStarted(turn=turn, prompt=prompt, model=self.provider.name))
        try:
            hooked = await self.hooks.prompt_submitted(prompt)
            if hooked.refusal is not None:
                outcome.status, outcome.error = "blocked", hooked.refusal
            else:
                await self._maybe_compact()
                self._append(self._prompt_message(prompt, hooked.notices, extras), sync=True)
                await self._steps(outcome)
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
        if self.answered is not None:
            outcome.answer, outcome.value = self.answered.name, self.answered.value
        self._finish(outcome, stop_notices)
        return outcome

    def _finish(self, outcome: TurnOutcome, stop_notices: list[str] | None = None) -> None:
        self._answer_unanswered(INTERRUPTED_RESULT)
        if self._owns_turns:
            self.checkpoints.finish_turn()
        if self.host is not None and self._owns_turns:
            # Held only within the turn: a variable the user deletes next must not stay alive here.
            self.host.fingerprints.clear()
        if self.env.variables is not None:
            self.env.variables.forget_call()
        if self.env.variables is not None and (changed := self.env.variables.recorded(outcome.turn)):
            try:
                self.checkpoints.note_variables(changed)
            except CheckpointError as exc:
                self.emit(ae.Notice(str(exc), level="warning"))
        if outcome.usage.input_tokens or outcome.usage.output_tokens or stop_notices:
            self.session.append(
                Entry(
                    type="usage",
                    usage=outcome.usage,
                    model=self.provider.name,
                    hooks=stop_notices or None,
                ),
                sync=True,
            )
        else:
            self.session.sync()
        if self._owns_turns and (line := self.door.withheld_line(outcome.turn)):
            self.emit(ae.Notice(line))
        state = self.session.state
        traced = trace_last_turn(state)
        if traced is not None and traced.count:
            self.emit(ae.NumbersUnfound(traced.texts(), traced))
        self.emit(
            ae.UsageReported(
                turn_usage=outcome.usage,
                turn_cost=outcome.cost,
                session_usage=state.usage,
                session_cost=state.cost,
            )
        )
        self.emit(ae.TurnEnded(turn=outcome.turn, status=outcome.status, error=outcome.error))
        self._task = None

    def queue_note(self, note: str, *, record: bool = True) -> None:
        """Tell the model with the next prompt; notes of several undos add up. Recorded in the
        session (unless `record` is off) so the note still reaches the model after a kernel
        restart."""
        if record:
            self.pending_note = record_note(self.session, self.pending_note, note, self.provider.name)
        else:
            self.pending_note = f"{self.pending_note}\n{note}" if self.pending_note else note

    def _prompt_message(self, prompt: str, hooks: list[str], extras: PromptExtras) -> Message:
        blocks: list[ContentBlock] = []
        if self.pending_note:
            blocks.append(TextBlock(text=self.pending_note))
            self.pending_note = None
        blocks += [*extras.before, TextBlock(text=prompt), *extras.after]
        return Message(
            role="user", content=blocks, hooks=hooks or None, attachments=extras.attachments or None,
            cells=extras.cells or None,
        )

    def _append(self, message: Message, *, sync: bool = False) -> Message:
        """Store `message` and add it to the model context as stored (its text valid UTF-8)."""
        stored = self.session.append(Entry(type="message", message=message), sync=sync).message
        assert stored is not None
        self.context.append(stored)
        return stored

    def _system(self) -> str:
        return system_prompt(
            self.cwd,
            self.root,
            self.loaded.instructions,
            in_kernel=self.host is not None,
            skills=skills_prompt(self.loaded.skills),
            protected=self.protecting and self.host is not None,
            egress=egress_rules(self.door.policies),
        )

    async def _steps(self, outcome: TurnOutcome) -> None:
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
            results = await self._run_tools(calls)
            if cut is not None:
                results.append(self._error_result(cut, cut_call_result(cut.name)))
            # Written and flushed at once (tool completion); fsynced with the next boundary.
            self._append(Message(role="user", content=list(results)))
        outcome.status = "max_steps"
        self.emit(
            ae.Notice(
                f"Stopped after {max_steps} model calls in one turn (max_steps); "
                "send another prompt to continue.",
                level="warning",
            )
        )

    async def _call_model(self, step: int, outcome: TurnOutcome) -> ev.MessageEnd:
        """One model call; its end event carries the message as stored."""
        self.emit(ae.ModelCall(step=step))
        builder = MessageBuilder()
        try:
            system, schemas = self._system(), tool_schemas(self.tools)
            async for raw in self.provider.stream(system, self.context, schemas):
                event = valid_event(raw)
                builder.add(event)
                self._forward(event)
                if isinstance(event, ev.MessageEnd):
                    usage = event.usage
                    if usage.estimated and not has_tokens(usage):
                        # The server reported no usage: count the request and reply ourselves.
                        usage = Usage(
                            input_tokens=estimate_tokens(self.context, system, schemas),
                            output_tokens=estimate_tokens([event.message]),
                            estimated=True,
                        )
                    self._add_usage(outcome, usage)
                    reply = event.message
                    if event.stop_reason == "refusal":
                        reply = reply.model_copy(update={"refused": True})
                    # A tool about to touch the disk is a durability boundary; reads are not.
                    message = self._append(reply, sync=self._touches_disk(reply))
                    self.last_call_usage, self._usage_at = usage, len(self.context)
                    self.emit(ae.AssistantMessage(message))
                    if event.error:
                        outcome.status, outcome.error = "interrupted", event.error
                    return dataclasses.replace(event, message=message)
        except asyncio.CancelledError:
            partial = builder.message(interrupted=True)
            self._append(partial, sync=True)
            self.emit(ae.AssistantMessage(partial))
            raise
        raise ProviderError(f"The model stream from {self.provider.name} ended without a message.")

    def _touches_disk(self, message: Message) -> bool:
        for call in message.tool_uses():
            tool = self.tools.get(call.name)
            if tool is None or not tool.read_only():
                return True
        return False

    def _forward(self, event: ev.StreamEvent) -> None:
        if isinstance(event, ev.TextDelta):
            self.emit(ae.TextDelta(event.text))
        elif isinstance(event, ev.ThinkingDelta) and event.thinking:
            self.emit(ae.ThinkingDelta(event.thinking))
        elif isinstance(event, ev.Retrying):
            self.emit(event)
        elif isinstance(event, ev.ContextNotice):
            self.emit(ae.Notice(event.text, level="warning"))

    def _add_usage(self, outcome: TurnOutcome, usage: Usage) -> None:
        outcome.usage = outcome.usage + usage
        outcome.cost = price_usage(self.provider.name, outcome.usage)

    # -- tools ----------------------------------------------------------------------------

    async def _run_tools(self, calls: list[ToolUseBlock]) -> list[ToolResultBlock]:
        done: dict[str, ToolResultBlock] = {}

        async def run(call: ToolUseBlock) -> None:
            done[call.id] = await self._run_tool(call)

        try:
            for batch in concurrent_batches(calls, self.tools):
                await asyncio.gather(*(run(call) for call in batch))
        except asyncio.CancelledError:
            interrupted = [
                done.get(c.id)
                or ToolResultBlock(tool_use_id=c.id, content=INTERRUPTED_RESULT, is_error=True)
                for c in calls
            ]
            self._append(Message(role="user", content=interrupted), sync=True)
            raise
        return [done[c.id] for c in calls]

    async def _run_tool(self, call: ToolUseBlock) -> ToolResultBlock:
        position = self.cell_position()  # one read of a notebook file per call, at most
        summary = summarize_call(call.name, call.input, position)
        self.emit(ae.ToolRequested(call.id, call.name, dict(call.input), summary))
        tool = self.tools.get(call.name)
        if tool is None:
            why = unavailable_reason(call.name, self.env)
            return self._error_result(
                call, why or f"Unknown tool `{call.name}`; available: {', '.join(self.tools)}."
            )
        before = await self.hooks.before_tool(call.name, dict(call.input))
        if before.refusal is not None:
            return self._error_result(call, before.refusal, before.notices)
        protected = self._protected(call)
        denial = await self._permission(call, tool, summary, protected, position)
        if denial is not None:
            return self._error_result(call, denial, before.notices)
        self.emit(ae.ToolStarted(call.id, call.name, summary))
        self.env.call.tool_use_id = call.id
        self.env.call.on_output = lambda text: self.emit(ae.ToolOutput(call.id, text))
        started = time.monotonic()
        try:
            result: ToolResult = await tool.arun(self.env, dict(call.input))
        except Exception as exc:  # a tool with its own `arun` (MCP, task) that let one through
            result = failure_result(call.name, exc)
        except asyncio.CancelledError:  # Stop during a cell: what it did unasked is not kept
            if self._guarded(call):
                assert self.host is not None and self.env.variables is not None
                unasked = self._unasked(self.env.variables.last_changes(), set(protected))
                self.env.variables.roll_back(self.host.namespace, [c.name for c in unasked])
            raise
        finally:
            self.env.call.on_output = None
        if result.variables and self._guarded(call):
            await self._keep_or_roll_back(call, result, set(protected))
        seconds = time.monotonic() - started
        result.content, result.diff = valid_text(result.content), result.diff and valid_text(result.diff)
        after = await self.hooks.after_tool(call.name, dict(call.input), result.content, result.is_error)
        for notice in result.notices:
            self.emit(ae.Notice(notice, level="warning"))
        if result.answer is not None:
            self.answered = result.answer
        self.emit(
            ae.ToolFinished(
                id=call.id,
                name=call.name,
                summary=summary,
                content=result.content,
                is_error=result.is_error,
                seconds=seconds,
                diff=result.diff,
                uncaptured=list(result.uncaptured),
                images=list(result.images),
                traceback=result.traceback,
                display=result.display,
                displays=list(result.displays),
                variables=list(result.variables),
            )
        )
        content: str | list[ContentBlock] = result.content
        if result.images:
            content = [TextBlock(text=result.content), *result.images]
        return tagged(ToolResultBlock(
            tool_use_id=call.id,
            content=content,
            is_error=result.is_error or None,
            diff=result.diff or None,
            duration=round(seconds, 3),
            subagent=getattr(result, "subagent", None) or None,
            hooks=before.notices + after.notices or None,
            source=result.source,
            answer=result.answer.name if result.answer is not None else None,
            variables=[c.model_dump(exclude_none=True) for c in result.variables] or None,
        ), result.egress)

    def _error_result(
        self, call: ToolUseBlock, text: str, hooks: list[str] | None = None
    ) -> ToolResultBlock:
        self.emit(
            ae.ToolFinished(
                id=call.id, name=call.name, summary=summarize_call(call.name, call.input, self.cell_position()),
                content=text, is_error=True, seconds=0.0,
            )
        )
        return ToolResultBlock(tool_use_id=call.id, content=text, is_error=True, hooks=hooks or None)

    def cell_position(self) -> CellPosition:
        """Where a cell a notebook call names stands now (0-based, None when unknown): in the
        open document, else in the notebook file; every view names cells by it."""
        return first_known(cell_positions(self.env), positions_in_files(self.cwd))

    def _scoped_input(self, call: ToolUseBlock) -> dict[str, Any]:
        """The call's input as rules see it: a notebook tool called without `path` acts on the
        kernel's own notebook, so rules (and "Always allow") name that notebook and no other."""
        if call.name.startswith("notebook_") and not call.input.get("path"):
            own = kernel_notebook(self.env)
            if own is not None:
                return {**call.input, "path": str(own)}
        return dict(call.input)

    async def _permission(
        self, call: ToolUseBlock, tool: Tool, summary: str, protected: dict[str, list[str]],
        position: CellPosition,
    ) -> str | None:
        """None when the call may run, else the denial text the model sees. Protect mode
        (`protected`: what the code would do to the user's variables) asks before code changes
        them, whatever rules or --yes say."""
        scoped = self._scoped_input(call)
        configured = decide(self.loaded, call.name, scoped)
        decision = configured or tool.default_permission
        if decision == "allow" and not protected:
            if configured == "allow":  # the row says which rule let it run, as it says --yes
                rules = ", ".join(allowed_by(self.loaded, call.name, scoped))
                self.emit(ae.PermissionAnswered(call.id, "allow", f"rule {rules}"))
            return None
        if decision == "deny":
            self.emit(ae.PermissionAnswered(call.id, "deny", "a deny rule matched"))
            return f"Permission denied by a configured rule for {summary}."
        if self.yes and not protected:
            self.emit(ae.PermissionAnswered(call.id, "allow", "--yes"))
            return None
        # In a thread: a notebook preview may ask the browser, whose reply this loop delivers.
        preview = await asyncio.to_thread(preview_change, self.env, tool, call.input)
        namespace = self.host.namespace if self.host is not None else None
        question, detail = approval_question(
            call.name, call.input, summary, preview, namespace, position
        )
        request = PermissionRequest(
            id=call.id,
            tool=call.name,
            input=dict(call.input),
            summary=summary,
            detail=f"{protect_text(protected)}\n{detail}" if protected else detail,
            question=question,
        )
        answer: PermissionAnswer | None = None
        if self.approver is not None:
            self.emit(ae.PermissionAsked(call.id, call.name, summary))
            answer = await self.approver(request)
        if answer is None:
            text = (
                f"Permission denied for {summary}: nobody can answer an approval in this run "
                "(use --yes or add an allow rule to permit it)."
            )
            if protected:
                text = (
                    f"Permission denied for {summary}: the user's variables are protected and this code "
                    f"changes {', '.join(protected)}, which nobody can approve in this run; work on a copy "
                    "(e.g. `df2 = df.copy()`) instead."
                )
            self.emit(ae.PermissionAnswered(call.id, "deny", text))
            return text
        self.emit(ae.PermissionAnswered(call.id, answer.decision, answer.message))
        if answer.decision == "always":
            rule, covers = always_rule(call.name, scoped, self.cwd, self.root)
            where = add_allow_rule(self.cwd, rule)
            self.loaded = load_config(self.cwd)
            self.emit(
                ae.Notice(
                    f"Always allowed: saved the rule `{rule}` in {where} (your private settings "
                    f"for this project). It covers {covers}; remove it there to be asked again."
                )
            )
        if answer.decision == "deny":
            reason = f" The user said: {answer.message}" if answer.message else ""
            return f"The user denied permission for {summary}.{reason}"
        return None

    @property
    def protecting(self) -> bool:
        """Protect mode: on from the front end (`protect`) or the personal config."""
        return self.protect or self.loaded.config.protect_variables

    def _protected(self, call: ToolUseBlock) -> dict[str, list[str]]:
        """In protect mode, the user's variables a `python` call's code would change (the
        agent's own variables are not the user's)."""
        if not self.protecting or call.name != "python" or self.host is None:
            return {}
        own = self.env.variables.own_names(self.host.namespace) if self.env.variables is not None else set()
        return protected_changes(str(call.input.get("code", "")), self.host.namespace, own)

    def _guarded(self, call: ToolUseBlock) -> bool:
        """Whether protect mode checks what this call did to the variables after it ran."""
        return (
            self.protecting and self.host is not None and self.env.variables is not None
            and call.name in ("python", "notebook_run")
        )

    def _unasked(self, changes: list[VariableChange], asked: set[str]) -> list[VariableChange]:
        """The changes to the user's existing variables protect mode did not ask about before
        the call (the agent's own variables are not the user's)."""
        own = self.env.variables.call_own() if self.env.variables is not None else set()
        return [
            c for c in changes
            if c.change in ("changed", "rebound", "deleted") and c.name not in asked and c.name not in own
        ]

    async def _keep_or_roll_back(self, call: ToolUseBlock, result: ToolResult, asked: set[str]) -> None:
        """Protect mode, after the call: changes to the user's existing variables that were not
        asked about before it ran (a route the scan cannot see: `f()`, `globals()`, an alias, a
        notebook cell) are kept only if the user says so; otherwise, and where nobody can
        answer, they are rolled back from the snapshot and the result tells the model."""
        assert self.host is not None and self.env.variables is not None
        found = self._unasked(result.variables, asked)
        if not found:
            return
        what = ", ".join(c.name + (f" through {c.route}" if c.route else "") for c in found)
        summary = f"the code changed {what}"
        answer: PermissionAnswer | None = None
        if self.approver is not None:
            self.emit(ae.PermissionAsked(call.id, call.name, summary))
            detail = "# Protect mode: this call changed your existing variables:\n" + "\n".join(
                f"#   {c.text()}" for c in found
            )
            try:
                answer = await self.approver(PermissionRequest(
                    id=call.id, tool=call.name, input=dict(call.input), summary=summary, detail=detail,
                    question=f"{summary[:1].upper()}{summary[1:]}: keep or roll back?", ask="keep",
                ))
            except asyncio.CancelledError:  # stopped while asking: nobody said keep
                self.env.variables.roll_back(self.host.namespace, [c.name for c in found])
                raise
        if answer is not None and answer.decision != "deny":
            self.emit(ae.Notice(f"Kept: {summary}."))
            return
        rolled, failed = self.env.variables.roll_back(self.host.namespace, [c.name for c in found])
        result.variables = [c.model_copy(update={"rolled_back": True}) if c.name in rolled else c for c in result.variables]
        who = "the user chose to roll them back" if answer is not None else "nobody can approve keeping them in this run"
        text = f"[Protect mode: {summary}; the user's variables are protected and {who}"
        if rolled:
            text += f", so {', '.join(rolled)} {'is' if len(rolled) == 1 else 'are'} back as before the call"
        if failed:
            text += "; could not roll back " + ", ".join(f"{name} ({why})" for name, why in failed)
        result.content += f"\n{text}. Work on a copy (e.g. `df2 = df.copy()`) instead.]"
        result.is_error = True
        self.emit(ae.Notice(text.strip("[") + ".", level="warning"))

    def _answer_unanswered(self, text: str) -> None:
        """Keep the transcript valid: every tool_use gets a tool_result before the next prompt."""
        if not self.context or self.context[-1].role != "assistant":
            return
        calls = self.context[-1].tool_uses()
        if calls:
            self._append(
                Message(
                    role="user",
                    content=[
                        ToolResultBlock(tool_use_id=c.id, content=text, is_error=True) for c in calls
                    ],
                ),
                sync=True,
            )

    # -- context management ---------------------------------------------------------------

    def next_request_tokens(self) -> int:
        """About how many tokens the next request takes: the last call's reported usage plus
        an estimate of what came after it, or (no usage known: after a resume, a compaction,
        or from a server that reports none) an estimate of the whole request."""
        usage = self.last_call_usage
        if has_tokens(usage) and usage is not None and not usage.estimated:
            return context_tokens(usage) + estimate_tokens(self.context[self._usage_at :])
        return estimate_tokens(self.context, self._system(), tool_schemas(self.tools))

    async def _maybe_compact(self, *, only_if_over: bool = False) -> None:
        """Compact when the next request would come near the window (before a prompt, and
        between the steps of a turn), or (`only_if_over`: right after the prompt) when it
        would not fit at all and the messages are most of it (a summary cannot shrink the
        tools or the system prompt). Near the window, a context of one message (none, or a
        summary) is left alone: there is nothing to shorten."""
        if not self.context or not self.loaded.config.compaction.enabled:
            return
        tokens, fits = self.next_request_tokens(), room(self.provider.info)
        over = tokens > fits and estimate_tokens(self.context) > fits // 2
        near = len(self.context) > 1 and needs_compaction(tokens, self.loaded.config, self.provider.info)
        if over or (near and not only_if_over):
            self.emit(ae.Notice("The conversation is nearing the model's window; compacting it."))
            await self.compact()

    async def compact(self, instructions: str = "") -> str:
        """Summarise the model context into a compaction entry; `All` keeps every message."""
        done = await compact_context(
            self.provider, self._system(), self.context, tool_schemas(self.tools), instructions
        )
        summary = done.summary
        if done.shortened:
            self.emit(ae.Notice(f"Compaction: {done.shortened}.", level="warning"))
            summary += f"\n\n(For this summary {done.shortened}.)"
        self.session.append(
            Entry(type="compaction", summary=summary, model=self.provider.name), sync=True
        )
        self.context = self.session.state.context_for_model()
        self.last_call_usage = None
        return summary

    def clear(self) -> None:
        """Start a fresh model context, recorded as a compaction entry so a resume keeps it
        cleared; `All` (and the session file) keep every message."""
        self.session.append(
            Entry(type="compaction", summary=CLEARED_SUMMARY, model=self.provider.name), sync=True
        )
        self.context = self.session.state.context_for_model()
        self.last_call_usage = None

    def switch_provider(self, provider: Provider) -> None:
        """Use `provider` from the next call on, recorded in the session (a usage entry with no
        tokens) so a resume picks it up; a running HTTP trace follows it."""
        self.provider = provider
        self.trace_http(self._http_trace)
        self.session.append(Entry(type="usage", usage=Usage(), model=provider.name), sync=True)

    def trace_http(self, factory: Callable[[], Any] | None) -> None:
        """Record provider HTTP bodies through `factory`'s clients (None stops), for this
        provider and any later one; providers without HTTP (scripted) ignore it."""
        self._http_trace = factory
        self.provider.http_client_factory = factory

    def undo(self, *, record: bool = True, force: bool = False, skip_changed: bool = False) -> UndoReport:
        """Undo the newest turn that changed files or kernel variables (restoring both) and
        queue the report's note to the model (recorded in the session unless `record` is off);
        see `agent.undo.undo_turn` for files the user changed since."""
        report = undo_turn(
            self.checkpoints, cells=cell_restorer(self.env), sources=cell_sources(self.env),
            force=force, skip_changed=skip_changed,
        )
        if note := report.system_note():
            self.queue_note(note, record=record)
        return report

    def undo_to(
        self, prompt: int, *, nothing_ok: bool = False, record: bool = True, force: bool = False,
        skip_changed: bool = False,
    ) -> UndoReport:
        """Undo every turn from the newest down to the one of prompt `prompt` (1-based, as
        `/rewind` counts), newest first, stopping after the first one not fully undone.

        Raises `NothingToUndoError` when no turn from that prompt on is left (unless
        `nothing_ok`), and `CheckpointError` naming what was undone when a turn cannot be
        undone at all or was saved without its prompt number."""
        prompts = len(self.session.state.prompt_positions)
        if not 1 <= prompt <= prompts:
            raise BranchError(
                f"Session {self.session.id} has {prompts} prompt(s); choose a prompt number "
                f"from 1 to {prompts}."
            )
        results: list[UndoResult] = []
        while turns := self.checkpoints.turns():
            newest = turns[-1]
            if newest.prompt is None:
                raise CheckpointError(
                    _undone(results) + f"turn {newest.turn} was saved without its prompt number "
                    f"(by an older version), so it cannot be matched to prompt {prompt}; undo it "
                    "on its own with `/undo`."
                )
            if newest.prompt < prompt:
                break
            try:
                results += self.undo(record=record, force=force, skip_changed=skip_changed)
            except CheckpointError as exc:
                raise CheckpointError(_undone(results) + str(exc)) from None
            if not results[-1].ok:
                break
        if not results and not nothing_ok:
            raise NothingToUndoError(
                f"No turn from prompt {prompt} on changed files or kernel variables; nothing was undone."
            )
        return UndoReport(tuple(results), to=prompt)


def _undone(results: list[UndoResult]) -> str:
    """What a multi-turn undo did before it stopped, as the start of its error sentence."""
    if not results:
        return "Nothing was undone: "
    return "Undid " + ", ".join(r.label for r in results) + ", then stopped: "
