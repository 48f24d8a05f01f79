"""The per-session checkpoint store, the checkpoint layer's one public object: capture files
and cells before a turn changes them, list the saved turns, undo a turn.

The work lies in `capture` (the open turn), `turns` (the saved turns), `undo` (putting a
turn back) and `prune` (retention); this module holds the session's lock and its turn count.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from larik_jupyter import paths
from larik_jupyter.checkpoint.capture import TurnCapture, confined_notebook, confined_paths
from larik_jupyter.checkpoint.cells import (
    CellRestorer,
    CellSources,
    FileHolder,
    held_by_nobody,
    restore_in_file,
    sources_in_file,
)
from larik_jupyter.checkpoint.durable import locked_dir
from larik_jupyter.checkpoint.errors import CaptureError, CheckpointError, NothingToUndoError
from larik_jupyter.checkpoint.prune import PruneReport, prune
from larik_jupyter.checkpoint.safepath import PathRefused, confine
from larik_jupyter.checkpoint.sessiondir import clean_session, remove_in_background, retire_turn
from larik_jupyter.checkpoint.turns import (
    FileInfo,
    TurnInfo,
    last_saved,
    newest_with_changes,
    nothing_to_undo,
    original_bytes,
    saved_turns,
)
from larik_jupyter.checkpoint.undo import UndoResult, restore_turn
from larik_jupyter.errors import LarikError

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
        self._last = last_saved(self.directory)
        self._open: TurnCapture | None = None
        self._removals: list[threading.Thread] = []
        if self.directory.is_dir():
            with locked_dir(self.directory, wait=False) as fd:
                if fd is not None:
                    clean_session(self.directory)

    @property
    def last_turn(self) -> int:
        """The number of the newest turn opened (0: none yet)."""
        return self._last

    def begin_turn(self, prompt_number: int | None = None) -> int:
        """Open the next turn (at each user prompt, `prompt_number` being its 1-based number in
        the session) and return the turn's number."""
        return self._begin(prompt_number).turn

    def note_variables(self, variables: list[tuple[str, bool]]) -> None:
        """Record in the open turn's manifest the names of the kernel variables it changed
        (`existed`) or created; their values never reach the disk."""
        if not self.enabled:
            return
        with self._lock:
            if self._open is not None:
                self._open.note_variables(variables)

    def capture_cells(
        self,
        path: str | os.PathLike[str],
        order: list[str],
        cells: list[dict[str, Any]],
        created: Iterable[str] = (),
    ) -> list[str]:
        """Record, before the open notebook at `path` changes, the state of
        `cells` (nbformat cells with their ids) and that the cells `created` are new; `order`
        is the document's cell ids now. Only a cell's first change in a turn is kept (its
        state before the turn). Returns the ids recorded now (for `forget_cells`). Raises
        `CaptureError` to stop the change."""
        if not self.enabled:
            return []
        rel = confined_notebook(self.root, path)
        if rel is None:
            return []
        with self._lock:
            return self._current().capture_cells(rel, order, cells, created)

    def forget_cells(self, path: str | os.PathLike[str], cell_ids: Iterable[str]) -> None:
        """Drop the records `capture_cells` took of `cell_ids` for an edit that then did not
        land (the browser refused it), so undo leaves those cells alone and their next capture
        records them as they are then. Written before it returns, like a capture."""
        dropped = set(cell_ids)
        rel = self._recorded_notebook(path)
        if rel is None:
            return
        with self._lock:
            if self._open is not None:
                self._open.forget_cells(rel, dropped)

    def note_cells(self, path: str | os.PathLike[str], after: dict[str, str | None]) -> None:
        """Note what the turn left of cells already captured: each id's source now, or None
        when the turn deleted it (for the undo panel's diffs; undo does not need it). Kept in
        memory and written with the next manifest write or by `finish_turn`, so an edit waits
        for the disk once, before it lands."""
        rel = self._recorded_notebook(path)
        if rel is None:
            return
        with self._lock:
            if self._open is not None:
                self._open.note_cells(rel, after)

    def finish_turn(self) -> None:
        """At the end of a turn, record what it left: each captured file's SHA-256 now (or that
        it is gone), so undo can tell a later change by the user, and what `note_cells` noted
        since the last manifest write. A failure loses only that knowledge: undo then restores
        those files without asking, and the panel shows no diff of those cells."""
        with self._lock:
            if self._open is not None:
                self._open.finish()

    def capture(self, path: str | os.PathLike[str]) -> None:
        """Snapshot `path` before its first write in this turn; raises `CaptureError` to stop the write.

        Paths outside the root are not captured: undo never restores outside the project.
        """
        self.capture_paths([path])

    def capture_paths(self, paths_: Iterable[str | os.PathLike[str]]) -> None:
        """Snapshot several paths at once (a shell command's `checkpoint_paths`), all or none."""
        if not self.enabled:
            return
        wanted = confined_paths(self.root, paths_)
        with self._lock:
            self._current().capture(wanted)

    def turns(self) -> list[TurnInfo]:
        """The saved turns that changed files, oldest first."""
        return saved_turns(self.directory)

    def original_bytes(self, turn: int, path: str | os.PathLike[str]) -> bytes | None:
        """A file's bytes before `turn` (None when it did not exist), e.g. to diff against now."""
        return original_bytes(self.directory, self.session_id, self.root, turn, path)

    def undo(
        self,
        cells: CellRestorer = restore_in_file,
        sources: CellSources = sources_in_file,
        *,
        force: bool = False,
        skip_changed: bool = False,
        passing: Collection[int] = (),
        holder: FileHolder = held_by_nobody,
    ) -> UndoResult:
        """Restore the newest turn that changed files and drop its snapshot; turns numbered in
        `passing` are left as they are (those with nothing left to put back, `agent.undo_list`).

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
                raise nothing_to_undo(self.session_id)
            with locked_dir(self.directory) as session_fd:
                assert session_fd is not None
                clean_session(self.directory)
                turn, turn_dir, manifest = newest_with_changes(self.directory, self.session_id, passing)
                result = restore_turn(
                    self.root, turn_dir, manifest, cells, sources, force=force, skip_changed=skip_changed, holder=holder
                )
                if result.ok:
                    self._removals.append(
                        remove_in_background(self.directory / retire_turn(session_fd, turn))
                    )
                    if self._open is not None and turn == self._open.turn:
                        self._open.forget()
                return result

    def settle(self) -> None:
        """Wait until the snapshots dropped by earlier undos are gone from the disk.

        Nothing needs this for correctness (a dropped snapshot is already committed as
        dropped); it is for callers that list the checkpoint directory right after an undo."""
        removals, self._removals = self._removals, []
        for worker in removals:
            worker.join()

    def _begin(self, prompt_number: int | None) -> TurnCapture:
        with self._lock:
            self._last = max(self._last, last_saved(self.directory)) + 1
            self._open = TurnCapture(self.session_id, self.root, self.directory, self._last, prompt_number)
            return self._open

    def _current(self) -> TurnCapture:
        """The open turn; one begins when none is (a capture outside any prompt)."""
        return self._open if self._open is not None else self._begin(None)

    def _recorded_notebook(self, path: str | os.PathLike[str]) -> str | None:
        """`path` relative to the root as its cells' record names it; None when this store
        records nothing or the path is refused (then it was never captured)."""
        if not self.enabled:
            return None
        try:
            return "/".join(confine(self.root, path))
        except PathRefused:
            return None


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
