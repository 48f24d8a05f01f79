"""A turn in a text front end (terminal IPython, `jupyter console`): no HTML, no widgets, so
plain text printed once and approvals asked at a terminal prompt."""

from __future__ import annotations

import sys
from typing import Any

from larik_jupyter.agent import events as ae
from larik_jupyter.api import PermissionAnswer, PermissionRequest, TextLog
from larik_jupyter.frontends.notebook.consoles import console_asking
from larik_jupyter.frontends.notebook.pump import MainThreadPump

QUESTION = "[y]es once / [a]lways / [n]o, reason: "
_DECISIONS = {"y": "allow", "yes": "allow", "a": "always", "always": "always", "n": "deny", "no": "deny"}


def is_terminal(shell: Any) -> bool:
    """Whether `shell` shows only text: terminal IPython (checked by class, so no
    prompt_toolkit import in a kernel) or a kernel whose running request came from a console."""
    if any(cls.__module__.startswith("IPython.terminal.") for cls in type(shell).__mro__):
        return True
    return console_asking(shell)


def parse_answer(text: str) -> PermissionAnswer | None:
    """`y`, `a`, or `n` followed by an optional reason (`n, too risky`); None if unclear."""
    word, _, rest = text.strip().replace(",", " ", 1).partition(" ")
    decision = _DECISIONS.get(word.lower())
    if decision is None:
        return None
    return PermissionAnswer(decision=decision, message=rest.strip() if decision == "deny" else "")  # type: ignore[arg-type]


class TerminalTurnUI:
    """What one `%larik` turn shows in a terminal: the `TextLog` lines and a prompt per ask."""

    def __init__(self, pump: MainThreadPump) -> None:
        self.pump = pump
        self.log = TextLog(sys.stdout)
        self.reading_input = False

    def show(self) -> None:
        """Nothing to set up: text appears as events arrive."""

    def listener(self, event: ae.AgentEvent) -> None:
        if isinstance(event, ae.PermissionAsked):
            return  # the approver's prompt says it
        self.pump.post(lambda: self.log(event))

    def finish(self) -> None:
        self.log.end_line()
        sys.stdout.flush()

    async def approver(self, request: PermissionRequest) -> PermissionAnswer | None:
        return await self.pump.on_main_thread(lambda: self._ask(request))

    def _ask(self, request: PermissionRequest) -> PermissionAnswer:
        self.log.line(f"? {request.question}")
        if request.ask == "keep":
            self.log.line("(y keeps the changes, n rolls them back)")
        if request.detail.strip():
            sys.stdout.write(request.detail.rstrip("\n") + "\n")
        self.reading_input = True
        try:
            while True:
                answer = parse_answer(input(QUESTION))
                if answer is not None:
                    return answer
                print("Answer y (allow once), a (always allow) or n with an optional reason.")
        except EOFError:
            return PermissionAnswer(decision="deny", message="no answer (end of input)")
        except KeyboardInterrupt:
            return PermissionAnswer(decision="deny", message="interrupted")
        finally:
            self.reading_input = False
