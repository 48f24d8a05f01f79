"""Who decides whether a tool call runs: config rules first, then defaults, then the user."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from larik_jupyter.config.rules import CallSubject


@dataclass(frozen=True)
class PermissionRequest:
    """An ask shown to the user: the call, a one-line summary, the `question` every front end
    asks in the same words (`Tool.approval_question`) and what it would do (`detail`).

    `ask` "keep": the call already ran and changed the user's variables (protect mode, a route
    the scan could not see); `summary` says what, `allow` keeps the changes, `deny` rolls them
    back, and there is no "always"."""

    id: str
    tool: str
    input: dict[str, Any]
    summary: str
    detail: str
    question: str
    ask: Literal["run", "keep"] = "run"


@dataclass(frozen=True)
class PermissionAnswer:
    """`allow` once, `always` (remembered as a rule in private project settings) or `deny`."""

    decision: Literal["allow", "always", "deny"]
    message: str = ""


# None means nobody can answer right now (a headless run): the call is treated as unanswerable.
Approver = Callable[[PermissionRequest], Awaitable[PermissionAnswer | None]]


def always_rule(subject: CallSubject, cwd: Path, root: Path) -> tuple[str, str]:
    """The rule an "always allow" answer stores for a call (`Tool.rule_subject`), and what it
    covers in words: the exact shell command, the one path the call acts on, else the tool.

    A path inside the project is stored relative to the project root and anchored there
    (`./src/a.py`: that one file, wherever the project is); one outside stays absolute.
    """
    tool = subject.names[0]
    if subject.command is not None:
        command = subject.command
        return f"{tool}({command})", f"exactly the command `{command}`, in any folder of this project"
    if subject.path:
        absolute = Path(os.path.normpath(cwd / subject.path))
        try:
            relative = absolute.relative_to(root).as_posix()
        except ValueError:
            return f"{tool}({absolute})", f"{tool} of the file {absolute} only"
        if relative != ".":
            return f"{tool}(./{relative})", f"{tool} of {relative} (in the project root) only"
    return tool, f"every {tool} call in this project"
