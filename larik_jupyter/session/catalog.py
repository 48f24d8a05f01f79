"""Finding sessions: list a working directory's sessions, the latest one, resolve ids, delete."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from pydantic import BaseModel

from larik_jupyter import paths
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Usage
from larik_jupyter.paths import file_kind
from larik_jupyter.session.corrupt import CorruptSessionError, session_id_of
from larik_jupyter.session.reader import read_meta
from larik_jupyter.session.regular import check_regular
from larik_jupyter.session.store import acquire_lock, held, lock_path
from larik_jupyter.session.summary import summary


class UnknownSessionError(LarikError):
    """No session matches the id or path the user gave."""


class DeleteRefusedError(LarikError):
    """A delete whose target is not a session file of the data directory."""


class SessionInfo(BaseModel):
    """One line of a session listing. `error` is set when the file is damaged; a branch's
    `fork_prompt` is the last prompt it shares with its source; `updated` is when it was last
    written to (its last entry's time, UTC); `held` whether a live kernel or process has it open
    for writing; `model` its current model."""

    id: str
    path: str
    time: str
    updated: str = ""
    held: bool = False
    model: str | None = None
    first_prompt: str | None = None
    message_count: int = 0
    fork_of: str | None = None
    fork_at: int | None = None
    fork_prompt: int | None = None
    size: int = 0
    usage: Usage = Usage()
    cost: float | None = None
    interrupted: str | None = None
    error: str | None = None


def session_cwd(path: str | os.PathLike[str]) -> str:
    """The working directory a session file records in its first (meta) line."""
    return read_meta(path).cwd


def info(path: str | os.PathLike[str]) -> SessionInfo:
    """Summarize one session file (a damaged one too: what precedes the damage)."""
    s = summary(path)
    return SessionInfo(
        id=s.id,
        path=str(s.path),
        time=s.time,
        updated=s.updated,
        held=held(Path(s.path)),
        model=s.model,
        size=s.size,
        first_prompt=s.prompts[0].first_line if s.prompts else None,
        message_count=s.message_count,
        fork_of=s.meta.fork_of if s.meta else None,
        fork_at=s.meta.fork_at if s.meta else None,
        fork_prompt=s.fork_prompt,
        usage=s.usage.model_copy(),  # the cached summary's own stays unchanged
        cost=s.cost if s.meta else None,
        interrupted=s.interrupted,
        error=s.error,
    )


def _session_files(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*.jsonl") if paths.is_session_id(session_id_of(p))] if folder.is_dir() else []


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def list_sessions(cwd: str | os.PathLike[str]) -> list[SessionInfo]:
    """The sessions of working directory `cwd`, the one last written to first."""
    items = [info(p) for p in _session_files(paths.sessions_dir(cwd))]
    return sorted(items, key=lambda i: (i.updated, i.time, i.id), reverse=True)


def latest(cwd: str | os.PathLike[str]) -> SessionInfo | None:
    """The session of `cwd` last written to (its last entry's time; what `--continue`,
    `/resume --last` and `Agent.resume(last=True)` continue), or None. A session with no
    message yet (just opened) counts only when no other has one; entries that are not regular
    files are passed over."""
    items = [info(p) for p in _session_files(paths.sessions_dir(cwd)) if _is_regular(p)]
    return max(items, key=lambda i: (i.message_count > 0, i.updated, i.time, i.id), default=None)


def all_session_files() -> list[Path]:
    """Every top-level session file of every working directory."""
    root = paths.sessions_root()
    if not root.is_dir():
        return []
    return sorted(p for folder in root.iterdir() for p in _session_files(folder))


def resolve(id_or_path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> Path:
    """The transcript a session id or file path names; ids are looked up in `cwd`'s folder first.

    An id's file is returned whatever its type (readers refuse what is not a regular file);
    a path must be a regular file itself, not a link to one."""
    text = os.fspath(id_or_path)
    if paths.is_session_id(text):
        here = paths.sessions_dir(cwd if cwd is not None else os.getcwd()) / f"{text}.jsonl"
        if os.path.lexists(here):
            return here
        root = paths.sessions_root()
        found = sorted(root.glob(f"*/{text}.jsonl")) if root.is_dir() else []
        if found:
            return found[0]
        raise UnknownSessionError(
            f"No session with id {text}; list this directory's sessions with `larik-jupyter ls` "
            "(or `larik-jupyter ls --cwd DIR` for another directory)."
        )
    path = _existing_path(text)
    check_regular(path)
    return path


def _existing_path(text: str) -> Path:
    """The path `text` names (`~` expanded), if something exists there (a link counts)."""
    try:
        path = Path(text).expanduser()
        exists = "\0" not in text and os.path.lexists(path)
    except (OSError, RuntimeError, ValueError):  # RuntimeError: `~user` of no such user
        exists = False
    if not exists:
        raise UnknownSessionError(
            f"{text!r} is neither a session id (YYYYMMDD-HHMMSS-xxxxxx) nor an existing session file; "
            "list sessions with `larik-jupyter ls`."
        )
    return path


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def _deletion_targets(path: Path) -> tuple[Path, list[Path]]:
    """The transcript `path` names and the folders that go with it, each checked after
    resolution to be what a session of the data directory holds; refuses anything else."""

    def refuse(why: str) -> DeleteRefusedError:
        return DeleteRefusedError(
            f"Refusing to delete {path}: {why}; only a session file (YYYYMMDD-HHMMSS-xxxxxx.jsonl) "
            f"directly in a folder of {paths.sessions_root()} is deleted."
        )

    try:
        st = os.lstat(path)
    except OSError as exc:
        raise refuse(f"it cannot be examined ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise refuse(f"it is {file_kind(st.st_mode)}, not a regular file")
    sid = path.name.removesuffix(".jsonl")
    if not path.name.endswith(".jsonl") or not paths.is_session_id(sid):
        raise refuse("its name is not a session id followed by .jsonl")
    data = Path(os.path.realpath(paths.data_dir()))
    folder = Path(os.path.realpath(path.parent))
    if folder.parent != Path(os.path.realpath(paths.sessions_root())) or not _inside(folder, data):
        raise refuse("it is not in a sessions folder of the data directory")
    try:
        read_meta(path)
    except CorruptSessionError as exc:  # damage later in the file is fine: it is still a session
        raise refuse(f"it does not start with a session's meta entry ({exc.what}); remove it by hand if it is debris") from None
    checkpoints = Path(os.path.realpath(paths.checkpoints_dir(sid).parent)) / sid
    extras = [folder / f"{sid}-agents", folder / f"{sid}.trace", folder / f"{sid}.egress", checkpoints]
    for extra in extras:
        if extra.parent != folder and not _inside(extra.parent, data):
            raise refuse(f"its checkpoints folder {extra} would lie outside the data directory")
    return folder / path.name, extras


def _remove(target: Path) -> None:
    """Remove a file, a link (never what it points to) or a directory tree."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(target)  # fd-based on POSIX: never follows a link inside the tree
    else:
        target.unlink(missing_ok=True)


def delete(id_or_path: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None) -> Path:
    """Remove a session of the data directory: its transcript, `-agents/`, `.trace/`, `.egress/`
    (the egress ledger) and checkpoints. Refuses anything that is not such a session, and a session open for writing."""
    text = os.fspath(id_or_path)
    # A path is judged by the deletion's own checks, so every refusal says what it refused.
    path, extras = _deletion_targets(resolve(text, cwd) if paths.is_session_id(text) else _existing_path(text))
    lock_fd = acquire_lock(path)
    try:
        for extra in extras:
            _remove(extra)
        path.unlink(missing_ok=True)
        lock_path(path).unlink(missing_ok=True)
    finally:
        os.close(lock_fd)
    return path
