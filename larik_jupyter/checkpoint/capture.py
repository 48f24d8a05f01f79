"""Capture of the open turn: files and notebook cells snapshotted before the turn changes
them, the kernel variables it changed, and what it left, committed by its manifest."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from larik_jupyter.checkpoint.blobs import Digest, blob_name, copy_hashed
from larik_jupyter.checkpoint.durable import Barrier, fsync_dir, locked_dir, make_dirs, open_dir
from larik_jupyter.checkpoint.errors import CaptureError, CheckpointError
from larik_jupyter.checkpoint.holder import this_process
from larik_jupyter.checkpoint.manifest import (
    CellRecord,
    FileRecord,
    Manifest,
    NotebookRecord,
    VariableRecord,
    write_manifest,
)
from larik_jupyter.checkpoint.safepath import DirWalk, OutsideRoot, PathRefused, confine, open_entry
from larik_jupyter.session.entry import now_rfc3339

_NEW = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def confined_paths(
    root: Path, paths_: Iterable[str | os.PathLike[str]]
) -> dict[tuple[str, ...], str]:
    """The paths to capture, as their parts below `root`, each with the path as given; those
    outside the root are left out (undo never restores outside the project), an unsafe one
    raises `CaptureError`."""
    wanted: dict[tuple[str, ...], str] = {}
    for path in paths_:
        try:
            wanted.setdefault(confine(root, path), os.fspath(path))
        except OutsideRoot:
            continue
        except PathRefused as exc:
            raise CaptureError(
                f"{os.fspath(path)} {exc}, so it cannot be checkpointed and was left unchanged."
            ) from None
    return wanted


def confined_notebook(root: Path, path: str | os.PathLike[str]) -> str | None:
    """The notebook `path` relative to `root` as its cells' record names it; None outside the
    root (as for files: undo never restores outside the project); an unsafe path raises
    `CaptureError`."""
    try:
        return "/".join(confine(root, path))
    except OutsideRoot:
        return None
    except PathRefused as exc:
        raise CaptureError(f"{os.fspath(path)} {exc}, so its cells cannot be checkpointed.") from None


class TurnCapture:
    """The open turn of a session: what it captured so far, committed to
    `<directory>/<turn>/` by each write of its manifest. Not locked itself: the store calls it
    under its lock."""

    def __init__(
        self, session_id: str, root: Path, directory: Path, turn: int, prompt_number: int | None
    ) -> None:
        self.session_id = session_id
        self.root = root
        self.directory = directory
        self.turn = turn
        self._time = now_rfc3339()
        self._prompt = prompt_number
        self._records: list[FileRecord] = []
        self._captured: set[tuple[str, ...]] = set()
        self._variables: list[VariableRecord] = []
        self._notebooks: dict[str, NotebookRecord] = {}
        # Per notebook, its cell ids when the turn first changed it: where cells stood before.
        self._orders: dict[str, list[str]] = {}
        self._noted = False  # cells noted since the last manifest write

    def forget(self) -> None:
        """Forget what the turn captured, its snapshot being undone: a later capture in the
        turn starts its records afresh."""
        self._records = []
        self._captured = set()
        self._variables = []
        self._notebooks = {}
        self._orders = {}

    def note_variables(self, variables: list[tuple[str, bool]]) -> None:
        """Record the names of the kernel variables the turn changed (`existed`) or created."""
        known = {v.name for v in self._variables}
        new = [VariableRecord(name=n, existed=e, kernel=this_process()) for n, e in variables if n not in known]
        if not new:
            return
        try:
            self._write_manifest(self._records, self._variables + new)
        except OSError as exc:
            raise CheckpointError(
                f"Could not record the turn's kernel variables in {self.directory} "
                f"({exc.strerror}); undo will not know about them."
            ) from None
        self._variables += new

    def capture_cells(
        self, rel: str, order: list[str], cells: list[dict[str, Any]], created: Iterable[str]
    ) -> list[str]:
        """Record the state before the turn of `cells` of the notebook `rel`, and that the
        cells `created` are new (see `CheckpointStore.capture_cells`); returns the ids
        recorded now."""
        record = self._notebooks.get(rel) or NotebookRecord(path=rel)
        before = self._orders.get(rel, order)
        known = {c.id for c in record.cells}
        new = []
        for cell_id in created:
            if cell_id and cell_id not in known:
                known.add(cell_id)
                new.append(CellRecord(id=cell_id, existed=False))
        for cell in cells:
            cell_id = str(cell.get("id", ""))
            if cell_id and cell_id not in known:
                known.add(cell_id)
                new.append(_cell_before(cell_id, cell, before if cell_id in before else order))
        if not new:
            return []
        notebooks = {**self._notebooks, rel: record.model_copy(update={"cells": record.cells + new})}
        try:
            self._write_manifest(self._records, self._variables, notebooks)
        except OSError as exc:
            raise CaptureError(
                f"Could not save a checkpoint of the cells of {rel} in {self.directory} "
                f"({exc.strerror}); free disk space or fix that directory's permissions, then retry."
            ) from None
        self._notebooks = notebooks
        self._orders.setdefault(rel, list(order))
        return [c.id for c in new]

    def forget_cells(self, rel: str, dropped: set[str]) -> None:
        """Drop the records of the cells `dropped` of the notebook `rel` (see
        `CheckpointStore.forget_cells`)."""
        record = self._notebooks.get(rel)
        if record is None or not dropped & {c.id for c in record.cells}:
            return
        kept = [c for c in record.cells if c.id not in dropped]
        notebooks = {**self._notebooks, rel: record.model_copy(update={"cells": kept})}
        if not kept:
            del notebooks[rel]
        try:
            self._write_manifest(self._records, self._variables, notebooks)
        except OSError as exc:
            raise CaptureError(
                f"Could not drop the checkpoint of cells of {rel} in {self.directory} ({exc.strerror})."
            ) from None
        self._notebooks = notebooks
        if not kept:
            self._orders.pop(rel, None)  # its next first record gives the order then

    def note_cells(self, rel: str, after: dict[str, str | None]) -> None:
        """Note in memory what the turn left of the captured cells of the notebook `rel`
        (see `CheckpointStore.note_cells`)."""
        record = self._notebooks.get(rel)
        if record is None:
            return
        cells = [
            c.model_copy(update={"source_after": after[c.id], "deleted": None} if after[c.id] is not None
                         else {"source_after": None, "deleted": True})
            if c.id in after else c
            for c in record.cells
        ]
        self._notebooks = {**self._notebooks, rel: record.model_copy(update={"cells": cells})}
        self._noted = True

    def finish(self) -> None:
        """Record what the turn left (see `CheckpointStore.finish_turn`); a failure loses only
        that knowledge."""
        if not (self._noted or self._records):
            return
        with contextlib.suppress(OSError):
            records = self._left_by_turn(self._records)
            self._write_manifest(records, self._variables)
            self._records = records

    def _left_by_turn(self, records: list[FileRecord]) -> list[FileRecord]:
        """`records` with what their files hold now as what the turn left."""
        with open_dir(self.root) as root_fd, DirWalk(root_fd) as walk:
            return [record.model_copy(update=file_left(walk, self.root, record.path)) for record in records]

    def capture(self, wanted: dict[tuple[str, ...], str]) -> None:
        """Snapshot the paths of `wanted` (parts below the root, the path as given) not
        captured yet in this turn, all or none; raises `CaptureError` to stop the write."""
        todo = {parts: given for parts, given in wanted.items() if parts not in self._captured}
        if todo:
            self._capture(todo)

    @contextlib.contextmanager
    def _open_turn_dir(self) -> Iterator[Path]:
        """The open turn's directory, made (durably) if needed, with the session directory
        locked against other processes while the caller writes in it."""
        make_dirs(self.directory)
        with locked_dir(self.directory) as session_fd:
            assert session_fd is not None
            turn_dir = self.directory / str(self.turn)
            with contextlib.suppress(FileExistsError):
                turn_dir.mkdir()
                fsync_dir(session_fd)
            yield turn_dir

    def _capture(self, todo: dict[tuple[str, ...], str]) -> None:
        snaps: list[_Snapshot] = []
        new: list[FileRecord] = []
        try:
            with self._open_turn_dir() as turn_dir:
                with (
                    open_dir(turn_dir) as turn_fd,
                    open_dir(self.root) as root_fd,
                    DirWalk(root_fd) as walk,
                ):
                    committing = False
                    try:
                        for parts, given in todo.items():
                            index = len(self._records) + len(snaps)
                            snaps.append(_snapshot(walk, turn_fd, parts, given, index))
                        new = [snap.record() for snap in snaps]
                        with Barrier() as barrier:
                            barrier.add(turn_fd)
                            barrier.commit()
                        committing = True
                        write_manifest(
                            turn_fd, self._manifest(self._records + new, self._variables, self._notebooks)
                        )
                    except BaseException:
                        if not committing:
                            for snap in snaps:
                                if snap.blob:
                                    with contextlib.suppress(OSError):
                                        os.unlink(snap.blob, dir_fd=turn_fd)
                        if not self._records:
                            with contextlib.suppress(OSError):
                                turn_dir.rmdir()
                        raise
        except OSError as exc:
            given = next(iter(todo.values()))
            raise CaptureError(
                f"Could not save a checkpoint of {given} in {self.directory} ({exc.strerror}); "
                "free disk space or fix that directory's permissions, then retry."
            ) from None
        self._records.extend(new)
        self._captured.update(todo)

    def _manifest(
        self,
        files: list[FileRecord],
        variables: list[VariableRecord],
        notebooks: dict[str, NotebookRecord],
    ) -> Manifest:
        return Manifest(
            session_id=self.session_id,
            turn=self.turn,
            time=self._time,
            root=str(self.root),
            files=files,
            prompt=self._prompt,
            variables=variables or None,
            notebooks=list(notebooks.values()) or None,
        )

    def _write_manifest(
        self,
        files: list[FileRecord],
        variables: list[VariableRecord],
        notebooks: dict[str, NotebookRecord] | None = None,
    ) -> None:
        """Commit the open turn's manifest as given (its directory made if needed)."""
        with self._open_turn_dir() as turn_dir, open_dir(turn_dir) as turn_fd:
            write_manifest(
                turn_fd, self._manifest(files, variables, self._notebooks if notebooks is None else notebooks)
            )
        self._noted = False


