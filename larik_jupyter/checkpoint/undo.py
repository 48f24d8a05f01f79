"""Undo of a saved turn: what changed since it, its files and created directories put back
(or removed), its notebook cells put back, and the `UndoResult` that tells it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.checkpoint.blobs import BlobMismatch, open_blob
from larik_jupyter.checkpoint.capture import file_left
from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellsNotRestored,
    CellSources,
    FileHolder,
    held_by_nobody,
)
from larik_jupyter.checkpoint.durable import DIR_FLAGS, Barrier, open_dir
from larik_jupyter.checkpoint.errors import CheckpointError
from larik_jupyter.checkpoint.manifest import FileRecord, Manifest
from larik_jupyter.checkpoint.restore import remove_empty_dir, restore_file
from larik_jupyter.checkpoint.safepath import DirWalk, PathRefused, confine
from larik_jupyter.checkpoint.turns import turn_label
from larik_jupyter.nbjson.cells import source_text


@dataclass
class UndoResult:
    """What an undo did: files put back (or deleted) and files refused with the reason.

    Directories the turn created are removed when empty (`removed_dirs`); one the user
    filled since, or that is now a symlink, is left alone and listed in `kept_dirs` with
    the reason, which does not make the undo fail.

    `variables` are the kernel variables the turn recorded. The store restores files only;
    the agent that holds the kernel's snapshots fills in `restored_variables`,
    `removed_variables` (created by the turn), `unrestored_variables` (name, why) and
    `lost_variables` (recorded, but this process holds no snapshot: the kernel restarted).
    """

    turn: int
    restored: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    removed_dirs: list[str] = field(default_factory=list)
    kept_dirs: list[tuple[str, str]] = field(default_factory=list)
    prompt: int | None = None
    variables: list[str] = field(default_factory=list)
    restored_variables: list[str] = field(default_factory=list)
    removed_variables: list[str] = field(default_factory=list)
    unrestored_variables: list[tuple[str, str]] = field(default_factory=list)
    lost_variables: list[str] = field(default_factory=list)
    # Per notebook whose cells came back: its path, how many cells, and where ("the open
    # notebook" or "the file"); a notebook whose cells could not is in `refused`.
    restored_cells: list[tuple[str, int, str]] = field(default_factory=list)
    # Files (paths) and cells (`PATH#ID`) changed since the turn by someone else: when
    # `changed` is set nothing was done, and undo asks whether to restore them anyway (`force`)
    # or skip them; `skipped` are those left as they are by an undo told to skip them.
    changed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return turn_label(self.turn, self.prompt)

    @property
    def ok(self) -> bool:
        """Whether every file was restored or skipped as asked (and the snapshot dropped)."""
        return not self.refused and not self.changed

    def variables_text(self) -> str:
        """The variable part of the report, e.g. `restored variables: df, data; removed: x;
        could not restore: big (1.2 GB, over the 512 MB budget)`; "" when the turn had none."""
        parts = []
        if self.restored_variables:
            parts.append("restored variables: " + ", ".join(self.restored_variables))
        if self.removed_variables:
            parts.append("removed: " + ", ".join(self.removed_variables))
        if self.unrestored_variables:
            parts.append("could not restore: " + ", ".join(
                f"{name} ({reason})" for name, reason in self.unrestored_variables
            ))
        if self.lost_variables:
            parts.append(
                "variables gone with the kernel (their snapshots lived only in the memory of "
                "the kernel that ran the turn): " + ", ".join(self.lost_variables)
            )
        return "; ".join(parts)


def restore_turn(
    root: Path,
    turn_dir: Path,
    manifest: Manifest,
    cells: CellRestorer,
    sources: CellSources,
    *,
    force: bool,
    skip_changed: bool,
    holder: FileHolder = held_by_nobody,
) -> UndoResult:
    """Put back the turn of `manifest` (saved in `turn_dir`) below `root`, as
    `CheckpointStore.undo` tells; the caller drops the snapshot when the result is `ok`. A file
    `holder` says must not be written now is left as it is (`refused`, with the reason), even
    with `force`: it is not asked about as changed since, since nothing could restore it."""
    held = [(r.path, why) for r in manifest.files if (why := holder(root, r.path)) is not None]
    manifest = _without(manifest, {path for path, _ in held})
    changed = [] if force else _changed_since(root, manifest, sources)
    if changed and not skip_changed:
        return UndoResult(
            manifest.turn, prompt=manifest.prompt,
            variables=[v.name for v in manifest.variables or []], changed=changed,
        )
    manifest = _without(manifest, set(changed))
    result = _restore(root, turn_dir, manifest)
    result.skipped = changed
    result.refused += held
    _restore_cells(root, manifest, cells, result)
    return result


def _restore(root: Path, turn_dir: Path, manifest: Manifest) -> UndoResult:
    result = UndoResult(
        manifest.turn,
        prompt=manifest.prompt,
        variables=[v.name for v in manifest.variables or []],
    )
    try:
        root_fd = os.open(root, DIR_FLAGS)
    except OSError as exc:
        raise CheckpointError(
            f"Cannot undo into {root} ({exc.strerror}); check that the project directory exists."
        ) from None
    try:
        with open_dir(turn_dir) as turn_fd, DirWalk(root_fd) as walk, Barrier() as barrier:
            for record in reversed(manifest.files):
                try:
                    _restore_record(root, walk, turn_fd, record, barrier)
                except PathRefused as exc:
                    result.refused.append((record.path, str(exc)))
                except BlobMismatch as exc:
                    result.refused.append((record.path, f"was not restored because {exc}"))
                except OSError as exc:
                    result.refused.append(
                        (record.path, f"could not be restored ({exc.strerror or exc})")
                    )
                else:
                    result.restored.append(record.path)
            _remove_created_dirs(root, root_fd, manifest, barrier, result)
            barrier.commit()
    finally:
        os.close(root_fd)
    return result


def _changed_since(root: Path, manifest: Manifest, sources: CellSources) -> list[str]:
    """The files (paths) and cells (`PATH#ID`) of `manifest` changed since its turn ended:
    there now, but neither as the turn left them nor as they were before it. One deleted
    since loses nothing when it comes back, so it is not asked about; paths that cannot be
    read are left to the restore, which refuses them."""
    changed = []
    try:
        with open_dir(root) as root_fd, DirWalk(root_fd) as walk:
            for record in manifest.files:
                if record.sha256_after is None and not record.deleted:
                    continue
                now = file_left(walk, root, record.path)
                if now.get("sha256_after") and now != _left_as(record) and now != _before(record):
                    changed.append(record.path)
    except OSError:
        return []  # the restore says why the root cannot be used
    for notebook in manifest.notebooks or []:
        now_cells = sources(root, notebook)
        if now_cells is None:
            continue
        for cell in notebook.cells:
            if cell.source_after is None and not cell.deleted:
                continue
            source = now_cells.get(cell.id)
            before = source_text(cell.cell) if cell.existed and cell.cell is not None else None
            if source is not None and source != (None if cell.deleted else cell.source_after) and source != before:
                changed.append(f"{notebook.path}#{cell.id}")
    return changed


def _restore_cells(root: Path, manifest: Manifest, cells: CellRestorer, result: UndoResult) -> None:
    for record in reversed(manifest.notebooks or []):
        try:
            where = cells(root, record)
        except CellsNotRestored as exc:
            result.refused.append((record.path, str(exc)))
        else:
            result.restored_cells.append((record.path, len(record.cells), where))


def _remove_created_dirs(
    root: Path, root_fd: int, manifest: Manifest, barrier: Barrier, result: UndoResult
) -> None:
    """Remove the directories the turn created, deepest first, each only if empty.

    A fresh walk re-opens every directory from the root, so a symlink swapped in since
    the files were restored is refused rather than followed through a cached fd.
    """
    created = {rel for record in manifest.files for rel in record.created_dirs or []}
    with DirWalk(root_fd) as walk:
        for rel in sorted(created, key=lambda rel: (-rel.count("/"), rel)):
            try:
                if remove_empty_dir(walk, confine(root, rel), barrier):
                    result.removed_dirs.append(rel)
            except PathRefused as exc:
                result.kept_dirs.append((rel, str(exc)))
            except OSError as exc:
                result.kept_dirs.append((rel, f"could not be removed ({exc.strerror or exc})"))


def _restore_record(
    root: Path, walk: DirWalk, turn_fd: int, record: FileRecord, barrier: Barrier
) -> None:
    parts = confine(root, record.path)
    if not record.existed:
        restore_file(walk, parts, record, None, barrier)
        return
    try:
        blob_fd = open_blob(record, turn_fd)
    except FileNotFoundError:
        raise BlobMismatch(f"its snapshot blob {record.blob} is missing") from None
    try:
        restore_file(walk, parts, record, blob_fd, barrier)
    finally:
        os.close(blob_fd)


def _left_as(record: FileRecord) -> dict[str, Any]:
    return {"sha256_after": record.sha256_after, "deleted": record.deleted}


def _before(record: FileRecord) -> dict[str, Any]:
    if not record.existed:
        return {"sha256_after": None, "deleted": True}
    return {"sha256_after": record.sha256, "deleted": None}


def _without(manifest: Manifest, skipped: set[str]) -> Manifest:
    """`manifest` without the files and cells named in `skipped` (see `_changed_since`)."""
    if not skipped:
        return manifest
    notebooks = [
        nb.model_copy(update={"cells": [c for c in nb.cells if f"{nb.path}#{c.id}" not in skipped]})
        for nb in manifest.notebooks or []
    ]
    return manifest.model_copy(update={
        "files": [r for r in manifest.files if r.path not in skipped],
        "notebooks": [nb for nb in notebooks if nb.cells] or None,
    })
