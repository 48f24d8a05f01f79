"""One turn's inputs and state: what a front end adds to the prompt (`PromptExtras`) and the
running turn (`Turn`: who answers its asks, its call context, how it ends), handed to the turn
loop as arguments, never set on it and restored."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from larik_jupyter.agent.outcome import TurnOutcome
from larik_jupyter.agent.permissions import Approver
from larik_jupyter.llm.messages import ContentBlock
from larik_jupyter.tools.base import Answer
from larik_jupyter.tools.env import Env


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


@dataclass
class Turn:
    """The running turn: `approver` and `yes` decide its asks (a subagent's turn inherits
    them), `env` is what its tool calls run in (its prompt number, nonce, the kernel's notebook
    and inline runner in `env.call`), `outcome` what it returns, `answered` its `answer` call."""

    approver: Approver | None
    yes: bool
    env: Env
    outcome: TurnOutcome
    answered: Answer | None = None
