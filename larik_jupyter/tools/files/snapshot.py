"""A cheap stat snapshot of project files, to see what a shell command changed behind our back."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from larik_jupyter.tools.files.ignore import walk_files

MAX_FILES = 20_000
MAX_SECONDS = 2.0

Stat = tuple[int, int, int]  # size, mtime_ns, inode


@dataclass
class Snapshot:
    """`(size, mtime_ns, inode)` per file path relative to the root; `complete` is False when cut."""

    files: dict[str, Stat] = field(default_factory=dict)
    complete: bool = True


def take_snapshot(
    root: Path, *, max_files: int = MAX_FILES, max_seconds: float = MAX_SECONDS
) -> Snapshot:
    """Stat the project's files (git-ignored and heavy directories skipped), within the bounds."""
    snap = Snapshot()
    deadline = time.monotonic() + max_seconds
    for rel, entry in walk_files(root, root):
        if len(snap.files) >= max_files or (
            len(snap.files) % 256 == 0 and time.monotonic() > deadline
        ):
            snap.complete = False
            break
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        snap.files[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return snap


def changes(before: Snapshot, after: Snapshot) -> list[tuple[str, str]]:
    """`(path, "created" | "changed" | "deleted")` between two snapshots, sorted by path.

    When either snapshot was cut short only files seen in both are compared, since a
    missing path may just lie past the cut.
    """
    complete = before.complete and after.complete
    found = [
        (p, "changed") for p, s in after.files.items() if p in before.files and before.files[p] != s
    ]
    if complete:
        found += [(p, "created") for p in after.files.keys() - before.files.keys()]
        found += [(p, "deleted") for p in before.files.keys() - after.files.keys()]
    return sorted(found)
