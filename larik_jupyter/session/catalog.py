"""Finding sessions: list a working directory's sessions, the latest one, resolve ids, delete."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
from pydantic import BaseModel

from larik_jupyter import paths
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Usage
from larik_jupyter.session.entry import Entry
from larik_jupyter.session.reader import session_id_of
from larik_jupyter.session.store import acquire_lock, lock_path
from larik_jupyter.session.summary import session_time, summary


class UnknownSessionError(LarikError):
    """No session matches the id or path the user gave."""


class SessionInfo(BaseModel):
    """One line of a session listing. `error` is set when the file is damaged."""

    id: str
    path: str
    time: str
    first_prompt: str | None = None
    message_count: int = 0
    fork_of: str | None = None
    fork_at: int | None = None
    size: int = 0
    usage: Usage = Usage()
    cost: float | None = None
    interrupted: str | None = None
    error: str | None = None


def session_cwd(path: str | os.PathLike[str]) -> str:
    """The working directory a session file records in its first (meta) line."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            first = f.readline()
        meta = Entry.model_validate(orjson.loads(first)).meta
    except (OSError, ValueError) as exc:
        raise LarikError(f"{path} line 1 is not a readable meta entry ({exc}); check the file.") from None
    if meta is None:
        raise LarikError(f"{path} line 1 is not a meta entry with the session's cwd; check the file.")
    return meta.cwd


def info(path: str | os.PathLike[str]) -> SessionInfo:
    """Summarize one session file (a damaged one too: what precedes the damage)."""
    s = summary(path)
    return SessionInfo(
        id=s.id,
        path=str(s.path),
        time=s.time,
        size=s.size,
        first_prompt=s.prompts[0].first_line if s.prompts else None,
        message_count=s.message_count,
        fork_of=s.meta.fork_of if s.meta else None,
        fork_at=s.meta.fork_at if s.meta else None,
        usage=s.usage.model_copy(),  # the cached summary's own stays unchanged
        cost=s.cost if s.meta else None,
        interrupted=s.interrupted,
        error=s.error,
    )


def _session_files(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*.jsonl") if paths.is_session_id(session_id_of(p))] if folder.is_dir() else []


def list_sessions(cwd: str | os.PathLike[str]) -> list[SessionInfo]:
    """The sessions of working directory `cwd`, newest first."""
    items = [info(p) for p in _session_files(paths.sessions_dir(cwd))]
    return sorted(items, key=lambda i: (i.time, i.id), reverse=True)


def latest(cwd: str | os.PathLike[str]) -> SessionInfo | None:
    """The newest session of `cwd` (what `--continue` resumes), or None."""
    files = _session_files(paths.sessions_dir(cwd))
    if not files:
        return None
    return info(max(files, key=lambda p: (session_time(p), p.name)))


def all_session_files() -> list[Path]:
    """Every top-level session file of every working directory."""
    root = paths.sessions_root()
    if not root.is_dir():
        return []
    return sorted(p for folder in root.iterdir() for p in _session_files(folder))


def resolve(id_or_path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> Path:
    """The transcript a session id or file path names; ids are looked up in `cwd`'s folder first."""
    text = os.fspath(id_or_path)
    if paths.is_session_id(text):
        here = paths.sessions_dir(cwd if cwd is not None else os.getcwd()) / f"{text}.jsonl"
        if here.is_file():
            return here
        root = paths.sessions_root()
        found = sorted(root.glob(f"*/{text}.jsonl")) if root.is_dir() else []
        if found:
            return found[0]
        raise UnknownSessionError(
            f"No session with id {text}; list this directory's sessions with `larik-jupyter ls` "
            "(or `larik-jupyter ls --cwd DIR` for another directory)."
        )
    path = Path(text).expanduser()
    if path.is_file():
        return path
    raise UnknownSessionError(
        f"{text!r} is neither a session id (YYYYMMDD-HHMMSS-xxxxxx) nor an existing session file; "
        "list sessions with `larik-jupyter ls`."
    )


def delete(id_or_path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> Path:
    """Remove a session: its transcript, `-agents/`, `.trace/` and checkpoints. Refuses while it is open."""
    path = resolve(id_or_path, cwd)
    sid = session_id_of(path)
    lock_fd = acquire_lock(path)
    try:
        for extra in (path.with_name(f"{sid}-agents"), path.with_name(f"{sid}.trace"), paths.checkpoints_dir(sid)):
            shutil.rmtree(extra, ignore_errors=True)
        path.unlink(missing_ok=True)
        lock_path(path).unlink(missing_ok=True)
    finally:
        os.close(lock_fd)
    return path
