"""The `task` tool: hand a self-contained job to a subagent with its own context.

A subagent is a child turn loop (the parent's `child`) whose transcript is `<session-id>-agents/<sub-id>.jsonl`
beside the parent's session (same format). It shares the parent's checkpoint store, so its
writes undo with the parent's turn, unless it runs with `isolation: "worktree"`: then it
works in a fresh git worktree, skips checkpoints (its branch is the undo) and reports the
branch and a diff summary. Several `task` calls of one reply run concurrently, at most
`max_subagents` at a time; interrupting the parent interrupts them. The parent's tool
result records the prompt, lifecycle (started, finished, failed, interrupted), transcript
and summary, also as a structured `subagent` field of the stored tool_result block.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.trace import Traced, active_trace
from larik_jupyter.agent.worktree import (
    Worktree,
    WorktreeError,
    commit_all,
    create_worktree,
    diff_summary,
)
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.config.layers import LoadedConfig
from larik_jupyter.errors import ToolError
from larik_jupyter.llm.provider import Provider
from larik_jupyter.session.entry import now_rfc3339
from larik_jupyter.session.store import Session
from larik_jupyter.tools.base import Tool, ToolResult, check_input
from larik_jupyter.tools.env import Env

TASK_TOOL = "task"
_STATUS = {"done": "finished", "interrupted": "interrupted"}


@dataclass
class SubagentResult(ToolResult):
    """A tool result carrying the subagent record stored with the parent's tool_result."""

    subagent: dict[str, Any] = field(default_factory=dict)


class Child(Protocol):
    """A subagent's turn loop, as the `task` tool drives it."""

    def subscribe(self, listener: ae.Listener) -> None: ...

    async def run_turn(self, prompt: str) -> TurnOutcome: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


class Parent(Traced, Protocol):
    """The turn loop a `task` call runs in: where it works, its model, session, config and
    checkpoints, its events (and trace), and the child loop it makes for a subagent (with the
    asks of its running turn)."""

    root: Path
    provider: Provider
    loaded: LoadedConfig
    checkpoints: CheckpointStore

    def emit(self, event: ae.AgentEvent) -> None: ...

    def child(self, session: Session, loaded: LoadedConfig, checkpoints: CheckpointStore) -> Child: ...


def agents_dir(session_path: Path) -> Path:
    """`<session-dir>/<session-id>-agents/`: where a session's subagent transcripts go."""
    return session_path.with_name(f"{session_path.stem}-agents")


class TaskTool(Tool):
    """Runs a subagent; needs the parent agent, so it exists only inside one."""

    name = TASK_TOOL
    # A subagent's own tool calls ask as usual, so handing it a job needs no ask of its own.
    default_permission = "allow"
    concurrent = True
    description = (
        "Hand a self-contained job to a subagent with its own fresh context and the same tools "
        "(except task). It sees only `prompt`, so say everything it needs; it answers with a "
        "summary. Several task calls in one reply run in parallel. With isolation \"worktree\" "
        "it works in a new git worktree on its own branch (not undoable with the turn; merge "
        "the branch to keep its work)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "A short (3-5 word) label for the job."},
            "prompt": {"type": "string", "description": "The complete instructions for the subagent."},
            "isolation": {
                "type": "string",
                "enum": ["worktree"],
                "description": "\"worktree\" to work in an isolated git worktree.",
            },
        },
        "required": ["description", "prompt"],
    }

    def __init__(self, parent: Parent) -> None:
        self.parent = parent
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def execute(self, env: Env, args: dict[str, Any]) -> ToolResult:
        raise ToolError("The task tool runs only inside an agent turn.")

    async def arun(self, env: Env, args: dict[str, Any]) -> ToolResult:
        try:
            check_input(self.input_schema, args, self.name)
            isolation = args.get("isolation")
            if isolation not in (None, "", "worktree"):
                raise ToolError(f"isolation must be \"worktree\" or absent, got {isolation!r}.")
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        async with self._limit():
            return await run_subagent(
                self.parent, str(args["description"]), str(args["prompt"]), isolation == "worktree"
            )

    def _limit(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        limit = self._limits.get(loop)
        if limit is None:
            limit = asyncio.Semaphore(max(1, self.parent.loaded.config.max_subagents))
            self._limits[loop] = limit
        return limit


async def run_subagent(parent: Parent, description: str, prompt: str, isolated: bool) -> ToolResult:
    """Run one subagent to its end and describe how it went for the parent's model."""
    worktree: Worktree | None = None
    try:
        if isolated:
            worktree = await asyncio.to_thread(create_worktree, parent.root)
    except WorktreeError as exc:
        return ToolResult(str(exc), is_error=True)
    cwd = worktree.path if worktree else parent.cwd
    prefix, _, model = parent.provider.name.partition(":")
    session = Session.create(cwd, provider=prefix, model=model, directory=agents_dir(parent.session_path))
    if worktree is not None:
        checkpoints = CheckpointStore(session.id, cwd, enabled=False)
        loaded = dataclasses.replace(parent.loaded, cwd=cwd, root=cwd)
    else:
        checkpoints, loaded = parent.checkpoints, parent.loaded
    child = parent.child(session, loaded, checkpoints)
    trace = active_trace(parent)
    if trace is not None:
        child.subscribe(trace.listener(session.id))
    record: dict[str, Any] = {
        "id": session.id,
        "description": description,
        "prompt": prompt,
        "transcript": str(session.path),
        "status": "started",
        "started": now_rfc3339(),
    }
    parent.emit(ae.Notice(f"Subagent {session.id} started: {description}."))
    task = asyncio.create_task(child.run_turn(prompt))
    try:
        outcome = await asyncio.shield(task)
    except asyncio.CancelledError:
        child.stop()
        await asyncio.wait([task])
        _end(record, "interrupted", "")
        parent.emit(ae.Notice(f"Subagent {session.id} interrupted: {description}.", level="warning"))
        raise
    finally:
        child.close()
    status = _STATUS.get(outcome.status, "failed")
    _end(record, status, outcome.text)
    if outcome.error:
        record["error"] = outcome.error
    lines = [f"Subagent {session.id} {status}: {description}", f"Transcript: {session.path}"]
    if worktree is not None:
        await asyncio.to_thread(commit_all, worktree, f"larik task: {description}")
        diff = await asyncio.to_thread(diff_summary, worktree)
        record["worktree"] = {"path": str(worktree.path), "branch": worktree.branch, "base": worktree.base, "diff": diff}
        lines.append(
            f"Worktree: {worktree.path} on branch {worktree.branch} (from {worktree.base[:12]}); "
            f"merge it with `git merge {worktree.branch}` or discard it with "
            f"`%larik /agents discard {worktree.name}`. Changes:\n{diff}"
        )
    if outcome.error:
        lines.append(f"Error: {outcome.error}")
    lines.append("Summary:\n" + (outcome.text or "(the subagent gave no summary)"))
    parent.emit(ae.Notice(f"Subagent {session.id} {status}: {description}."))
    return SubagentResult("\n".join(lines), is_error=status != "finished", subagent=record)


def _end(record: dict[str, Any], status: str, summary: str) -> None:
    record["status"] = status
    record["ended"] = now_rfc3339()
    record["summary"] = summary
