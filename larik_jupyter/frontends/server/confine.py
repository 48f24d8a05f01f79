"""Turning a client-supplied directory into a real path that stays inside the server root."""

from __future__ import annotations

import os
from pathlib import Path

from larik_jupyter.api import LarikError


class OutsideRootError(LarikError):
    """A client path that escapes the server root (`..`, an absolute path, a symlink out)."""


class MissingDirectoryError(LarikError):
    """A client path that names no directory under the server root."""


def confine(root: str | os.PathLike[str], client_path: str) -> Path:
    """The real directory `client_path` names, relative to `root`; refuses anything outside it."""
    base = Path(os.path.realpath(root))
    relative = client_path.strip().replace("\\", "/")
    if relative.startswith("/") or os.path.isabs(relative) or "\x00" in relative:
        raise OutsideRootError(
            f"The path {client_path!r} is absolute; give a path relative to the server root."
        )
    target = Path(os.path.realpath(base / relative))
    if target != base and base not in target.parents:
        raise OutsideRootError(
            f"The path {client_path!r} is outside the server root; give a path inside it."
        )
    if not target.is_dir():
        raise MissingDirectoryError(
            f"The path {client_path!r} is not a directory under the server root; pick an existing folder."
        )
    return target


def relative_to_root(root: str | os.PathLike[str], directory: Path) -> str:
    """`directory` as a '/'-separated path relative to `root` ('' for the root itself)."""
    rel = directory.relative_to(os.path.realpath(root)).as_posix()
    return "" if rel == "." else rel
