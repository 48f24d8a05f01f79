"""The one way a tool writes a project file: confined to the root, never through a symlink.

Every directory from the root down is opened with O_NOFOLLOW|O_DIRECTORY relative to its
parent's fd (`checkpoint.safepath.DirWalk`), and the bytes go to a temporary file in the final
directory that is renamed over the name. A symlink swapped in for a directory at any moment is
refused; one swapped in for the file itself is replaced, never followed; so nothing is ever
written outside the root, whatever changes between a tool's checks and its write.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from larik_jupyter.checkpoint.durable import DIR_FLAGS
from larik_jupyter.checkpoint.restore import replace_entry, temp_for, write_all
from larik_jupyter.checkpoint.safepath import (
    DirWalk,
    OutsideRoot,
    PathRefused,
    confine,
    entry_state,
    refuse_unsafe_entry,
)
from larik_jupyter.errors import ToolError

# Called with the target just before the rename, after every check: tests swap links there.
_last_moment: Callable[[Path], None] | None = None


@contextlib.contextmanager
def last_moment(hook: Callable[[Path], None]) -> Iterator[None]:
    """Call `hook(path)` in every write of this process right before its rename, the last
    moment a race could change the path (a seam for tests that swap a symlink in there)."""
    global _last_moment
    previous, _last_moment = _last_moment, hook
    try:
        yield
    finally:
        _last_moment = previous


def write_file(root: Path, path: Path, data: bytes) -> None:
    """Make `path` (absolute, or relative to `root`) hold `data`, creating missing directories.

    An existing file keeps its permission bits. Raises `ToolError` (one sentence, the file
    left as it was) when the path is outside `root`, runs through a symlink or a non-directory,
    or names something other than a regular file with one link.
    """
    shown = _shown(root, path)
    try:
        parts = confine(root, path, protect=False)
    except OutsideRoot:
        raise outside_root(root, path) from None
    except PathRefused as exc:
        raise ToolError(f"{shown} {exc}; nothing was written.") from None
    name = parts[-1]
    try:
        root_fd = os.open(root, DIR_FLAGS)
        try:
            with DirWalk(root_fd) as walk:
                dir_fd = walk.parent(parts, create=True)
                assert dir_fd is not None
                current = entry_state(dir_fd, name)
                mode = None
                if current is not None:
                    refuse_unsafe_entry(current)
                    mode = stat.S_IMODE(current.st_mode)
                if _last_moment is not None:
                    _last_moment(path)
                replace_entry(dir_fd, name, temp_for(name, "write"), mode, lambda fd: write_all(fd, data))
        finally:
            os.close(root_fd)
    except PathRefused as exc:
        raise ToolError(
            f"{shown} {exc}, so it was not written (files are written only inside the project, "
            "never through a symbolic link)."
        ) from None
    except OSError as exc:
        raise ToolError(f"Could not write {shown} ({exc.strerror or exc}); the file was left unchanged.") from None


def outside_root(root: Path, path: Path) -> ToolError:
    """The refusal of a change to `path`, which lies outside `root`."""
    return ToolError(
        f"{_shown(root, path)} is outside the project root {root}, where tools only read (a "
        "personal skill's folder included); nothing was written."
    )


def _shown(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
