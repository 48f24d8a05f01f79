"""Whether one tool call may run: the configured rules, then the tool's default, then `--yes`,
then the turn's approver; protect mode asks whatever rules or `--yes` say. An "always" answer
is saved as an allow rule in the private project settings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.permissions import (
    Approver,
    PermissionAnswer,
    PermissionRequest,
    always_rule,
)
from larik_jupyter.agent.preview import preview_change
from larik_jupyter.agent.tool_calls import Admission, Gate
from larik_jupyter.agent.turn import Turn
from larik_jupyter.config.decide import allowed_by, decide
from larik_jupyter.config.layers import LoadedConfig
from larik_jupyter.config.update import add_allow_rule
from larik_jupyter.llm.messages import ToolUseBlock
from larik_jupyter.session.call_summary import CellPosition
from larik_jupyter.tools.base import Tool
from larik_jupyter.tools.env import Env
from larik_jupyter.tools.kernel import protect_text
from larik_jupyter.tools.planned import Planned


class Verdict(NamedTuple):
    """`denial`: None when the call may run, else the text the model sees; `saved_rule`: an
    "always" answer wrote an allow rule, so the config must be read again."""

    denial: str | None
    saved_rule: bool = False
    planned: Planned[Any] | None = None


async def check_call(
    call: ToolUseBlock, tool: Tool, summary: str, protected: dict[str, list[str]], position: CellPosition,
    *, loaded: LoadedConfig, env: Env, cwd: Path, approver: Approver | None, yes: bool,
    emit: Callable[[ae.AgentEvent], None], unanswered: str,
) -> Verdict:
    """Decide `call` (`protected`: what its code would do to the user's variables, in protect
    mode) and say how, as events the front ends show; `unanswered`: how the person can permit
    a call nobody could answer."""
    subject = tool.rule_subject(tool.scoped_input(env, call.input))
    configured = decide(loaded, subject)
    decision = configured or tool.default_permission
    if decision == "allow" and not protected:
        if configured == "allow":  # the row says which rule let it run, as it says --yes
            rules = ", ".join(allowed_by(loaded, subject))
            emit(ae.PermissionAnswered(call.id, "allow", f"rule {rules}"))
        return Verdict(None)
    if decision == "deny":
        emit(ae.PermissionAnswered(call.id, "deny", "a deny rule matched"))
        return Verdict(f"Permission denied by a configured rule for {summary}.")
    if yes and not protected:
        emit(ae.PermissionAnswered(call.id, "allow", "--yes"))
        return Verdict(None)
    # In a thread: a notebook preview may ask the browser, whose reply this loop delivers.
    preview, planned = await asyncio.to_thread(preview_change, env, tool, call.input)
    namespace = env.host.namespace if env.host is not None else None
    question, detail = tool.approval_question(call.input, preview, namespace, position)
    request = PermissionRequest(
        id=call.id,
        tool=call.name,
        input=dict(call.input),
        summary=summary,
        detail=f"{protect_text(protected)}\n{detail}" if protected else detail,
        question=question,
    )
    answer: PermissionAnswer | None = None
    if approver is not None:
        emit(ae.PermissionAsked(call.id, call.name, summary))
        answer = await approver(request)
    if answer is None:
        text = (
            f"Permission denied for {summary}: nobody can answer an approval in this run ({unanswered})."
        )
        if protected:
            text = (
                f"Permission denied for {summary}: the user's variables are protected and this code "
                f"changes {', '.join(protected)}, which nobody can approve in this run; work on a copy "
                "(e.g. `df2 = df.copy()`) or, for a random generator, one of your own "
                "(`np.random.default_rng(seed)`) instead."
            )
        emit(ae.PermissionAnswered(call.id, "deny", text))
        return Verdict(text)
    emit(ae.PermissionAnswered(call.id, answer.decision, answer.message))
    saved = answer.decision == "always"
    if saved:
        rule, covers = always_rule(subject, cwd, loaded.root)
        where = add_allow_rule(cwd, rule)
        emit(
            ae.Notice(
                f"Always allowed: saved the rule `{rule}` in {where} (your private settings "
                f"for this project). It covers {covers}; remove it there to be asked again."
            )
        )
    if answer.decision == "deny":
        reason = f" The user said: {answer.message}" if answer.message else ""
        return Verdict(f"The user denied permission for {summary}.{reason}", saved)
    return Verdict(None, saved, planned)


def turn_gate(
    turn: Turn, *, loaded: Callable[[], LoadedConfig], reread: Callable[[], None], cwd: Path,
    emit: Callable[[ae.AgentEvent], None],
) -> Gate:
    """The permission check of `turn`'s calls under the config `loaded` gives at each call; an
    "always" answer calls `reread`, so the rule it saved holds for the next call."""

    async def gate(
        call: ToolUseBlock, tool: Tool, summary: str, protected: dict[str, list[str]], position: CellPosition,
        env: Env,
    ) -> Admission:
        verdict = await check_call(
            call, tool, summary, protected, position, loaded=loaded(), env=env, cwd=cwd,
            approver=turn.approver, yes=turn.yes, emit=emit, unanswered=turn.unanswered,
        )
        if verdict.saved_rule:
            reread()
        return Admission(verdict.denial, verdict.planned)

    return gate
