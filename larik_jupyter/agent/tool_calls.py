"""One reply's tool calls in a turn: batched by their `concurrent` trait, each through its
hooks, protect mode, the permission check and the tool itself, ending as the tool_result block
the transcript stores (an interrupted batch still answers every call)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.hooks import HookRunner
from larik_jupyter.agent.protect import guarded, keep_or_roll_back, protected, roll_back_stopped
from larik_jupyter.agent.receipt_check import check_receipts
from larik_jupyter.agent.toolset import concurrent_batches
from larik_jupyter.agent.turn import Turn
from larik_jupyter.egress.lineage import derive, restricted_read
from larik_jupyter.egress.policy import PolicySet
from larik_jupyter.egress.tags import Tag, tagged
from larik_jupyter.frames.receipt import to_builtins
from larik_jupyter.llm.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from larik_jupyter.llm.valid_text import valid_text
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.session.variable_changes import VariableChange
from larik_jupyter.tools.base import Tool, ToolResult, failure_result, input_problem
from larik_jupyter.tools.calls import summarize_call
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.planned import Planned
from larik_jupyter.tools.registry import unavailable_reason

INTERRUPTED_RESULT = "Interrupted by the user before this tool call finished."



class Admission(NamedTuple):
    """Whether a call may run: `denial`, None when it may, else the text the model sees;
    `planned`: the change its approval showed, which the run makes (`tools/planned.py`)."""

    denial: str | None
    planned: Planned[Any] | None = None


# Decides whether a call may run: (call, tool, summary, protected variables, cell position, the
# call's own env) to its `Admission`.
Gate = Callable[[ToolUseBlock, Tool, str, dict[str, list[str]], CellPosition, Env], Awaitable[Admission]]


@dataclasses.dataclass
class ToolCalls:
    """Runs the tool calls of one turn: `tools` by name, `hooks` around each call, `gate` the
    permission check, `protecting` protect mode, `position` where a named cell stands now,
    `store` appends (and fsyncs) a message, `emit` the turn's events."""

    turn: Turn
    tools: Mapping[str, Tool]
    hooks: HookRunner
    gate: Gate
    protecting: bool
    position: Callable[[], CellPosition]
    store: Callable[[Message], object]
    emit: Callable[[ae.AgentEvent], None]

    async def run_all(self, calls: list[ToolUseBlock]) -> list[ToolResultBlock]:
        """Every call's result, in the calls' order; a stop answers the unfinished ones."""
        done: dict[str, ToolResultBlock] = {}

        async def run(call: ToolUseBlock) -> None:
            done[call.id] = await self.run(call)

        try:
            for batch in concurrent_batches(calls, self.tools):
                await asyncio.gather(*(run(call) for call in batch))
        except asyncio.CancelledError:
            interrupted = [
                done.get(c.id)
                or ToolResultBlock(tool_use_id=c.id, content=INTERRUPTED_RESULT, is_error=True)
                for c in calls
            ]
            self.store(Message(role="user", content=interrupted))
            raise
        return [done[c.id] for c in calls]

    async def run(self, call: ToolUseBlock) -> ToolResultBlock:
        env = self.turn.env
        position = self.position()  # one read of a notebook file per call, at most
        summary = summarize_call(call.name, call.input, position)
        self.emit(ae.ToolRequested(call.id, call.name, dict(call.input), summary))
        tool = self.tools.get(call.name)
        if tool is None:
            why = unavailable_reason(call.name, env)
            return self.error_result(
                call, why or f"Unknown tool `{call.name}`; available: {', '.join(self.tools)}."
            )
        # Input errors first: a call that does not match its schema is told so before hooks,
        # protect mode or a permission decision look at it.
        problem = input_problem(tool, dict(call.input))
        if problem is not None:
            return self.error_result(call, problem)
        before = await self.hooks.before_tool(call.name, dict(call.input))
        if before.refusal is not None:
            return self.error_result(call, before.refusal, before.notices)
        asked = protected(call, tool, env) if self.protecting else {}
        # The call's own context: concurrent calls of one batch each mark and stream their own
        # (its approval's plan marks the cells it makes as this call's).
        own = dataclasses.replace(
            env.call, tool_use_id=call.id, on_output=lambda text: self.emit(ae.ToolOutput(call.id, text))
        )
        admission = await self.gate(call, tool, summary, asked, position, dataclasses.replace(env, call=own))
        if admission.denial is not None:
            return self.error_result(call, admission.denial, before.notices)
        self.emit(ae.ToolStarted(call.id, call.name, summary))
        own = dataclasses.replace(own, planned=admission.planned)
        checked = self.protecting and guarded(tool, env)
        started = time.monotonic()
        try:
            result: ToolResult = await tool.arun(dataclasses.replace(env, call=own), dict(call.input))
        except Exception as exc:  # a tool with its own `arun` (MCP, task) that let one through
            result = failure_result(call.name, exc)
        except asyncio.CancelledError:  # Stop during a cell: what it did unasked is not kept
            if checked:
                roll_back_stopped(env, set(asked))
            raise
        if result.variables and checked:
            await keep_or_roll_back(call, result, set(asked), env, self.turn.approver, self.emit)
        if result.receipts and checked:
            self.turn.warning = await check_receipts(call, result, env, self.turn.approver, self.emit) or self.turn.warning
        if result.variables:
            result.variables = derived(env.egress, result.egress, result.variables)
        # Rounded once, as stored: the live view and the transcript read from disk say the same.
        seconds = round(time.monotonic() - started, 3)
        result.content, result.diff = valid_text(result.content), result.diff and valid_text(result.diff)
        after = await self.hooks.after_tool(call.name, dict(call.input), result.content, result.is_error)
        for notice in result.notices:
            self.emit(ae.Notice(notice, level="warning"))
        if result.answer is not None:
            self.turn.answered = result.answer
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
                receipts=list(result.receipts),
            )
        )
        content: str | list[ContentBlock] = result.content
        if result.images:
            content = [TextBlock(text=result.content), *result.images]
        # Tagged with the sources the tool says it read, for the egress door.
        return tagged(ToolResultBlock(
            tool_use_id=call.id,
            content=content,
            is_error=result.is_error or None,
            diff=result.diff or None,
            duration=seconds,
            subagent=getattr(result, "subagent", None) or None,
            hooks=before.notices + after.notices or None,
            source=result.source,
            answer=result.answer.name if result.answer is not None else None,
            variables=[c.model_dump(exclude_none=True) for c in result.variables] or None,
            receipts=to_builtins(result.receipts) or None,
        ), result.egress)

    def error_result(self, call: ToolUseBlock, text: str, hooks: list[str] | None = None) -> ToolResultBlock:
        self.emit(
            ae.ToolFinished(
                id=call.id, name=call.name, summary=summarize_call(call.name, call.input, self.position()),
                content=text, is_error=True, seconds=0.0,
            )
        )
        return ToolResultBlock(tool_use_id=call.id, content=text, is_error=True, hooks=hooks or None)


def derived(policies: PolicySet, tag: Tag | None, changes: list[VariableChange]) -> list[VariableChange]:
    """`changes` (one call's) with `restricted_from` and `policy` on each variable the call
    created or changed while its code read a restricted source (`tag`: what it read), each
    restricted in `policies` at once (lineage); as given when it read nothing restricted."""
    read, policy = restricted_read(policies, tag)
    if policy is None:
        return changes
    out = []
    for change in changes:
        if change.change != "deleted" and change.name not in read and not change.rolled_back:
            kept = derive(policies, change.name, policy, tuple(read))
            change = change.model_copy(update={"restricted_from": read, "policy": str(kept)})
        out.append(change)
    return out


def unanswered(context: list[Message], text: str) -> Message | None:
    """The error results (`text`) that answer the last reply's calls when nothing did (the
    turn ended before them), so every tool_use has its tool_result; None when none is due."""
    if not context or context[-1].role != "assistant":
        return None
    calls = context[-1].tool_uses()
    if not calls:
        return None
    return Message(
        role="user", content=[ToolResultBlock(tool_use_id=c.id, content=text, is_error=True) for c in calls]
    )
