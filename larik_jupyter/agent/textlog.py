"""A plain-text front end: prints agent events as lines (the CLI's and terminal IPython's view)."""

from __future__ import annotations

import sys
from typing import TextIO

from larik_jupyter.agent import events as ae
from larik_jupyter.agent.summary import changed_by
from larik_jupyter.llm.pricing import cost_label
from larik_jupyter.session.numbers import footer
from larik_jupyter.session.receipts import receipt_text
from larik_jupyter.session.variable_changes import changes_text


class TextLog:
    """Subscribe an instance to an agent; assistant text streams, everything else is one line.

    A tool call is one line: its summary when it starts, completed with its status when it
    ends (unless something else was printed meanwhile, then the status gets its own line).
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._in_text = False
        self._open_tool: str | None = None

    def end_line(self) -> None:
        if self._in_text or self._open_tool is not None:
            self.out.write("\n")
            self._in_text = False
            self._open_tool = None

    def line(self, text: str) -> None:
        self.end_line()
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: ae.AgentEvent) -> None:
        if isinstance(event, ae.TextDelta):
            if self._open_tool is not None:
                self.end_line()
            self.out.write(event.text)
            self.out.flush()
            self._in_text = True
        elif isinstance(event, ae.TurnStarted):
            self.line(f"── turn {event.turn} · {event.model}")
        elif isinstance(event, ae.Retrying):
            self.line(
                f"… {event.reason}; retrying in {event.wait_seconds:.1f}s "
                f"(attempt {event.attempt}/{event.max_attempts})"
            )
        elif isinstance(event, ae.ToolStarted):
            self.end_line()
            self.out.write(f"▶ {event.summary} …")
            self.out.flush()
            self._open_tool = event.id
        elif isinstance(event, ae.ToolFinished):
            mark = "✗" if event.is_error else "✓"
            first = event.content.strip().splitlines()[0] if event.content.strip() else ""
            status = f"{mark} ({event.seconds:.2f}s) {first[:120]}".rstrip()
            if self._open_tool == event.id:
                self._open_tool = None
                self.out.write(f" {status}\n")
                self.out.flush()
            else:
                self.line(f"{mark} {event.summary} ({event.seconds:.2f}s) {first[:120]}".rstrip())
            for path, change in event.uncaptured:
                self.line(f"  ! {path} {change} by {changed_by(event.name)}, not undoable")
            if event.variables:
                self.line(f"  variables: {changes_text(event.variables)}")
            for receipt in event.receipts:
                self.line(f"  receipt: {receipt_text(receipt)}")
        elif isinstance(event, ae.Notice):
            self.line(f"! {event.text}")
        elif isinstance(event, ae.NumbersUnfound):
            self.line(f"? {footer(len(event.numbers))}: {', '.join(event.numbers)}")
        elif isinstance(event, ae.UsageReported):
            u = event.turn_usage
            self.line(
                f"tokens: {u.input_tokens} in, {u.output_tokens} out"
                f"{' (estimated, price unknown)' if u.estimated else ', ' + cost_label(event.turn_cost)}"
            )
        elif isinstance(event, ae.TurnEnded):
            if event.status != "done":
                self.line(f"turn {event.turn} {event.status}" + (f": {event.error}" if event.error else ""))
