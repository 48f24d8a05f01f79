"""One turn's inputs and state: what a front end adds to the prompt (`PromptExtras`), the
per-turn arguments of `Agent.arun` (`TurnOptions`) and the running turn (`Turn`: who answers
its asks, its call context, how it ends), handed to the turn loop as arguments, never set on it
and restored; the prompt message; the bookkeeping of a turn's opening and end (`open_turn`,
`end_turn`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.checkpoint.errors import CheckpointError
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.egress.door import EgressDoor
from larik_jupyter.llm.messages import ContentBlock, Message, TextBlock
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.numbers import trace_last_turn
from larik_jupyter.session.store import Session
from larik_jupyter.tools.base import Answer
from larik_jupyter.tools.env import Env, InlineRunner
from larik_jupyter.tools.host import KernelHost
from larik_jupyter.tools.kernel import KernelSnapshots


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


class TurnOptions(TypedDict, total=False):
    """The per-turn arguments of `Agent.arun` / `Agent.run`."""

    approver: Approver | None
    yes: bool | None
    listener: ae.Listener | None
    notebook: Path | None
    inline_runner: InlineRunner | None


@dataclass
class Turn:
    """The running turn: `approver` and `yes` decide its asks (a subagent's turn inherits
    them; `unanswered` says how to permit what nobody could answer), `env` is what its tool calls run in (its prompt number, nonce, the kernel's notebook
    and inline runner in `env.call`), `outcome` what it returns, `answered` its `answer` call."""

    approver: Approver | None
    yes: bool
    env: Env
    outcome: TurnOutcome
    answered: Answer | None = None
    # What the denial of a call nobody could answer says the person can do.
    unanswered: str = "use --yes or add an allow rule to permit it"
    # Protect mode's warning of a receipt nobody could answer about: the turn ends after its call.
    warning: str | None = None


def open_turn(
    prompt_number: int, *, checkpoints: CheckpointStore, owns_turns: bool,
    host: KernelHost | None, variables: KernelSnapshots | None, budget_mb: int, protect: bool,
) -> int:
    """Open the turn of prompt `prompt_number`: its checkpoint turn and the kernel's variable
    snapshots (`owns_turns`: not a subagent's, whose turn is 1); its checkpoint turn number,
    which with the prompt number is the turn the egress ledger's lines name while it runs."""
    if not owns_turns:
        return 1
    number = checkpoints.begin_turn(prompt_number)
    if variables is not None:
        variables.open_turn(number, budget_mb, protect=protect)
    if host is not None:
        host.fingerprints.clear()  # the user may have run cells since the last turn
    return number


def prompt_message(prompt: str, note: str | None, hooks: list[str], extras: PromptExtras) -> Message:
    """The stored prompt: the pending `note` first, then `extras` around the prompt text."""
    blocks: list[ContentBlock] = [TextBlock(text=note)] if note else []
    blocks += [*extras.before, TextBlock(text=prompt), *extras.after]
    return Message(
        role="user", content=blocks, hooks=hooks or None, attachments=extras.attachments or None,
        cells=extras.cells or None,
    )


def end_turn(
    outcome: TurnOutcome, stop_notices: list[str] | None, *, session: Session, model: str,
    checkpoints: CheckpointStore, door: EgressDoor, owns_turns: bool, host: KernelHost | None,
    variables: KernelSnapshots | None, emit: Callable[[ae.AgentEvent], None],
) -> None:
    """Close the turn's checkpoint turn and variable snapshots (`owns_turns`: not a subagent's),
    store its usage and the stop hooks' notices, and emit what ended it: the withheld line, the
    numbers not found, the usage, `TurnEnded`."""
    if owns_turns:
        checkpoints.finish_turn()
    if host is not None and owns_turns:
        # Held only within the turn: a variable the user deletes next must not stay alive here.
        host.fingerprints.clear()
    if variables is not None:
        variables.forget_call()
    if variables is not None and (changed := variables.recorded(outcome.turn)):
        try:
            checkpoints.note_variables(changed)
        except CheckpointError as exc:
            emit(ae.Notice(str(exc), level="warning"))
    if outcome.usage.input_tokens or outcome.usage.output_tokens or stop_notices:
        session.append(Entry(type="usage", usage=outcome.usage, model=model, hooks=stop_notices or None), sync=True)
    else:
        session.sync()
    if owns_turns and (line := door.withheld_line(outcome.turn)):
        emit(ae.Notice(line))
    state = session.state
    traced = trace_last_turn(state)
    if traced is not None and traced.count:
        emit(ae.NumbersUnfound(traced.texts(), traced))
    emit(ae.UsageReported(
        turn_usage=outcome.usage, turn_cost=outcome.cost, session_usage=state.usage, session_cost=state.cost,
    ))
    emit(ae.TurnEnded(turn=outcome.turn, status=outcome.status, error=outcome.error))
