"""`manifest.json`: the commit record of one turn's snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from larik_jupyter.checkpoint.durable import write_atomic

MANIFEST = "manifest.json"
FORMAT = 1


class FileRecord(BaseModel):
    """One captured path: its state before the turn."""

    model_config = ConfigDict(extra="allow")

    path: str
    existed: bool
    mode: int | None = None
    size: int | None = None
    blob: str | None = None
    sha256: str | None = None
    # Directories above a file that did not exist, missing too before the turn (shallowest
    # first, relative to the root); undo removes them when empty. Absent in old manifests.
    created_dirs: list[str] | None = None
    # What the turn left, recorded when it ended: the file's SHA-256 then, or `deleted` when
    # there was none. Undo asks before restoring a file that is neither that nor as before the
    # turn (the user changed it since). Both absent when the turn did not end (or in old
    # manifests): undo cannot tell and restores.
    sha256_after: str | None = None
    deleted: bool | None = None


class VariableRecord(BaseModel):
    """A kernel variable the turn changed (`existed`) or created; its value before the turn
    lives only in the memory of the kernel that ran the turn, never here."""

    model_config = ConfigDict(extra="allow")

    name: str
    existed: bool
    # The kernel process that holds its value before the turn (`holder.this_process`: PID:START);
    # once that process is gone (the kernel restarted), undo cannot put the variable back.
    # Absent in old manifests.
    kernel: str | None = None


class CellRecord(BaseModel):
    """A cell of an open notebook the turn changed through the bridge: its state before the
    turn (`existed`: it was there; otherwise the turn created it and undo deletes it)."""

    model_config = ConfigDict(extra="allow")

    id: str
    existed: bool
    # Where it stood before the turn: its 0-based index and the id of the cell before it
    # (absent when it was the first), so undo puts it back there.
    position: int | None = None
    previous: str | None = None
    # The whole nbformat cell before the turn (type, source, outputs, metadata, count).
    cell: dict[str, Any] | None = None
    # What the turn left: the cell's source, or `deleted`; both absent when the turn ended
    # before saying (undo still works; only the panel's diff is unknown).
    source_after: str | None = None
    deleted: bool | None = None


class NotebookRecord(BaseModel):
    """The cells of one notebook (path relative to the root) a turn changed in its open
    document, in the order first changed."""

    model_config = ConfigDict(extra="allow")

    path: str
    cells: list[CellRecord] = []


class Manifest(BaseModel):
    """Which files a turn captured, in capture order, and when the turn began."""

    model_config = ConfigDict(extra="allow")

    format: int = FORMAT
    session_id: str
    turn: int
    time: str
    root: str
    files: list[FileRecord] = []
    # The session's prompt (1-based) that began the turn; absent in old manifests.
    prompt: int | None = None
    variables: list[VariableRecord] | None = None
    notebooks: list[NotebookRecord] | None = None


class ManifestError(Exception):
    """A manifest is missing or unreadable; carries a one-line reason."""


def read_manifest(turn_dir: Path) -> Manifest:
    """Load `turn_dir/manifest.json`, raising `ManifestError` when it is absent or malformed."""
    path = turn_dir / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ManifestError(f"{path} is missing") from None
    except OSError as exc:
        raise ManifestError(f"{path} cannot be read: {exc.strerror}") from None
    try:
        return Manifest.model_validate(orjson.loads(data))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise ManifestError(f"{path} is not a valid manifest: {str(exc).splitlines()[0]}") from None


def write_manifest(turn_dir_fd: int, manifest: Manifest) -> None:
    """Commit `manifest` atomically (temporary file, fsync, rename, directory fsync)."""
    data = orjson.dumps(
        manifest.model_dump(mode="json", exclude_none=True), option=orjson.OPT_INDENT_2
    )
    write_atomic(turn_dir_fd, MANIFEST, data + b"\n")
