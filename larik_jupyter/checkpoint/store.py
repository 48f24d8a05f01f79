"""The per-session checkpoint store: capture files before a turn changes them, undo a turn."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from larik_jupyter import paths
from larik_jupyter.checkpoint.blobs import (
    BlobMismatch,
    Digest,
    blob_name,
    copy_hashed,
    read_verified,
)
from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellsNotRestored,
    CellSources,
    restore_in_file,
    sources_in_file,
)
from larik_jupyter.checkpoint.durable import (
    DIR_FLAGS,
    Barrier,
    fsync_dir,
    locked_dir,
    make_dirs,
    open_dir,
)
from larik_jupyter.checkpoint.errors import CaptureError, CheckpointError, NothingToUndoError
from larik_jupyter.checkpoint.manifest import (
    CellRecord,
    FileRecord,
    Manifest,
    ManifestError,
    NotebookRecord,
    VariableRecord,
    read_manifest,
    write_manifest,
)
from larik_jupyter.checkpoint.prune import PruneReport, prune
from larik_jupyter.checkpoint.restore import remove_empty_dir, restore_file
from larik_jupyter.checkpoint.safepath import (
    DirWalk,
    OutsideRoot,
    PathRefused,
    confine,
    open_entry,
)
from larik_jupyter.checkpoint.sessiondir import (
    clean_session,
    is_blob_name,
    remove_in_background,
    retire_turn,
    turn_dirs,
)
from larik_jupyter.errors import LarikError
from larik_jupyter.nbjson.cells import source_text
from larik_jupyter.session.entry import now_rfc3339

__all__ = [
    "CaptureError",
    "CheckpointError",
    "CheckpointStore",
    "FileInfo",
    "NothingToUndoError",
    "PruneReport",
    "TurnInfo",
    "UndoResult",
    "prune",
]

_SESSION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


@dataclass(frozen=True)
class FileInfo:
    """A captured file's state before its turn; `path` is relative to the project root."""

    path: str
    existed: bool
    mode: int | None
    size: int | None


def turn_label(turn: int, prompt: int | None) -> str:
    """How people read a saved turn: by its prompt's number; an older manifest without one by
    its checkpoint number."""
    return f"prompt {prompt}" if prompt is not None else f"turn {turn} (no prompt number)"


@dataclass(frozen=True)
class TurnInfo:
    """A saved turn that changed files or kernel variables, files in capture order.

    `prompt` is the session's prompt (1-based) that began it (None in old manifests);
    `variables` are `(name, existed)` of the kernel variables it changed or created;
    `notebooks` the cells it changed in open notebooks, with their state before the turn."""

    turn: int
    time: datetime
    files: list[FileInfo]
    prompt: int | None = None
    variables: list[tuple[str, bool]] = field(default_factory=list)
    notebooks: list[NotebookRecord] = field(default_factory=list)

    @property
    def label(self) -> str:
        return turn_label(self.turn, self.prompt)


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


