"""The append-only session store: one writer per file, one whole line per write.

Durability: every entry is one `os.write` of one complete line (newline included) to an
`O_APPEND` descriptor, so it reaches the OS before `append` returns; `append(..., sync=True)`
also fsyncs, which callers do at semantic boundaries (a prompt submitted, a tool about to
touch the disk, a turn ended); `close` always fsyncs. A torn last line left by a crash is
cut back to the last newline before the first new append.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
from pathlib import Path
from types import TracebackType

import orjson

from larik_jupyter import paths
from larik_jupyter.errors import LarikError
from larik_jupyter.llm.messages import Message
from larik_jupyter.llm.valid_text import valid_json
from larik_jupyter.session.corrupt import session_id_of
from larik_jupyter.session.entry import Entry, Meta
from larik_jupyter.session.entry_list import EntryList
from larik_jupyter.session.outline import decode_outline
from larik_jupyter.session.reader import Checker, load_entries, read_meta
from larik_jupyter.session.state import State, replay


class SessionLockedError(LarikError):
    """Another process has the session open for writing."""


def lock_path(path: Path) -> Path:
    """The writer-lock sidecar of a session file: `<file>.lock`."""
    return path.with_name(path.name + ".lock")


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - exercised only on Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def acquire_lock(path: Path) -> int:
    """Take the exclusive writer lock of session `path`; the OS drops it when the process dies."""
    try:
        # Never through a link: a planted `<id>.jsonl.lock` symlink must not make us create files.
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise LarikError(f"Cannot take the writer lock {lock_path(path)}: {exc.strerror}.") from None
    if _try_lock(fd):
        return fd
    os.close(fd)
    sid = session_id_of(path)
    raise SessionLockedError(
        f"Session {sid} ({path}) is open for writing in another process; close it there, "
        f"or fork it with `larik-jupyter fork {sid}` and continue in the copy."
    )


def held(path: Path) -> bool:
    """Whether another open file (a live kernel or process) holds session `path`'s writer
    lock; never creates a lock sidecar. This process's own lock counts as held too."""
    try:
        fd = os.open(lock_path(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        return not _try_lock(fd)
    finally:
        os.close(fd)  # closing the descriptor drops a lock `_try_lock` took


def _fsync_dir(directory: Path) -> None:
    if os.name == "nt":  # pragma: no cover
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new_file(path: Path, data: bytes) -> None:
    """Create session file `path` holding `data` atomically: it appears whole or not at all,
    and an existing file is never replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # unlike rename, refuses to replace an existing file
    finally:
        tmp.unlink()
    _fsync_dir(path.parent)


def encode(entry: Entry) -> bytes:
    """An entry's line, without its newline."""
    return orjson.dumps(entry.to_json())


def valid_entry(entry: Entry) -> Entry:
    """`entry` with every string valid UTF-8 (a lone surrogate from a model or a tool becomes
    U+FFFD), so it can be stored; the same object when it already was."""
    data = entry.to_json()
    cleaned = valid_json(data)
    return entry if cleaned is data else Entry.model_validate(cleaned)


class Session:
    """An open session file with its replayed State, holding the writer lock until closed."""

    def __init__(
        self,
        path: Path,
        entries: EntryList,
        checker: Checker,
        lock_fd: int,
        *,
        cut_at: int | None,
        add_newline: bool,
    ):
        self.path = path
        self.id = session_id_of(path)
        self.entries = entries
        self.state: State = replay(entries)
        self.cwd = Path(self.state.meta.cwd)
        self._lock_fd: int | None = lock_fd
        self._fd: int | None = None
        self._cut_at = cut_at
        self._add_newline = add_newline
        self._checker = checker
        self._mutex = threading.Lock()  # a kernel may append from a streaming thread and the main one

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        provider: str | None = None,
        model: str | None = None,
        *,
        fork_of: str | None = None,
        fork_at: int | None = None,
        directory: Path | None = None,
    ) -> Session:
        """Start a new session for `cwd` (in `directory`, default its sessions folder) and open it."""
        cwd = os.path.abspath(os.fspath(cwd))
        folder = Path(directory) if directory is not None else paths.sessions_dir(cwd)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{paths.new_session_id()}.jsonl"
        lock_fd = acquire_lock(path)
        meta = Entry(type="meta", meta=Meta(cwd=cwd, provider=provider, model=model, fork_of=fork_of, fork_at=fork_at))
        line = encode(meta)
        try:
            write_new_file(path, line + b"\n")
        except BaseException:
            os.close(lock_fd)
            raise
        entries = EntryList([], [], path)
        entries.append(meta, line)
        checker = Checker()
        checker.check(entries.outline(0))
        return cls(path, entries, checker, lock_fd, cut_at=None, add_newline=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Session:
        """Open an existing session for appending; refuses a locked or corrupt file, and what is
        not a session file at all before creating its lock sidecar."""
        path = Path(path)
        read_meta(path)
        created = not os.path.lexists(lock_path(path))
        lock_fd = acquire_lock(path)
        try:
            result = load_entries(path)
            return cls(
                path,
                result.entries,
                result.checker,
                lock_fd,
                cut_at=result.torn_tail,
                add_newline=not result.ends_with_newline,
            )
        except BaseException:
            if created:  # a file that does not load can have no writer, so the new sidecar is ours
                lock_path(path).unlink(missing_ok=True)
            os.close(lock_fd)
            raise

    def _descriptor(self) -> int:
        if self._fd is None:
            if self._lock_fd is None:
                raise ValueError(f"session {self.id} is closed")
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            if self._cut_at is not None:
                os.ftruncate(fd, self._cut_at)  # the torn tail is debris, not an entry
                os.fsync(fd)
                self._cut_at = None
            if self._add_newline:
                os.write(fd, b"\n")
                self._add_newline = False
            self._fd = fd
        return self._fd

    def append(self, entry: Entry, *, sync: bool = False) -> Entry:
        """Write `entry` as the next line (setting its parent_id) and fold it into `state`.

        `sync=True` also fsyncs: use it at semantic boundaries (a prompt submitted, a tool
        about to touch the disk, a turn ended). Returns the entry as stored: a copy with
        valid text (`valid_entry`) when `entry` held text UTF-8 cannot."""
        with self._mutex:
            fd = self._descriptor()
            entry.parent_id = self._checker.last_id
            try:
                line = encode(entry)
            except orjson.JSONEncodeError:  # text UTF-8 cannot hold: stored (and kept) valid
                entry = valid_entry(entry)
                line = encode(entry)
            outline = decode_outline(line)
            problem = self._checker.problem(outline)
            if problem is not None:
                raise ValueError(f"refusing to append an entry to {self.path}: {problem}")
            end = os.lseek(fd, 0, os.SEEK_END)
            try:
                view = memoryview(line + b"\n")
                while view:  # a regular file takes the whole line at once unless the disk is full
                    view = view[os.write(fd, view) :]
                if sync:
                    os.fsync(fd)
            except BaseException:
                os.ftruncate(fd, end)  # leave no partial line behind a failed write
                raise
            self._checker.accept(outline)
            self.entries.append(entry, line, outline)
            self.state.apply(len(self.entries) - 1)
            return entry

    def append_message(self, message: Message, *, sync: bool = False) -> Entry:
        """Append a message entry."""
        return self.append(Entry(type="message", message=message), sync=sync)

    def sync(self) -> None:
        """Flush everything appended so far to stable storage."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Fsync, close the file and release the writer lock."""
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def closed(self) -> bool:
        return self._lock_fd is None

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Session({self.id!r}, {len(self.entries)} entries)"

