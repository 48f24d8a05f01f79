"""Builders shared by the session tests: real sessions written through the real store."""

from __future__ import annotations

import hashlib
from pathlib import Path

from larik_jupyter.llm.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user_text,
)
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.store import Session


def add_turn(session: Session, prompt: str, n: int, *, tool: bool = True) -> None:
    """A prompt, optionally a tool call with its result, a final reply and a usage entry."""
    session.append_message(user_text(prompt), sync=True)
    if tool:
        call = ToolUseBlock(id=f"toolu_{session.id}_{n}", name="read", input={"path": f"f{n}.py"})
        session.append_message(Message(role="assistant", content=[TextBlock(text="Reading."), call]))
        result = ToolResultBlock(tool_use_id=call.id, content=f"contents of f{n}.py")
        session.append_message(Message(role="user", content=[result]), sync=True)
    session.append_message(Message(role="assistant", content=[TextBlock(text=f"Done with {prompt}.")]))
    session.append(Entry(type="usage", model="claude-sonnet-4-5", usage=Usage(input_tokens=100, output_tokens=10)), sync=True)


def make_session(cwd: Path, prompts: int = 3, *, tool: bool = True) -> Path:
    """A closed session of `cwd` with `prompts` complete turns; returns its path."""
    with Session.create(cwd, "anthropic", "claude-sonnet-4-5") as session:
        for n in range(prompts):
            add_turn(session, f"prompt {n + 1}\nsecond line", n, tool=tool)
        return session.path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
