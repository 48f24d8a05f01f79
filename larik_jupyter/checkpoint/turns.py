"""A session's saved turns, reloaded from their manifests: the turn list, the newest turn to
undo, a file's bytes before a turn."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from larik_jupyter.checkpoint.blobs import BlobMismatch, open_blob, read_verified
from larik_jupyter.checkpoint.errors import CheckpointError, NothingToUndoError
from larik_jupyter.checkpoint.manifest import (
    FileRecord,
    Manifest,
    ManifestError,
    NotebookRecord,
    read_manifest,
)
from larik_jupyter.checkpoint.safepath import PathRefused, confine
from larik_jupyter.checkpoint.sessiondir import turn_dirs


@dataclass(frozen=True)
class FileInfo:
    """A captured file's state before its turn; `path` is relative to the project root."""

    path: str
    existed: bool
    mode: int | None
    size: int | None


def turn_label(turn: int, prompt_number: int | None) -> str:
    """How people read a saved turn: by its prompt's number; an older manifest without one by
    its checkpoint number."""
    return f"prompt {prompt_number}" if prompt_number is not None else f"turn {turn} (no prompt number)"


@dataclass(frozen=True)
class TurnInfo:
    """A saved turn that changed files or kernel variables, files in capture order.

    `prompt` is the session's prompt (1-based) that began it (None in old manifests);
    `variables` are `(name, existed)` of the kernel variables it changed or created;
    `notebooks` the cells it changed in open notebooks, with their state before the turn;
    `kernels` the processes that hold the variables' values before it (`holder`; empty in old
    manifests)."""

    turn: int
    time: datetime
    files: list[FileInfo]
    prompt: int | None = None
    variables: list[tuple[str, bool]] = field(default_factory=list)
    notebooks: list[NotebookRecord] = field(default_factory=list)
    kernels: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return turn_label(self.turn, self.prompt)


def saved_turns(directory: Path) -> list[TurnInfo]:
    """The saved turns of the session directory `directory` that changed files, oldest first."""
    result = []
    for turn, turn_dir in turn_dirs(directory):
        try:
            manifest = read_manifest(turn_dir)
        except ManifestError:
            continue
        if manifest.files or manifest.variables or manifest.notebooks:
            files = [FileInfo(r.path, r.existed, r.mode, r.size) for r in manifest.files]
            names = [(v.name, v.existed) for v in manifest.variables or []]
            result.append(
                TurnInfo(turn, _parse_time(manifest.time), files, manifest.prompt, names,
                         list(manifest.notebooks or []),
                         tuple(dict.fromkeys(v.kernel for v in manifest.variables or [] if v.kernel)))
            )
    return result


def last_saved(directory: Path) -> int:
    """The number of the session directory's last turn (committed or not), 0 when none."""
    saved = turn_dirs(directory)
    return saved[-1][0] if saved else 0


def nothing_to_undo(session_id: str) -> NothingToUndoError:
    # Front ends never show this one: the undo path tells it (`UndoReport.nothing_left`).
    return NothingToUndoError(f"Session {session_id} has no saved turn with changes left to undo.")


def newest_with_changes(
    directory: Path, session_id: str, passing: Collection[int] = ()
) -> tuple[int, Path, Manifest]:
    """The newest saved turn that changed files, cells or variables, but for those numbered in
    `passing`: its number, directory and manifest; `NothingToUndoError` when there is none."""
    for turn, turn_dir in reversed(turn_dirs(directory)):
        if turn in passing:
            continue
        try:
            manifest = read_manifest(turn_dir)
        except ManifestError as exc:
            raise CheckpointError(
                f"Cannot undo turn {turn}: {exc}; delete {turn_dir} to discard that turn, then undo again."
            ) from None
        if manifest.files or manifest.variables or manifest.notebooks:
            return turn, turn_dir, manifest
    raise nothing_to_undo(session_id)


def original_bytes(
    directory: Path, session_id: str, root: Path, turn: int, path: str | os.PathLike[str]
) -> bytes | None:
    """A file's bytes before `turn` (None when it did not exist), e.g. to diff against now."""
    try:
        rel = "/".join(confine(root, path))
    except PathRefused as exc:
        raise CheckpointError(f"{os.fspath(path)} {exc}; it has no checkpoint.") from None
    turn_dir = directory / str(turn)
    try:
        manifest = read_manifest(turn_dir)
    except ManifestError as exc:
        raise CheckpointError(
            f"Turn {turn} of session {session_id} has no snapshot ({exc}); list turns with `larik-jupyter checkpoints {session_id}`."
        ) from None
    for record in manifest.files:
        if record.path == rel:
            if not record.existed:
                return None
            try:
                return _read_blob(turn_dir, record)
            except (BlobMismatch, OSError) as exc:
                raise CheckpointError(
                    f"The snapshot of {rel} in turn {turn} is damaged: {exc}."
                ) from None
    raise CheckpointError(
        f"{rel} was not changed in turn {turn} of session {session_id}; pick a file listed for that turn."
    )


def _read_blob(turn_dir: Path, record: FileRecord) -> bytes:
    fd = open_blob(record, turn_dir)
    try:
        return read_verified(fd, record.size or 0, record.sha256 or "")
    finally:
        os.close(fd)


def _parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