@dataclass
class _Snapshot:
    """One path copied into the turn directory, its hash possibly still being computed."""

    path: str
    mode: int | None = None
    blob: str | None = None
    digest: Digest | None = None
    created_dirs: list[str] = field(default_factory=list)

    def record(self) -> FileRecord:
        """The manifest record, once the blob's hash is known."""
        if self.digest is None:
            return FileRecord(path=self.path, existed=False, created_dirs=self.created_dirs or None)
        return FileRecord(
            path=self.path,
            existed=True,
            mode=self.mode,
            size=self.digest.size,
            blob=self.blob,
            sha256=self.digest.sha256(),
        )


def _snapshot(walk: DirWalk, turn_fd: int, parts: tuple[str, ...], given: str, index: int) -> _Snapshot:
    rel = "/".join(parts)
    try:
        src = open_entry(walk, parts)
        missing = [] if src is not None else walk.missing(parts)
    except PathRefused as exc:
        raise CaptureError(
            f"{given} {exc}, so it cannot be checkpointed and was left unchanged."
        ) from None
    except OSError as exc:
        raise CaptureError(
            f"Could not read {given} to checkpoint it ({exc.strerror}); fix its permissions, then retry."
        ) from None
    if src is None:
        return _Snapshot(rel, created_dirs=["/".join(d) for d in missing])
    try:
        mode = stat.S_IMODE(os.fstat(src).st_mode)
        blob = blob_name(index)
        # Written under its final name: a blob counts only once a manifest written after
        # the barrier names it, so a torn one is never read (and `clean_session` drops it).
        out = _new_blob(turn_fd, blob)
        try:
            try:
                digest = copy_hashed(src, out)
            finally:
                os.close(out)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(blob, dir_fd=turn_fd)
            raise
    finally:
        os.close(src)
    return _Snapshot(rel, mode, blob, digest)


