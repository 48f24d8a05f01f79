"""A plain-text front end: prints agent events as lines (the CLI's and the tests' view)."""

from __future__ import annotations

import sys
from typing import TextIO

from larik_jupyter.agent import events as ae


def format_cost(cost: float | None) -> str:
    return "" if cost is None else f", ${cost:.4f}"


class TextLog:
    """Subscribe an instance to an agent; assistant text streams, everything else is one line."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._in_text = False

    def _line(self, text: str) -> None:
        if self._in_text:
            self.out.write("\n")
            self._in_text = False
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: ae.AgentEvent) -> None:
        if isinstance(event, ae.TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self._in_text = True
        elif isinstance(event, ae.TurnStarted):
            self._line(f"── turn {event.turn} · {event.model}")
        elif isinstance(event, ae.Retrying):
            self._line(
                f"… {event.reason}; retrying in {event.wait_seconds:.1f}s "
                f"(attempt {event.attempt}/{event.max_attempts})"
            )
        elif isinstance(event, ae.PermissionAnswered) and event.decision == "deny":
            self._line(f"✗ denied: {event.reason}")
        elif isinstance(event, ae.ToolStarted):
            self._line(f"▶ {event.summary}")
        elif isinstance(event, ae.ToolFinished):
            mark = "✗" if event.is_error else "✓"
            first = event.content.strip().splitlines()[0] if event.content.strip() else ""
            self._line(f"{mark} {event.summary} ({event.seconds:.2f}s) {first[:120]}")
            for path, change in event.uncaptured:
                self._line(f"  ! {path} {change} by the shell, not undoable")
        elif isinstance(event, ae.Notice):
            self._line(f"! {event.text}")
        elif isinstance(event, ae.UsageReported):
            u = event.turn_usage
            self._line(
                f"tokens: {u.input_tokens} in, {u.output_tokens} out"
                f"{format_cost(event.turn_cost)}"
            )
        elif isinstance(event, ae.TurnEnded):
            if event.status != "done":
                self._line(f"turn {event.turn} {event.status}" + (f": {event.error}" if event.error else ""))
