"""Cost of the bash tool's stat snapshot on a generated 10,000-file project.

The tree holds files that the `.gitignore` patterns match (a tenth of each directory's files
are `*.pyc` / `*.log`, plus `build/`, `dist/`, `.env` and an `*.egg-info/` directory), and the
bench checks that the snapshot leaves exactly those out, so the ignore matching is measured.
The floor is a bare recursive os.scandir walk that stats every file (no .gitignore, no
bounds), measured in the same run on the same tree; floor, snapshot and the bash tool's
before/after pair alternate round by round, figures are medians with their range. Run:

    .venv/bin/python bench/bench_snapshot.py [ROUNDS]
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from paired import alternate, banner, ratios, span, timed

from larik_jupyter.tools.files.snapshot import changes, take_snapshot

DIRS = 100
FILES_PER_DIR = 100
IGNORED_PER_DIR = 10  # 5 `*.pyc` and 5 `*.log` in each directory
GITIGNORE = "*.pyc\nbuild/\n*.log\n.env\ndist/\n*.egg-info/\n"


def make_tree(root: Path) -> int:
    """10,000 files in 100 directories of 100 (a tenth of them ignored), ignored `build/`,
    `dist/`, `.env` and `pkg0/demo.egg-info/`, and the .gitignore; returns how many files the
    snapshot must keep."""
    (root / ".gitignore").write_text(GITIGNORE)
    for d in range(DIRS):
        sub = root / f"pkg{d // 10}" / f"mod{d}"
        sub.mkdir(parents=True)
        for f in range(FILES_PER_DIR - IGNORED_PER_DIR):
            (sub / f"file{f}.py").write_text("x")
        for f in range(IGNORED_PER_DIR // 2):
            (sub / f"file{f}.pyc").write_text("x")
            (sub / f"run{f}.log").write_text("x")
    for ignored in ("build", "dist", "pkg0/demo.egg-info"):
        (root / ignored).mkdir()
        for f in range(50):
            (root / ignored / f"out{f}.txt").write_text("x")
    (root / ".env").write_text("SECRET=x")
    return DIRS * (FILES_PER_DIR - IGNORED_PER_DIR) + 1


def floor_walk(root: Path) -> int:
    """The floor: every file under root stat'ed through os.scandir, nothing else."""
    count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    banner()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        kept = make_tree(root)
        snap = take_snapshot(root)
        walked = floor_walk(root)
        names = [os.fspath(p) for p in snap.files]
        assert snap.complete and len(snap.files) == kept, (len(snap.files), kept)
        assert not any(n.endswith((".pyc", ".log", ".env")) or "build" in n or "egg-info" in n for n in names)
        # The first round (unrecorded) warms the dentry cache for every side.
        r = alternate(
            {
                "floor": lambda: timed(lambda: floor_walk(root)),
                "take_snapshot": lambda: timed(lambda: take_snapshot(root)),
                "bash": lambda: timed(lambda: changes(take_snapshot(root), take_snapshot(root))),
            },
            rounds,
        )
    print(f"files walked: {walked}, kept by the snapshot: {len(snap.files)}; {rounds} rounds, ms, median (min – max)")
    print(f"floor (os.scandir walk + stat):       {span(r['floor'], 1000, 1)}")
    print(f"take_snapshot (.gitignore, bounded):  {span(r['take_snapshot'], 1000, 1)}  ratio {span(ratios(r, 'take_snapshot', 'floor'), 1, 2, 'x')}")
    print(f"bash overhead (2 snapshots + diff):   {span(r['bash'], 1000, 1)}  ratio {span(ratios(r, 'bash', 'floor'), 1, 2, 'x')}")


if __name__ == "__main__":
    main()
