"""Typed events the turn loop emits; every front end (notebook, plain text) subscribes to them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# The provider's retry announcement reaches front ends as it is.
from larik_jupyter.frames.receipt import Receipt
from larik_jupyter.llm.events import Retrying as Retrying
from larik_jupyter.llm.messages import ImageBlock, Message, Usage
from larik_jupyter.session.numbers import TurnNumbers
from larik_jupyter.session.variable_changes import VariableChange


@dataclass(frozen=True)
class TurnStarted:
    turn: int
    prompt: str
    model: str


@dataclass(frozen=True)
class ModelCall:
    """The loop is waiting for the model (step counts model calls within the turn)."""

    step: int


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    thinking: str


@dataclass(frozen=True)
class AssistantMessage:
    """The model's complete (or interrupted) reply, as stored."""

    message: Message


@dataclass(frozen=True)
class ToolRequested:
    id: str
    name: str
    input: dict[str, Any]
    summary: str


@dataclass(frozen=True)
class PermissionAsked:
    id: str
    name: str
    summary: str


@dataclass(frozen=True)
class PermissionAnswered:
    """How a call's permission was settled. `reason`: for a call allowed without asking, what
    allowed it (`--yes`, or `rule ` and the allow rules that cover it); for a denial, why."""

    id: str
    decision: str
    reason: str = ""


@dataclass(frozen=True)
class ToolStarted:
    id: str
    name: str
    summary: str


@dataclass(frozen=True)
class ToolOutput:
    """What a running call printed since its last `ToolOutput` (throttled by the tool,
    `tools/kernel/live_output.py`); its result still carries it all. Emitted from the tool's own
    thread, as the call's code holds the one it runs on."""

    id: str
    text: str


@dataclass(frozen=True)
class ToolFinished:
    id: str
    name: str
    summary: str
    content: str
    is_error: bool
    seconds: float
    diff: str | None = None
    uncaptured: list[tuple[str, str]] = field(default_factory=list)
    images: list[ImageBlock] = field(default_factory=list)
    # The traceback of an unexpected exception the tool raised (debug trace only; views and
    # the model see `content`, one sentence).
    traceback: str | None = None
    # A rich value the call displayed (a DataFrame the `python` tool returned): front ends
    # show it with the call, once.
    display: object | None = None
    # What the call's code displayed that is not an image (mime bundles): shown with the call.
    displays: list[dict[str, Any]] = field(default_factory=list)
    variables: list[VariableChange] = field(default_factory=list)
    # What each join, filter, group or concat of a kernel call did to the rows.
    receipts: list[Receipt] = field(default_factory=list)


@dataclass(frozen=True)
class NumbersUnfound:
    """The numbers of the turn's replies that nothing the model was shown or given supports
    (`session/numbers.py`; emitted when a turn ends with any): their texts, and the turn as
    traced from the transcript, which the live view marks."""

    numbers: list[str]
    traced: TurnNumbers


@dataclass(frozen=True)
class Notice:
    """Something the user should see that is not part of the conversation."""

    text: str
    level: str = "info"


@dataclass(frozen=True)
class UsageReported:
    turn_usage: Usage
    turn_cost: float | None
    session_usage: Usage
    session_cost: float | None


# How a turn ended: answered, stopped (Stop, an interrupt, a cut-off stream), a provider or
# loop failure, out of steps (`max_steps`), or refused by a `UserPromptSubmit` hook.
TurnStatus = Literal["done", "interrupted", "error", "max_steps", "blocked"]


@dataclass(frozen=True)
class TurnEnded:
    turn: int
    status: TurnStatus
    error: str | None = None


AgentEvent = (
    TurnStarted
    | ModelCall
    | TextDelta
    | ThinkingDelta
    | Retrying
    | AssistantMessage
    | ToolRequested
    | PermissionAsked
    | PermissionAnswered
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | Notice
    | NumbersUnfound
    | UsageReported
    | TurnEnded
)

Listener = Callable[[AgentEvent], None]


class EventSource:
    """What front ends subscribe to: every event emitted goes to each listener, in order."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> None:
        """Call `listener` with every event of every later turn."""
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def emit(self, event: AgentEvent) -> None:
        for listener in list(self._listeners):
            listener(event)
