"""Where Larik keeps its state: data and config roots, cwd slugs, project ids, session ids."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import platformdirs

_APP = "larik"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SESSION_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")
_SLUG_READABLE_MAX = 48


def data_dir() -> Path:
    """The data root: `$LARIK_DATA_DIR`, else `$XDG_DATA_HOME/larik`, else `~/.local/share/larik`."""
    return _root("LARIK_DATA_DIR", "XDG_DATA_HOME", (".local", "share"), platformdirs.user_data_dir)


def config_dir() -> Path:
    """The config root: `$LARIK_CONFIG_DIR`, else `$XDG_CONFIG_HOME/larik`, else `~/.config/larik`."""
    return _root("LARIK_CONFIG_DIR", "XDG_CONFIG_HOME", (".config",), platformdirs.user_config_dir)


def _root(override: str, xdg: str, posix_home: tuple[str, ...], elsewhere: Callable[..., str]) -> Path:
    """Larik's own variable `override`, else the XDG variable `xdg` (with `larik` appended),
    else `~/<posix_home>/larik` on POSIX and the platform's own directory elsewhere."""
    if value := os.environ.get(override):
        return Path(value)
    if value := os.environ.get(xdg):
        return Path(value) / _APP
    if os.name == "posix":
        return Path.home().joinpath(*posix_home, _APP)
    return Path(elsewhere(_APP, appauthor=False))


def _short_hash(text: str, n: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:n]


def cwd_slug(cwd: str | os.PathLike[str]) -> str:
    """A filesystem-safe, stable name for a working directory.

    The readable part is the absolute path with separators turned into `-` and anything
    outside `[A-Za-z0-9._-]` squeezed to `_`, keeping only its last 48 characters; an
    8-hex hash of the full path follows, so distinct directories never share a slug even
    when sanitizing or truncating made their readable parts equal.
    """
    absolute = os.path.abspath(os.fspath(cwd))
    readable = _UNSAFE.sub("_", absolute.replace(os.sep, "-")).strip("-_.") or "root"
    readable = readable[-_SLUG_READABLE_MAX:].lstrip("-_.") or "root"
    return f"{readable}-{_short_hash(absolute, 8)}"


def project_root(cwd: str | os.PathLike[str]) -> Path:
    """The git root containing `cwd`, or `cwd` itself outside git."""
    start = Path(os.path.abspath(os.fspath(cwd)))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def project_id(root: str | os.PathLike[str]) -> str:
    """A stable, file-name-safe id for a project: `<dir name>-<12 hex of sha256(real path)>`."""
    real = os.path.realpath(os.fspath(root))
    name = _UNSAFE.sub("_", os.path.basename(real)).strip("_.") or "root"
    return f"{name[:40]}-{_short_hash(real, 12)}"


def new_session_id(now: datetime | None = None) -> str:
    """A session id `YYYYMMDD-HHMMSS-<6 hex>` in local time."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{secrets.token_hex(3)}"


def is_session_id(text: str) -> bool:
    """Whether `text` is exactly a session id: all of it (no trailing newline), ASCII digits."""
    return _SESSION_ID.fullmatch(text) is not None


def new_entry_id() -> str:
    """A random entry id: 16 lowercase hex digits."""
    return secrets.token_hex(8)


def sessions_root() -> Path:
    return data_dir() / "sessions"


def sessions_dir(cwd: str | os.PathLike[str]) -> Path:
    """The folder holding the sessions of one working directory."""
    return sessions_root() / cwd_slug(cwd)


def checkpoints_dir(session_id: str) -> Path:
    """The folder holding the per-turn checkpoints of one session."""
    return data_dir() / "checkpoints" / session_id


def worktrees_dir() -> Path:
    return data_dir() / "worktrees"


def logs_dir() -> Path:
    return data_dir() / "logs"


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages: `a directory`, `a FIFO`, …"""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"