def file_left(walk: DirWalk, root: Path, rel: str) -> dict[str, Any]:
    """The state of the file `rel` now, in `FileRecord`'s after-fields: its SHA-256, or
    `deleted`; {} when it cannot be read safely (a symlink, a FIFO: the restore refuses it)."""
    try:
        fd = open_entry(walk, confine(root, rel))
    except (PathRefused, OSError):
        return {}
    if fd is None:
        return {"sha256_after": None, "deleted": True}
    try:
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    except OSError:
        return {}
    finally:
        os.close(fd)
    return {"sha256_after": digest.hexdigest(), "deleted": None}


def _cell_before(cell_id: str, cell: dict[str, Any], order: list[str]) -> CellRecord:
    """A cell's record before its first change: the cell and where it stood in `order`."""
    position = order.index(cell_id) if cell_id in order else len(order)
    previous = order[position - 1] if 0 < position <= len(order) else None
    return CellRecord(id=cell_id, existed=True, position=position, previous=previous, cell=cell)


def _new_blob(turn_fd: int, blob: str) -> int:
    """Create `blob` for writing; one left by a crashed capture is named by no manifest (its
    index is past the turn's records), so it is replaced."""
    try:
        return os.open(blob, _NEW, 0o600, dir_fd=turn_fd)
    except FileExistsError:
        os.unlink(blob, dir_fd=turn_fd)
        return os.open(blob, _NEW, 0o600, dir_fd=turn_fd)
