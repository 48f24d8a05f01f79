"""The base of every error a user can cause; front ends show its message as one line."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

# An unexpected exception's message is cut to this many characters where it is shown.
MAX_EXCEPTION_MESSAGE = 300


class LarikError(Exception):
    """A failure the user caused or can fix; its message says what happened and what to do."""


def first_problem(exc: ValidationError, top: str = "") -> tuple[str, str]:
    """Where the first problem of a pydantic validation lies (its dotted location, `top` when
    that is empty) and what it is."""
    problem = exc.errors()[0]
    return ".".join(str(part) for part in problem["loc"]) or top, problem["msg"]


def exception_text(exc: BaseException) -> str:
    """`TypeError (argument of type 'int' is not iterable)`: an unexpected exception's type and
    the first line of its message, cut short; never a traceback."""
    lines = str(exc).strip().splitlines()
    message = lines[0] if lines else ""
    if len(message) > MAX_EXCEPTION_MESSAGE:
        message = message[:MAX_EXCEPTION_MESSAGE] + "…"
    return f"{type(exc).__name__} ({message})" if message else type(exc).__name__


class ToolError(LarikError):
    """A tool call that cannot be done as asked; it goes back to the model as an error result."""
