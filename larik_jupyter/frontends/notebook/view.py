"""The streaming transcript of one turn in a cell's output: Markdown updated in place, throttled."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from IPython.display import clear_output, display

from larik_jupyter.agent import events as ae
from larik_jupyter.api import Todo, TurnNumbers, cost_label, plan_set, receipt_text
from larik_jupyter.api import numbers_footer as footer
from larik_jupyter.api import spread_numbers as spread
from larik_jupyter.frontends.notebook.render import (
    NoticePart,
    NumbersPart,
    Part,
    TextPart,
    ThinkingPart,
    ToolPart,
    live_tail,
    render_parts,
    rich_html,
    tool_part,
)

# At most this many display updates per second while text streams.
MAX_UPDATES_PER_SECOND = 20


DECISIONS = {"allow": "allowed once", "always": "always allowed"}


class TranscriptView:
    """Folds agent events into parts and renders them as one Markdown output."""

    def __init__(self, *, max_updates_per_second: float = MAX_UPDATES_PER_SECOND) -> None:
        self.parts: list[Part] = []
        self.status = ""
        self.footer = ""
        self.updates = 0
        self._interval = 1.0 / max_updates_per_second
        self._last = 0.0
        self._dirty = False
        self._handle: Any = None
        self._tools: dict[str, ToolPart] = {}
        # The turn's one plan block: every `todo_write` that succeeds updates it in place.
        self.plan: ToolPart | None = None
        self._plan_calls: dict[str, list[Todo]] = {}
        # The turn's numbers as traced from the transcript, marked once the turn ended.
        self._numbers: TurnNumbers | None = None
        # Called after each update of the output (the cell shown again after a page reload).
        self.on_update: Callable[[], None] | None = None
        # A running call's output arrives from its own thread (`tools/kernel/live_output.py`).
        self._lock = threading.RLock()
        # Show each update as the cell's one output again instead of updating the display in
        # place: jupyter-server-documents 0.3.3 appends every `update_display_data` as a new
        # output (its room's output processor looks display ids up only through its outputs
        # service, which the room switches off), so an updated transcript would show once per update.
        self.redraw = False

    def markdown(self) -> str:
        body = render_parts(self.parts)
        tail = [t for t in (f"*{self.status}*" if self.status else "", self.footer) if t]
        return "\n\n".join([body, *tail]) if body else "\n\n".join(tail) or "*…*"

    def bundle(self) -> dict[str, str]:
        text = self.markdown()
        return {"text/markdown": text, "text/plain": text}

    def show(self) -> None:
        self._handle = display(self.bundle(), raw=True, display_id=True)
        self.updates += 1

    def flush(self, *, force: bool = False) -> None:
        """Send the current Markdown if something changed and the throttle allows it."""
        with self._lock:
            self._flush(force)

    def _flush(self, force: bool) -> None:
        now = time.monotonic()
        if not self._dirty or (not force and now - self._last < self._interval):
            return
        self._dirty, self._last = False, now
        if self._handle is not None:
            if self.redraw:  # the next output replaces all of the cell's: this one
                clear_output(wait=True)
                self._handle = display(self.bundle(), raw=True, display_id=True)
            else:
                self._handle.update(self.bundle(), raw=True)
            self.updates += 1
            if self.on_update is not None:
                self.on_update()

    def _text(self, text: str, kind: type[TextPart] | type[ThinkingPart]) -> None:
        last = self.parts[-1] if self.parts else None
        if isinstance(last, kind):
            last.text += text
        else:
            self.parts.append(kind(text))

    def handle(self, event: ae.AgentEvent) -> None:
        """Fold one event in; deltas wait for the throttle, everything else shows at once."""
        with self._lock:
            self._handle_event(event)

    def _handle_event(self, event: ae.AgentEvent) -> None:
        self._dirty = True
        if isinstance(event, ae.TextDelta):
            self._text(event.text, TextPart)
            self.status = "Receiving the reply…"
            self.flush()
            return
        if isinstance(event, ae.ThinkingDelta):
            self._text(event.thinking, ThinkingPart)
            self.status = "Thinking…"
            self.flush()
            return
        self._structural(event)
        self.flush(force=True)

    def _structural(self, event: ae.AgentEvent) -> None:
        if isinstance(event, ae.TurnStarted):
            self.status = f"Waiting for {event.model}…"
        elif isinstance(event, ae.ModelCall):
            self.status = "Waiting for the model…"
        elif isinstance(event, ae.Retrying):
            self.status = (
                f"{event.reason}; retrying in {event.wait_seconds:.1f}s "
                f"(attempt {event.attempt}/{event.max_attempts})"
            )
        elif isinstance(event, ae.ToolRequested):
            todos = plan_set(event.name, event.input)
            if todos is not None:
                self._plan_calls[event.id] = todos
                return
            part = tool_part(event.id, event.name, event.input)
            part.summary = event.summary
            self._tools[event.id] = part
            self.parts.append(part)
        elif isinstance(event, ae.ToolFinished) and event.id in self._plan_calls:
            self._plan_finished(event, self._plan_calls.pop(event.id))
        elif isinstance(event, ae.PermissionAsked):
            self._set_tool(event.id, "asking")
            self.status = ""  # the approval card asks; the row only marks the call as waiting
        elif isinstance(event, ae.PermissionAnswered) and event.decision == "deny":
            self._set_tool(event.id, "denied")
        elif isinstance(event, ae.PermissionAnswered) and (asked := self._tools.get(event.id)) is not None:
            # Allowed without asking: by --yes or by a saved rule (`rule bash(git:*)`), named.
            unasked = event.reason == "--yes" or event.reason.startswith("rule ")
            asked.decision = f"allowed by {event.reason}" if unasked else DECISIONS.get(event.decision)
        elif isinstance(event, ae.ToolOutput):
            if (running := self._tools.get(event.id)) is not None:
                running.live = live_tail(running.live + event.text)
                running.streamed = True
        elif isinstance(event, ae.ToolStarted):
            self._set_tool(event.id, "running")
            self.status = f"Running {event.summary}"
        elif isinstance(event, ae.ToolFinished):
            finished = self._tools.get(event.id)
            if finished is not None:
                part = finished
                if part.status != "denied":
                    part.status = "error" if event.is_error else "done"
                part.seconds, part.output, part.diff = event.seconds, event.content, event.diff
                part.uncaptured = list(event.uncaptured)
                part.images = list(event.images)
                part.rich = rich_html(event.displays, event.display)
                part.live = ""
                part.variables = list(event.variables)
                part.receipts = [receipt_text(r) for r in event.receipts]
        elif isinstance(event, ae.Notice):
            self.parts.append(NoticePart(event.text))
        elif isinstance(event, ae.NumbersUnfound):
            self._numbers = event.traced
        elif isinstance(event, ae.AssistantMessage) and event.message.interrupted:
            self.parts.append(NoticePart("**interrupted** — the partial reply is saved"))
        elif isinstance(event, ae.UsageReported):
            u = event.turn_usage
            session = event.session_usage.input_tokens + event.session_usage.output_tokens
            # Money as money: `$` written as an entity inside a span MathJax skips, so no front
            # end typesets the two amounts as a formula.
            self.footer = (
                '<sub class="tex2jax_ignore mathjax_ignore">'
                + f"this turn {'about ' if u.estimated else ''}{u.input_tokens:,} in · {u.output_tokens:,} out tokens"
                + (" (estimated, price unknown)" if u.estimated else "")
                + (f" · {u.cache_read_tokens:,} cached" if u.cache_read_tokens else "")
                + ("" if u.estimated else f", {cost_label(event.turn_cost)}")
                + f" · session {session:,} tokens, {cost_label(event.session_cost)}</sub>"
            ).replace("$", "&#36;")
        elif isinstance(event, ae.TurnEnded):
            self.status = {
                "done": "",
                "interrupted": "Interrupted.",
                "max_steps": "Stopped at max_steps.",
                "blocked": f"Blocked by a hook: {event.error}",
            }.get(event.status, f"Error: {event.error}")
            if event.status == "interrupted" and event.error:
                self.status = f"Interrupted: {event.error}"
            for part in self._tools.values():
                if part.status == "asking":  # its own row says so: the call is told once
                    part.status = "cancelled"
                elif part.status in ("requested", "running"):
                    part.status = "interrupted"
            if self._numbers is not None:
                self._mark(self._numbers)

    def _mark(self, traced: TurnNumbers) -> None:
        """Mark the turn's unfound numbers (once it ended) and add its count line."""
        texts = [part for part in self.parts if isinstance(part, TextPart)]
        for text, found in zip(texts, spread([t.text for t in texts], traced), strict=True):
            text.unfound = found
        self.parts.append(NumbersPart(footer(traced.count)))

    def _plan_finished(self, event: ae.ToolFinished, todos: list[Todo]) -> None:
        if event.is_error:  # the plan stays as it was; the failed call gets its own row
            part = ToolPart(id=event.id, summary=event.summary, status="error", output=event.content)
            self.parts.append(part)
        elif self.plan is None:
            self.plan = ToolPart(id=event.id, summary=event.summary, status="done", plan=todos)
            self.parts.append(self.plan)
        else:
            self.plan.plan = todos

    def _set_tool(self, tool_id: str, status: str) -> None:
        part = self._tools.get(tool_id)
        if part is not None:
            part.status = status
