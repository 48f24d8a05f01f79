"""Protect mode in a turn: what a `python` call's code would change of the user's variables
(asked before it runs), and, after a kernel call, keep or roll back the changes nobody was
asked about (a route the scan cannot see)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.permissions import Approver, PermissionAnswer, PermissionRequest
from larik_jupyter.llm.messages import ToolUseBlock
from larik_jupyter.session.state import State
from larik_jupyter.session.variable_changes import VariableChange, changes_of
from larik_jupyter.tools.base import Tool, ToolResult
from larik_jupyter.tools.check import names_of_cell
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.kernel import KernelSnapshots, call_snapshots, protected_changes


def agent_variables(state: State) -> set[str]:
    """The variables the session's record says the agent created (a `created` change of a
    call's `variables`, not rolled back, in a prompt not undone) and that neither a later call
    deleted nor a user cell recorded with a later prompt bound again: what a fork, rewind or
    resume of the session counts as the agent's own, not the user's."""
    own: set[str] = set()
    number = 0
    for message in state.all:
        if message.is_prompt():
            number += 1
            for cell in message.cells or []:
                source = cell.get("source") if isinstance(cell, dict) else None
                if isinstance(source, str):
                    own -= names_of_cell(source)[0]
            continue
        if number in state.undone:
            continue
        for block in message.tool_results():
            for change in changes_of(block.variables):
                if change.change == "created" and not change.rolled_back:
                    own.add(change.name)
                elif change.change == "deleted":
                    own.discard(change.name)
    return own


def protected(call: ToolUseBlock, tool: Tool, env: Env) -> dict[str, list[str]]:
    """The user's variables the code a call of `tool` runs in the kernel would change, as its
    input holds it (`Tool.kernel_code`; the agent's own variables are not the user's); call it
    in protect mode only."""
    code = tool.kernel_code(call.input)
    if code is None or env.host is None:
        return {}
    snapshots = call_snapshots(env)
    own = snapshots.own_names(env.host.namespace) if snapshots is not None else set()
    return protected_changes(code, env.host.namespace, own)


def guarded(tool: Tool, env: Env) -> bool:
    """Whether protect mode checks what a call of `tool` did to the variables after it ran."""
    return env.host is not None and env.keeps_variables and tool.runs_user_code


def _unasked(snapshots: KernelSnapshots, changes: list[VariableChange], asked: set[str]) -> list[VariableChange]:
    """The changes to the user's existing variables protect mode did not ask about before the
    call (the agent's own variables are not the user's)."""
    own = snapshots.call_own()
    return [
        c for c in changes
        if c.change in ("changed", "rebound", "deleted") and c.name not in asked and c.name not in own
    ]


def roll_back_stopped(env: Env, asked: set[str]) -> None:
    """A guarded call stopped mid-way: what it did unasked is not kept."""
    snapshots = call_snapshots(env)
    assert env.host is not None and snapshots is not None
    unasked = _unasked(snapshots, snapshots.last_changes(), asked)
    snapshots.roll_back(env.host.namespace, [c.name for c in unasked])


async def ask_keep(
    call: ToolUseBlock, approver: Approver, summary: str, detail: str, question: str,
    emit: Callable[[ae.AgentEvent], None], undo: Callable[[], object],
) -> PermissionAnswer | None:
    """Ask the user whether to keep what `call` did (`summary`, said in full in `detail`); a
    stop while asking means nobody said keep, so `undo` puts it back before the stop goes on."""
    emit(ae.PermissionAsked(call.id, call.name, summary))
    try:
        return await approver(PermissionRequest(
            id=call.id, tool=call.name, input=dict(call.input), summary=summary, detail=detail,
            question=question, ask="keep",
        ))
    except asyncio.CancelledError:
        undo()
        raise


async def keep_or_roll_back(
    call: ToolUseBlock, result: ToolResult, asked: set[str], env: Env, approver: Approver | None,
    emit: Callable[[ae.AgentEvent], None],
) -> None:
    """After a guarded call: changes to the user's existing variables that were not asked about
    before it ran (`f()`, `globals()`, an alias, a notebook cell) are kept only if the user says
    so; otherwise, and where nobody can answer, they are rolled back from the snapshot and the
    result tells the model."""
    snapshots = call_snapshots(env)
    assert env.host is not None and snapshots is not None
    found = _unasked(snapshots, result.variables, asked)
    if not found:
        return
    what = ", ".join(c.name + (f" through {c.route}" if c.route else "") for c in found)
    summary = f"the code changed {what}"
    answer: PermissionAnswer | None = None
    if approver is not None:
        detail = "# Protect mode: this call changed your existing variables:\n" + "\n".join(
            f"#   {c.text()}" for c in found
        )
        namespace = env.host.namespace
        answer = await ask_keep(
            call, approver, summary, detail, f"{summary[:1].upper()}{summary[1:]}: keep or roll back?", emit,
            lambda: snapshots.roll_back(namespace, [c.name for c in found]),
        )
    if answer is not None and answer.decision != "deny":
        emit(ae.Notice(f"Kept: {summary}."))
        return
    rolled, failed = snapshots.roll_back(env.host.namespace, [c.name for c in found])
    result.variables = [c.model_copy(update={"rolled_back": True}) if c.name in rolled else c for c in result.variables]
    who = "the user chose to roll them back" if answer is not None else "nobody can approve keeping them in this run"
    text = f"[Protect mode: {summary}; the user's variables are protected and {who}"
    if rolled:
        text += f", so {', '.join(rolled)} {'is' if len(rolled) == 1 else 'are'} back as before the call"
    if failed:
        text += "; could not roll back " + ", ".join(f"{name} ({why})" for name, why in failed)
    result.content += (
        f"\n{text}. Work on a copy (e.g. `df2 = df.copy()`) or, for a random generator, one of your "
        "own (`np.random.default_rng(seed)`) instead.]"
    )
    result.is_error = True
    emit(ae.Notice(text.strip("[") + ".", level="warning"))
