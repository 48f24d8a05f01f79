"""Builders shared by the session tests: real sessions written through the real store."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from larik_jupyter.llm.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user_text,
)
from larik_jupyter.session.catalog import list_sessions
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


def released(cwd: Path) -> bool:
    """Whether no process holds a session of `cwd` any more: a kernel shut down or restarted
    lets go of its own only once its process has ended, which may come after the restart returns."""
    return not any(info.held for info in list_sessions(cwd))


def make_session(cwd: Path, prompts: int = 3, *, tool: bool = True) -> Path:
    """A closed session of `cwd` with `prompts` complete turns; returns its path."""
    with Session.create(cwd, "anthropic", "claude-sonnet-4-5") as session:
        for n in range(prompts):
            add_turn(session, f"prompt {n + 1}\nsecond line", n, tool=tool)
        return session.path


def python_session(cwd: Path, calls: list[tuple[str, str]]) -> Path:
    """A closed session of `cwd` with one prompt per `(code, recorded output)`, each running that
    code with the `python` tool and getting that output."""
    with Session.create(cwd, "scripted", "demo") as session:
        for n, (code, out) in enumerate(calls, 1):
            session.append_message(user_text(f"step {n}"))
            call = ToolUseBlock(id=f"toolu_{n}", name="python", input={"code": code})
            session.append_message(Message(role="assistant", content=[call]))
            session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content=out)]))
            session.append_message(Message(role="assistant", content=[TextBlock(text=f"done {n}")]))
        return session.path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_state(root: Path) -> dict[str, str]:
    """Every entry under `root` (links never followed) with its type and, for a regular file,
    the hash of its bytes: equal before and after means nothing there changed."""
    state: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            path = Path(folder, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                state[str(path)] = "file " + digest(path)
            elif stat.S_ISLNK(st.st_mode):
                state[str(path)] = "link " + os.readlink(path)
            else:
                state[str(path)] = f"mode {stat.S_IFMT(st.st_mode):o}"
    return state


def ledger_lines(transcript: Path) -> list[dict[str, object]]:
    """The egress ledger of the session at `transcript`, read back by its reader, each record as
    the JSON its line holds."""
    import msgspec

    from larik_jupyter.egress.ledger import ledger_path, read_ledger

    return [msgspec.to_builtins(record) for record in read_ledger(ledger_path(transcript))]