class CheckpointStore:
    """Per-turn snapshots of one session's files under `checkpoints/<session-id>/<turn>/`.

    `root` is the project root every capture and restore is confined to (by default, that of
    the working directory the session file records). Saved turns are
    reloaded from disk, so undo works across kernel restarts; new turns are numbered after
    the last saved one. With `enabled` off (worktree subagents) nothing is captured. One
    store may be shared by threads; processes are serialised by a lock on the session
    directory.
    """

    def __init__(
        self, session_id: str, root: str | os.PathLike[str] | None = None, *, enabled: bool = True
    ) -> None:
        if not _SESSION_NAME.fullmatch(session_id):
            raise CheckpointError(
                f"{session_id!r} is not a valid session id; pass an id like 20250101-120000-a1b2c3."
            )
        self.session_id = session_id
        self.root = Path(os.path.abspath(root if root is not None else _session_root(session_id)))
        self.enabled = enabled
        self.directory = paths.checkpoints_dir(session_id)
        self._lock = threading.RLock()
        self._last = self._last_saved()
        self._turn = 0
        self._turn_time = ""
        self._records: list[FileRecord] = []
        self._captured: set[tuple[str, ...]] = set()
        self._prompt: int | None = None
        self._variables: list[VariableRecord] = []
        self._notebooks: dict[str, NotebookRecord] = {}
        # Per notebook, its cell ids when the turn first changed it: where cells stood before.
        self._orders: dict[str, list[str]] = {}
        self._noted = False  # cells noted since the last manifest write
        self._removals: list[threading.Thread] = []
        if self.directory.is_dir():
            with locked_dir(self.directory, wait=False) as fd:
                if fd is not None:
                    clean_session(self.directory)

    def begin_turn(self, prompt: int | None = None) -> int:
        """Open the next turn (at each user prompt, `prompt` being its 1-based number in the
        session) and return the turn's number."""
        with self._lock:
            self._last = max(self._last, self._last_saved()) + 1
            self._turn = self._last
            self._turn_time = now_rfc3339()
            self._records = []
            self._captured = set()
            self._prompt = prompt
            self._variables = []
            self._notebooks = {}
            self._orders = {}
            self._noted = False
            return self._turn

    def note_variables(self, variables: list[tuple[str, bool]]) -> None:
        """Record in the open turn's manifest the names of the kernel variables it changed
        (`existed`) or created; their values never reach the disk."""
        if not self.enabled:
            return
        with self._lock:
            known = {v.name for v in self._variables}
            new = [VariableRecord(name=n, existed=e) for n, e in variables if n not in known]
            if not new or not self._turn:
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
        self,
        path: str | os.PathLike[str],
        order: list[str],
        cells: list[dict[str, Any]],
        created: Iterable[str] = (),
    ) -> list[str]:
        """Record, before the open document of the notebook at `path` changes, the state of
        `cells` (nbformat cells with their ids) and that the cells `created` are new; `order`
        is the document's cell ids now. Only a cell's first change in a turn is kept (its
        state before the turn). Returns the ids recorded now (for `forget_cells`). Raises
        `CaptureError` to stop the change."""
        if not self.enabled:
            return []
        try:
            rel = "/".join(confine(self.root, path))
        except OutsideRoot:
            return []  # as for files: undo never restores outside the project
        except PathRefused as exc:
            raise CaptureError(f"{os.fspath(path)} {exc}, so its cells cannot be checkpointed.") from None
        with self._lock:
            if not self._turn:
                self.begin_turn()
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

    def _recorded_notebook(self, path: str | os.PathLike[str]) -> str | None:
        """`path` relative to the root as its cells' record names it; None when this store
        records nothing or the path is refused (then it was never captured)."""
        if not self.enabled:
            return None
        try:
            return "/".join(confine(self.root, path))
        except PathRefused:
            return None

    def forget_cells(self, path: str | os.PathLike[str], cell_ids: Iterable[str]) -> None:
        """Drop the records `capture_cells` took of `cell_ids` for an edit that then did not
        land (the browser refused it), so undo leaves those cells alone and their next capture
        records them as they are then. Written before it returns, like a capture."""
        dropped = set(cell_ids)
        rel = self._recorded_notebook(path)
        if rel is None:
            return
        with self._lock:
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

    def note_cells(self, path: str | os.PathLike[str], after: dict[str, str | None]) -> None:
        """Note what the turn left of cells already captured: each id's source now, or None
        when the turn deleted it (for the undo panel's diffs; undo does not need it). Kept in
        memory and written with the next manifest write or by `finish_turn`, so an edit waits
        for the disk once, before it lands."""
        rel = self._recorded_notebook(path)
        if rel is None:
            return
        with self._lock:
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

    def finish_turn(self) -> None:
        """At the end of a turn, record what it left: each captured file's SHA-256 now (or that
        it is gone), so undo can tell a later change by the user, and what `note_cells` noted
        since the last manifest write. A failure loses only that knowledge: undo then restores
        those files without asking, and the panel shows no diff of those cells."""
        with self._lock:
            if not self._turn or not (self._noted or self._records):
                return
            with contextlib.suppress(OSError):
                records = self._left_by_turn(self._records)
                self._write_manifest(records, self._variables)
                self._records = records

    def _left_by_turn(self, records: list[FileRecord]) -> list[FileRecord]:
        """`records` with what their files hold now as what the turn left."""
        with open_dir(self.root) as root_fd, DirWalk(root_fd) as walk:
            return [record.model_copy(update=_left(walk, self.root, record.path)) for record in records]

    def capture(self, path: str | os.PathLike[str]) -> None:
        """Snapshot `path` before its first write in this turn; raises `CaptureError` to stop the write.

        Paths outside the root are not captured: undo never restores outside the project.
        """
        self.capture_paths([path])

    def capture_paths(self, paths_: Iterable[str | os.PathLike[str]]) -> None:
        """Snapshot several paths at once (a shell command's `checkpoint_paths`), all or none."""
        if not self.enabled:
            return
        wanted: dict[tuple[str, ...], str] = {}
        for path in paths_:
            try:
                wanted.setdefault(confine(self.root, path), os.fspath(path))
            except OutsideRoot:
                continue
            except PathRefused as exc:
                raise CaptureError(
                    f"{os.fspath(path)} {exc}, so it cannot be checkpointed and was left unchanged."
                ) from None
        with self._lock:
            if not self._turn:
                self.begin_turn()
            todo = {parts: given for parts, given in wanted.items() if parts not in self._captured}
            if todo:
                self._capture(todo)

    def turns(self) -> list[TurnInfo]:
        """The saved turns that changed files, oldest first."""
        result = []
        for turn, turn_dir in turn_dirs(self.directory):
            try:
                manifest = read_manifest(turn_dir)
            except ManifestError:
                continue
            if manifest.files or manifest.variables or manifest.notebooks:
                files = [FileInfo(r.path, r.existed, r.mode, r.size) for r in manifest.files]
                names = [(v.name, v.existed) for v in manifest.variables or []]
                result.append(
                    TurnInfo(turn, _parse_time(manifest.time), files, manifest.prompt, names,
                             list(manifest.notebooks or []))
                )
        return result

    def original_bytes(self, turn: int, path: str | os.PathLike[str]) -> bytes | None:
        """A file's bytes before `turn` (None when it did not exist), e.g. to diff against now."""
        try:
            rel = "/".join(confine(self.root, path))
        except PathRefused as exc:
            raise CheckpointError(f"{os.fspath(path)} {exc}; it has no checkpoint.") from None
        turn_dir = self.directory / str(turn)
        try:
            manifest = read_manifest(turn_dir)
        except ManifestError as exc:
            raise CheckpointError(
                f"Turn {turn} of session {self.session_id} has no snapshot ({exc}); list turns with `larik-jupyter checkpoints {self.session_id}`."
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
            f"{rel} was not changed in turn {turn} of session {self.session_id}; pick a file listed for that turn."
        )

    def undo(
        self,
        cells: CellRestorer = restore_in_file,
        sources: CellSources = sources_in_file,
        *,
        force: bool = False,
        skip_changed: bool = False,
    ) -> UndoResult:
        """Restore the newest turn that changed files and drop its snapshot.

        Files come back in reverse capture order; files the turn created are deleted, and so
        are the directories it created for them once empty (see `UndoResult`). Then the cells
        it changed in open notebooks go back through `cells` (by default into the notebooks'
        files). When any file or notebook is refused the snapshot is kept so undo can be
        retried, and the result lists what was and was not restored.

        A file (or a cell, as `sources` reads it now) that is neither what the turn left nor
        what it was before the turn was changed since, by the user: then nothing is restored
        and the result lists it in `changed` (the question to ask), unless `force` (restore it
        anyway, losing that change) or `skip_changed` (leave it as it is, listed in `skipped`,
        and undo the rest).
        """
        with self._lock:
            if not self.directory.is_dir():
                raise self._nothing()
            with locked_dir(self.directory) as session_fd:
                assert session_fd is not None
                clean_session(self.directory)
                turn, turn_dir, manifest = self._newest_with_files()
                changed = [] if force else self._changed_since(manifest, sources)
                if changed and not skip_changed:
                    return UndoResult(
                        manifest.turn, prompt=manifest.prompt,
                        variables=[v.name for v in manifest.variables or []], changed=changed,
                    )
                manifest = _without(manifest, set(changed))
                result = self._restore(turn_dir, manifest)
                result.skipped = changed
                self._restore_cells(manifest, cells, result)
                if result.ok:
                    self._removals.append(
                        remove_in_background(self.directory / retire_turn(session_fd, turn))
                    )
                    if turn == self._turn:
                        self._records = []
                        self._captured = set()
                        self._variables = []
                        self._notebooks = {}
                        self._orders = {}
                return result

    def settle(self) -> None:
        """Wait until the snapshots dropped by earlier undos are gone from the disk.

        Nothing needs this for correctness (a dropped snapshot is already committed as
        dropped); it is for callers that list the checkpoint directory right after an undo."""
        removals, self._removals = self._removals, []
        for worker in removals:
            worker.join()

    def _nothing(self) -> NothingToUndoError:
        return NothingToUndoError(
            f"Nothing left to undo in session {self.session_id}: no turn of it has changes to files, "
            "cells or kernel variables that are not undone already."
        )

    def _last_saved(self) -> int:
        saved = turn_dirs(self.directory)
        return saved[-1][0] if saved else 0

    def _newest_with_files(self) -> tuple[int, Path, Manifest]:
        for turn, turn_dir in reversed(turn_dirs(self.directory)):
            try:
                manifest = read_manifest(turn_dir)
            except ManifestError as exc:
                raise CheckpointError(
                    f"Cannot undo turn {turn}: {exc}; delete {turn_dir} to discard that turn, then undo again."
                ) from None
            if manifest.files or manifest.variables or manifest.notebooks:
                return turn, turn_dir, manifest
        raise self._nothing()

    @contextlib.contextmanager
    def _open_turn_dir(self) -> Iterator[Path]:
        """The open turn's directory, made (durably) if needed, with the session directory
        locked against other processes while the caller writes in it."""
        make_dirs(self.directory)
        with locked_dir(self.directory) as session_fd:
            assert session_fd is not None
            turn_dir = self.directory / str(self._turn)
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
                            snaps.append(self._snapshot(walk, turn_fd, parts, given, index))
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
            turn=self._turn,
            time=self._turn_time,
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

    def _snapshot(
        self, walk: DirWalk, turn_fd: int, parts: tuple[str, ...], given: str, index: int
    ) -> _Snapshot:
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

    def _restore(self, turn_dir: Path, manifest: Manifest) -> UndoResult:
        result = UndoResult(
            manifest.turn,
            prompt=manifest.prompt,
            variables=[v.name for v in manifest.variables or []],
        )
        try:
            root_fd = os.open(self.root, DIR_FLAGS)
        except OSError as exc:
            raise CheckpointError(
                f"Cannot undo into {self.root} ({exc.strerror}); check that the project directory exists."
            ) from None
        try:
            with open_dir(turn_dir) as turn_fd, DirWalk(root_fd) as walk, Barrier() as barrier:
                for record in reversed(manifest.files):
                    try:
                        self._restore_record(walk, turn_fd, record, barrier)
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
                self._remove_created_dirs(root_fd, manifest, barrier, result)
                barrier.commit()
        finally:
            os.close(root_fd)
        return result

    def _changed_since(self, manifest: Manifest, sources: CellSources) -> list[str]:
        """The files (paths) and cells (`PATH#ID`) of `manifest` changed since its turn ended:
        there now, but neither as the turn left them nor as they were before it. One deleted
        since loses nothing when it comes back, so it is not asked about; paths that cannot be
        read are left to the restore, which refuses them."""
        changed = []
        try:
            with open_dir(self.root) as root_fd, DirWalk(root_fd) as walk:
                for record in manifest.files:
                    if record.sha256_after is None and not record.deleted:
                        continue
                    now = _left(walk, self.root, record.path)
                    if now.get("sha256_after") and now != _left_as(record) and now != _before(record):
                        changed.append(record.path)
        except OSError:
            return []  # the restore says why the root cannot be used
        for notebook in manifest.notebooks or []:
            now_cells = sources(self.root, notebook)
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

    def _restore_cells(self, manifest: Manifest, cells: CellRestorer, result: UndoResult) -> None:
        for record in reversed(manifest.notebooks or []):
            try:
                where = cells(self.root, record)
            except CellsNotRestored as exc:
                result.refused.append((record.path, str(exc)))
            else:
                result.restored_cells.append((record.path, len(record.cells), where))

    def _remove_created_dirs(
        self, root_fd: int, manifest: Manifest, barrier: Barrier, result: UndoResult
    ) -> None:
        """Remove the directories the turn created, deepest first, each only if empty.

        A fresh walk re-opens every directory from the root, so a symlink swapped in since
        the files were restored is refused rather than followed through a cached fd.
        """
        created = {rel for record in manifest.files for rel in record.created_dirs or []}
        with DirWalk(root_fd) as walk:
            for rel in sorted(created, key=lambda rel: (-rel.count("/"), rel)):
                try:
                    if remove_empty_dir(walk, confine(self.root, rel), barrier):
                        result.removed_dirs.append(rel)
                except PathRefused as exc:
                    result.kept_dirs.append((rel, str(exc)))
                except OSError as exc:
                    result.kept_dirs.append((rel, f"could not be removed ({exc.strerror or exc})"))

    def _restore_record(
        self, walk: DirWalk, turn_fd: int, record: FileRecord, barrier: Barrier
    ) -> None:
        parts = confine(self.root, record.path)
        if not record.existed:
            restore_file(walk, parts, record, None, barrier)
            return
        _check_blob_record(record)
        try:
            blob_fd = os.open(record.blob or "", _READ, dir_fd=turn_fd)
        except FileNotFoundError:
            raise BlobMismatch(f"its snapshot blob {record.blob} is missing") from None
        try:
            restore_file(walk, parts, record, blob_fd, barrier)
        finally:
            os.close(blob_fd)


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


def _left(walk: DirWalk, root: Path, rel: str) -> dict[str, Any]:
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


def _session_root(session_id: str) -> Path:
    """The project root of the session's recorded working directory, for callers (a terminal,
    a restarted kernel) that know only the id."""
    from larik_jupyter.session.catalog import resolve, session_cwd

    try:
        return paths.project_root(session_cwd(resolve(session_id)))
    except LarikError as exc:
        raise CheckpointError(
            f"Cannot tell the project root of session {session_id} ({exc}); pass it as `root`."
        ) from None


def _read_blob(turn_dir: Path, record: FileRecord) -> bytes:
    _check_blob_record(record)
    fd = os.open(turn_dir / (record.blob or ""), _READ)
    try:
        return read_verified(fd, record.size or 0, record.sha256 or "")
    finally:
        os.close(fd)


def _check_blob_record(record: FileRecord) -> None:
    if not (
        record.blob and is_blob_name(record.blob) and record.size is not None and record.sha256
    ):
        raise BlobMismatch("its manifest record names no valid snapshot blob")


def _parse_time(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
