"""Confining paths to the project root and walking them without ever following a symlink."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePath

from larik_jupyter.checkpoint.durable import DIR_FLAGS, fsync_dir

_WALK_FLAGS = DIR_FLAGS | os.O_NOFOLLOW
# Directory fds one walk keeps open at most, well below the usual 1024-descriptor limit.
_MAX_OPEN = 128
_READ_ENTRY = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_PROTECTED_FILES = {(".larik", "settings.json"), (".mcp.json",)}


class PathRefused(Exception):
    """A path that must not be captured or restored; carries the one-line reason."""


class OutsideRoot(PathRefused):
    """A path that is not inside the project root."""


def confine(root: Path, path: str | os.PathLike[str], *, protect: bool = True) -> tuple[str, ...]:
    """The components of `path` below `root`; raises `PathRefused` for anything unsafe by name.

    Relative paths are taken from `root`. With `protect` (undo's rule) `.git` and the
    repository's trust files are refused too. Containment is decided component by component
    (so `/proj-evil` is not inside `/proj`) against both the root as given and its real
    path; `..` is refused outright rather than resolved lexically past a possible symlink.
    """
    raw = os.fspath(path)
    if "\0" in raw:
        raise PathRefused("contains a NUL byte")
    given = PurePath(raw)
    if ".." in given.parts:
        raise PathRefused("contains '..'")
    if not given.is_absolute():
        given = root / given
    for base in _root_forms(root):
        if given.parts[: len(base)] == base:
            parts = given.parts[len(base) :]
            if not parts:
                raise PathRefused("is the project root itself")
            if protect:
                _refuse_protected(parts)
            return parts
    raise OutsideRoot(f"is outside the project root {root}")


def _root_forms(root: Path) -> Iterator[tuple[str, ...]]:
    # The real path costs a stat per component, so it is resolved only when the root as
    # given does not match (never for the manifest's relative paths).
    yield root.parts
    real = Path(os.path.realpath(root)).parts
    if real != root.parts:
        yield real


def _refuse_protected(parts: tuple[str, ...]) -> None:
    folded = tuple(p.casefold() for p in parts)
    if ".git" in folded:
        raise PathRefused("is inside .git, which is protected")
    if folded in _PROTECTED_FILES:
        raise PathRefused(f"{'/'.join(parts)} is a protected project file")


class DirWalk:
    """Directory fds of one batch below `root_fd`, each directory walked and opened once.

    Each component is opened with O_NOFOLLOW|O_DIRECTORY relative to its parent's fd, so a
    symlink, even one swapped in after any check, is refused instead of followed; a
    directory already opened keeps being used through its fd, never re-resolved by name.
    `root_fd` stays the caller's; the fds opened here are closed on exit.
    """

    def __init__(self, root_fd: int) -> None:
        self._fds: dict[tuple[str, ...], int] = {(): root_fd}

    def parent(self, parts: tuple[str, ...], *, create: bool) -> int | None:
        """The fd of the directory holding `parts[-1]`, owned by the walk and valid until the next call.

        Missing directories are created when `create` is set, else the result is None.
        """
        dirs = parts[:-1]
        depth, fd = self._reach(dirs, create=create)
        return fd if depth == len(dirs) else None

    def missing(self, parts: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The directories above `parts[-1]` that do not exist, shallowest first."""
        depth, _ = self._reach(parts[:-1], create=False)
        return [parts[:end] for end in range(depth + 1, len(parts))]

    def _reach(self, dirs: tuple[str, ...], *, create: bool) -> tuple[int, int]:
        """Open `dirs` as deep as they exist: how many components were reached, and that fd."""
        if len(self._fds) > _MAX_OPEN:
            self._close()
        known = len(dirs)
        while dirs[:known] not in self._fds:
            known -= 1
        fd = self._fds[dirs[:known]]
        for depth in range(known, len(dirs)):
            child = _open_child(fd, dirs[depth], dirs[: depth + 1], create=create)
            if child is None:
                return depth, fd
            self._fds[dirs[: depth + 1]] = fd = child
        return len(dirs), fd

    def __enter__(self) -> DirWalk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        for prefix, fd in self._fds.items():
            if prefix:
                os.close(fd)
        self._fds = {(): self._fds[()]}


def _open_child(fd: int, name: str, prefix: tuple[str, ...], *, create: bool) -> int | None:
    try:
        return os.open(name, _WALK_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            return None
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o777, dir_fd=fd)
            fsync_dir(fd)
        return _open_component(fd, name, prefix)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        _refuse_component(fd, name, prefix)
        raise


def _open_component(dir_fd: int, name: str, prefix: tuple[str, ...]) -> int:
    try:
        return os.open(name, _WALK_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse_component(dir_fd, name, prefix)
        raise


def _refuse_component(dir_fd: int, name: str, prefix: tuple[str, ...]) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise PathRefused(
            f"its directory {'/'.join(prefix)} changed while it was checked"
        ) from None
    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
    raise PathRefused(f"its directory {'/'.join(prefix)} is {kind}")


def entry_state(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry `name` itself (never a symlink's target), or None when absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def refuse_unsafe_entry(st: os.stat_result, *, links_ok: bool = False) -> None:
    """Refuse an existing entry that is not a regular file, or that has other hard links.

    Hard links are fine (`links_ok`) only when the entry is about to be unlinked, which
    cannot touch the other names.
    """
    if stat.S_ISLNK(st.st_mode):
        raise PathRefused("is a symbolic link")
    if stat.S_ISDIR(st.st_mode):
        raise PathRefused("is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused("is not a regular file (a FIFO, socket or device)")
    if st.st_nlink > 1 and not links_ok:
        raise PathRefused(
            f"has {st.st_nlink} hard links, so changing it would change another path too"
        )


def open_entry(walk: DirWalk, parts: tuple[str, ...]) -> int | None:
    """An fd reading the file at `parts`, None when it does not exist; refuses unsafe entries."""
    dir_fd = walk.parent(parts, create=False)
    if dir_fd is None:
        return None
    current = entry_state(dir_fd, parts[-1])
    if current is None:
        return None
    refuse_unsafe_entry(current)
    fd = os.open(parts[-1], _READ_ENTRY, dir_fd=dir_fd)
    try:
        # What was opened, not what was checked: a swap in between must not slip through.
        refuse_unsafe_entry(os.fstat(fd))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
